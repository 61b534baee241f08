package gateways

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestUnfinishedDeletionIsFinished: a gateway process killed with kill -9
// in the middle of a tenant's deletion leaves the tenant deleting; no one
// retries the DELETE, yet another gateway's sweeper finishes it: the
// tenant is gone, the engine holds nothing of it, and the platform's
// audit log says the server finished it.
func TestUnfinishedDeletionIsFinished(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills a tenantdb process")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 1, harness.Options{})
	a := f.Gateways[0]
	ctx := context.Background()
	createTable(t, a, "doomed")
	key := a.NewTenant(t, "doomed", "admin")
	for i := range 20 {
		if err := put(ctx, a.Client(key), "doomed", fmt.Sprint("d", i)); err != nil {
			t.Fatal(err)
		}
	}
	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	go func() { _, _ = victim.Admin().DeleteTenant(ctx, key.TenantID) }()
	within(t, "the tenant deleting", func() bool {
		tn, err := a.Admin().Tenant(ctx, key.TenantID)
		return err == nil && tn.Status == "deleting"
	})
	time.Sleep(2 * time.Second) // into the deletion of its items
	victim.Kill(t)
	time.Sleep(bound)
	tn, err := a.Admin().Tenant(ctx, key.TenantID)
	if err != nil || tn.Status != "deleting" {
		t.Fatalf("after the kill the tenant is %+v (%v), want it left deleting", tn, err)
	}

	f.StartGatewayWith(t, t.TempDir(), harness.GatewayOptions{DeletionSweep: 300 * time.Millisecond})
	start := time.Now()
	for {
		_, err := a.Admin().Tenant(ctx, key.TenantID)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status == 404 {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("the deletion left unfinished was never finished (tenant: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("finished by the sweeper after %v", time.Since(start).Round(time.Millisecond))
	time.Sleep(bound) // usage flushes of the gateways
	if left := engineItemsOf(t, f.EngineClient(t), f.EngineTable(), key.TenantID); len(left) != 0 {
		t.Fatalf("%d items of the deleted tenant are still in the engine:\n%s", len(left), strings.Join(left, "\n"))
	}
	page, err := a.Admin().Audit(ctx, "", client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range page.Records {
		if r.Action == "tenant.delete" && r.Actor == "system:tenant.delete" && r.Target == key.TenantID {
			found = true
		}
	}
	if !found {
		t.Errorf("the platform's audit log does not record the finished deletion")
	}
}
