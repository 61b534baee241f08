package gateways

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// waitRotated polls the tenant's encryption through s until no rotation
// is in progress and the version is want.
func waitRotated(t *testing.T, s *harness.Server, tenant string, want uint32, within time.Duration) client.Encryption {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		enc, err := s.Admin().Encryption(context.Background(), tenant)
		if err != nil {
			t.Fatalf("encryption of %s: %v", tenant, err)
		}
		if enc.Rotation == nil && enc.Version == want {
			return enc
		}
		if time.Now().After(deadline) {
			t.Fatalf("rotation to version %d not finished after %v: %+v", want, within, enc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// storedVersions reads, in the engine, how many data key versions the
// tenant's key record holds.
func storedVersions(t *testing.T, f *harness.Cluster, tenant string) int {
	t.Helper()
	id, err := tenancy.ParseTenantID(tenant)
	if err != nil {
		t.Fatal(err)
	}
	k := append(keyspace.System(keyspace.SysTenantKeys), id[:]...)
	out, err := f.EngineClient(t).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.EngineTable()),
		ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"tenantdb:pk": &types.AttributeValueMemberS{Value: "ctl#" + hex.EncodeToString(keyspace.Partition(k))},
			"tenantdb:sk": &types.AttributeValueMemberB{Value: k}}})
	if err != nil || out.Item == nil {
		t.Fatalf("the tenant's key record in the engine: %v, %v", out, err)
	}
	var rec struct {
		Versions []json.RawMessage `json:"versions"`
	}
	if err := json.Unmarshal(out.Item["v"].(*types.AttributeValueMemberB).Value[1:], &rec); err != nil {
		t.Fatal(err)
	}
	return len(rec.Versions)
}

// auditActions returns the actions of the tenant's audit log, read
// through s, after checking the chain.
func auditActions(t *testing.T, s *harness.Server, tenant string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	var after uint64
	for {
		page, err := s.Admin().Audit(ctx, tenant, client.AuditQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatalf("audit of %s through %s: %v", tenant, s.Endpoint, err)
		}
		for _, r := range page.Records {
			out = append(out, r.Action)
			after = r.Seq
		}
		if len(page.Records) < 1000 {
			break
		}
	}
	v, err := s.Admin().VerifyAudit(ctx, tenant)
	if err != nil || !v.OK {
		t.Fatalf("audit chain of %s through %s: %+v, %v", tenant, s.Endpoint, v, err)
	}
	return out
}

// TestTenantRotateKeyOnGateways: on a fleet, what a tenant's data key
// seals is its audit log in the engine. A rotation started through one
// gateway while keys are created (audited) through both ends with every
// record readable through both, the chain intact, the start and the end
// in the log, and one key version left in the engine.
func TestTenantRotateKeyOnGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{})
	g1, g2 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	a := g1.NewTenant(t, "rotating", "admin")
	for range 5 {
		g2.NewKey(t, a.TenantID, "app")
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	var created atomic.Int64
	for i, g := range []*harness.Server{g1, g2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client.Client{Endpoint: g.Endpoint, Key: a.Key} // the tenant's own admin key
			for n := 0; !stop.Load(); n++ {
				_, err := c.CreateKey(ctx, a.TenantID, client.CreateKeyRequest{Role: "read"})
				if err == nil {
					_, err = c.Audit(ctx, a.TenantID, client.AuditQuery{Limit: 1000})
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("gateway %d: %w", i+1, err))
					mu.Unlock()
					return
				}
				created.Add(1)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	enc, err := g1.Admin().RotateTenantKey(ctx, a.TenantID)
	if err != nil {
		t.Fatalf("rotate-key through a gateway: %v", err)
	}
	if enc.Version != 2 || enc.Rotation == nil || enc.Rotation.To != 2 {
		t.Fatalf("rotate-key answered %+v, want version 2 current with a rotation in progress", enc)
	}
	waitRotated(t, g2, a.TenantID, 2, 30*time.Second)
	time.Sleep(1500 * time.Millisecond) // appends after the end, under the new version only
	stop.Store(true)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("%d keys created and audit reads during and after the rotation", created.Load())
	if created.Load() == 0 {
		t.Fatal("no key was created during the rotation")
	}
	if n := storedVersions(t, f, a.TenantID); n != 1 {
		t.Errorf("the tenant's key record holds %d versions after the rotation, want 1 (the old one destroyed)", n)
	}
	for _, g := range []*harness.Server{g1, g2} {
		acts := auditActions(t, g, a.TenantID)
		var start, done int
		for _, act := range acts {
			switch act {
			case "tenant.rotate-key":
				start++
			case "tenant.rotate-key.done":
				done++
			}
		}
		if start != 1 || done != 1 {
			t.Errorf("through %s: the log has %d starts and %d ends of the rotation, want 1 and 1", g.Endpoint, start, done)
		}
	}
	// A second rotation finishes too.
	if _, err := g2.Admin().RotateTenantKey(ctx, a.TenantID); err != nil {
		t.Fatal(err)
	}
	waitRotated(t, g1, a.TenantID, 3, 30*time.Second)
	auditActions(t, g1, a.TenantID)
}

// TestTenantRotateKeyTakenOver: the gateway that started a rotation
// stops before re-sealing anything; another gateway takes the rotation
// over once the first one's claim has lapsed, and finishes it.
func TestTenantRotateKeyTakenOver(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 1, harness.Options{})
	g1 := f.Gateways[0]
	ctx := context.Background()
	a := g1.NewTenant(t, "orphaned", "admin")
	g3, stop3, err := f.StartGatewayOwn(t, t.TempDir(), f.ServerKey, harness.GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g3.Admin().RotateTenantKey(ctx, a.TenantID); err != nil {
		t.Fatal(err)
	}
	stop3() // before its settle ends: nothing re-sealed yet
	enc, err := g1.Admin().Encryption(ctx, a.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if enc.Rotation == nil {
		t.Fatalf("the rotation ended although its gateway stopped first: %+v", enc)
	}
	g2, _, err := f.StartGatewayOwn(t, t.TempDir(), f.ServerKey, harness.GatewayOptions{JobSweep: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitRotated(t, g2, a.TenantID, 2, 30*time.Second)
	t.Logf("taken over and finished after %v", time.Since(start).Round(time.Millisecond))
	if n := storedVersions(t, f, a.TenantID); n != 1 {
		t.Errorf("%d versions stored after the rotation, want 1", n)
	}
	auditActions(t, g1, a.TenantID)
}
