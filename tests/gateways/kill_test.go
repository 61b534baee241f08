package gateways

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestKillGateway: a gateway child process is killed with kill -9 while
// clients write items and create keys (audited) through it; through
// another gateway, every acknowledged write and key is in the engine,
// every acknowledged key has its audit record, and the chain verifies.
func TestKillGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills a tenantdb process")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 1, harness.Options{})
	gws := f.Gateways
	a := gws[0]
	ctx := context.Background()
	createTable(t, a, "load")
	key := a.NewTenant(t, "loaded", "app")
	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	within(t, "the table on the new gateway", func() bool {
		return errCode(put(ctx, victim.Client(key), "load", "probe")) != "ResourceNotFoundException"
	})

	var (
		mu      sync.Mutex
		items   []string
		keys    []string
		stop    atomic.Bool
		wg      sync.WaitGroup
		written atomic.Int64
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := victim.Client(key)
			for i := 0; !stop.Load(); i++ {
				pk := fmt.Sprintf("w%d-%d", w, i)
				if put(ctx, c, "load", pk) == nil {
					mu.Lock()
					items = append(items, pk)
					mu.Unlock()
					written.Add(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			k, err := victim.Admin().CreateKey(ctx, key.TenantID, client.CreateKeyRequest{Role: "read"})
			if err == nil {
				mu.Lock()
				keys = append(keys, k.KeyID)
				mu.Unlock()
			}
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for written.Load() < 200 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	victim.Kill(t) // kill -9, mid-load
	stop.Store(true)
	wg.Wait()
	if len(items) == 0 || len(keys) == 0 {
		t.Fatalf("nothing acknowledged before the kill (%d items, %d keys)", len(items), len(keys))
	}
	t.Logf("acknowledged before kill -9: %d items, %d keys", len(items), len(keys))

	c := a.Client(key)
	for _, pk := range items {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("load"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item == nil {
			t.Fatalf("acknowledged item %s lost: %v", pk, err)
		}
	}
	stored, err := a.Admin().Keys(ctx, key.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, k := range stored {
		have[k.KeyID] = true
	}
	for _, id := range keys {
		if !have[id] {
			t.Fatalf("acknowledged key %s lost", id)
		}
	}
	v, err := a.Admin().VerifyAudit(ctx, key.TenantID)
	if err != nil || !v.OK {
		t.Fatalf("audit chain after kill -9: %+v, %v", v, err)
	}
	audited := map[string]bool{}
	for after := uint64(0); ; {
		page, err := a.Admin().Audit(ctx, key.TenantID, client.AuditQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if r.Action == "key.create" {
				audited[r.Target] = true
			}
			after = r.Seq
		}
		if len(page.Records) < 1000 {
			break
		}
	}
	for _, id := range keys {
		found := false
		for target := range audited {
			if target == id || len(target) >= len(id) && target[len(target)-len(id):] == id {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("acknowledged key %s has no key.create audit record", id)
		}
	}
}
