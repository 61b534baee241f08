package gateways

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
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

// platformPK is the engine collection of the platform's control records.
var platformPK = "ctl#74" + strings.Repeat("00", 16)

// engineItemsOf scans the whole engine table with the engine's key and
// returns a description of every item that names tenant id: in a key (its
// hex id in a string, its 16 bytes in a binary) or in any attribute.
func engineItemsOf(t *testing.T, eng *dynamodb.Client, table, id string) []string {
	t.Helper()
	raw, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	names := func(v types.AttributeValue) bool {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			return strings.Contains(v.Value, id)
		case *types.AttributeValueMemberB:
			return bytes.Contains(v.Value, raw) || bytes.Contains(v.Value, []byte(id))
		case *types.AttributeValueMemberSS:
			for _, s := range v.Value {
				if strings.Contains(s, id) {
					return true
				}
			}
		}
		return false
	}
	var found []string
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := eng.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			// The platform's audit log records the tenant's deletion (the
			// operator's own log, which names it by design).
			if pk, ok := it["tenantdb:pk"].(*types.AttributeValueMemberS); ok && pk.Value == platformPK {
				continue
			}
			for name, v := range it {
				if names(v) {
					found = append(found, fmt.Sprintf("pk %v sk %v (%s)", it["tenantdb:pk"], it["tenantdb:sk"], name))
					break
				}
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return found
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// TestDeletedTenantLeavesNothing: a tenant with a quota (so capacity
// buckets in the engine), data, keys and a console session, deleted
// through A while B keeps serving its requests until it sees the
// deletion: afterwards no item of the engine's table names the tenant —
// not its records, data, collections' registry entries, nor the buckets B
// leased from after the deletion began.
func TestDeletedTenantLeavesNothing(t *testing.T) {
	t.Parallel()
	// NB: with admission control on, so that the gateways lease capacity.
	c := harness.StartCluster(t, 2, harness.Options{Fairness: true})
	gws := c.Gateways
	a, b := gws[0], gws[1]
	eng, table := c.Engine.Client(c.EngineKey), "gw-tenantdb"
	ctx := context.Background()
	createTable(t, a, "swept")
	key := a.NewTenant(t, "swept", "admin")
	units := 1000.0
	if _, err := a.Admin().SetQuota(ctx, key.TenantID, "", client.QuotaUpdate{WriteUnits: &units, ReadUnits: &units}); err != nil {
		t.Fatal(err)
	}
	within(t, "the table on B", func() bool {
		return errCode(put(ctx, b.Client(key), "swept", "p0")) != "ResourceNotFoundException"
	})
	for i := range 10 {
		for _, g := range gws {
			if err := put(ctx, g.Client(key), "swept", fmt.Sprint("p", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	br := &browser{t: t, cookies: map[string]string{}}
	br.do(a, "GET", "/console/signin", nil)
	br.post(a, "/console/signin", map[string][]string{"key": {key.Key}})
	var caps int
	for _, s := range engineItemsOf(t, eng, table, key.TenantID) {
		if strings.Contains(s, "meta#cap#") {
			caps++
		}
	}
	if caps == 0 {
		t.Fatal("no capacity bucket of the tenant in the engine before its deletion: the test checks nothing")
	}

	// B keeps serving the tenant's writes (each leasing capacity) while A
	// deletes it: those B admitted before it saw the deletion are fenced
	// (internal/remote/DESIGN.md, "Fencing").
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			_ = put(ctx, b.Client(key), "swept", fmt.Sprint("w", i))
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := a.Admin().DeleteTenant(ctx, key.TenantID); err != nil {
		t.Fatal(err)
	}
	within(t, "the deleted tenant's key refused by B", func() bool {
		_, err := b.Client(key).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("swept"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "p0"}}})
		code := errCode(err)
		return code == "UnrecognizedClientException" || code == "TenantSuspendedException"
	})
	time.Sleep(bound)
	stop.Store(true)
	wg.Wait()
	time.Sleep(bound) // usage flushes of B
	if left := engineItemsOf(t, eng, table, key.TenantID); len(left) != 0 {
		t.Fatalf("%d items of the deleted tenant are still in the engine:\n%s", len(left), strings.Join(left, "\n"))
	}
}
