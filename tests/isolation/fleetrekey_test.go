package isolation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestGatewaysTenantRotateKey: on a fleet, a tenant key rotation (which
// re-seals the tenant's audit log in the engine) is the operator's alone
// and touches only its tenant: tenant B's admin key, through either
// gateway, neither rotates nor reads A's key state or audit, nor rotates
// its own, nor the fleet's server key; A's rotation changes nothing of
// B's.
func TestGatewaysTenantRotateKey(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	g1, g2 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	a := g1.NewTenant(t, "rk-victim", "admin")
	b := g2.NewTenant(t, "rk-attacker", "admin")
	refused := func(what string, err error) {
		t.Helper()
		var ae *client.Error
		if !errors.As(err, &ae) || (ae.Status != 403 && ae.Status != 404) {
			t.Errorf("%s: %v, want 403 or 404", what, err)
		}
	}
	before, err := g1.Admin().Encryption(ctx, a.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*harness.Server{g1, g2} {
		bc := &client.Client{Endpoint: g.Endpoint, Key: b.Key}
		_, err := bc.RotateTenantKey(ctx, a.TenantID)
		refused("B's admin rotates A's key", err)
		_, err = bc.Encryption(ctx, a.TenantID)
		refused("B's admin reads A's key state", err)
		_, err = bc.Audit(ctx, a.TenantID, client.AuditQuery{})
		refused("B's admin reads A's audit", err)
		_, err = bc.RotateTenantKey(ctx, b.TenantID)
		refused("B's admin rotates its own key (the operator's to do)", err)
		ac := &client.Client{Endpoint: g.Endpoint, Key: a.Key}
		_, err = ac.RotateTenantKey(ctx, b.TenantID)
		refused("A's admin rotates B's key", err)
		_, err = bc.RotateServerKey(ctx)
		refused("B's admin rotates the fleet's server key", err)
		_, err = bc.ServerKey(ctx)
		refused("B's admin reads the fleet's server key state", err)
	}
	after, err := g2.Admin().Encryption(ctx, a.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version || after.Rotation != nil {
		t.Fatalf("A's key after B's attempts: %+v, before %+v", after, before)
	}

	bBefore := auditOf(t, g1, b.TenantID)
	if _, err := g1.Admin().RotateTenantKey(ctx, a.TenantID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		enc, err := g2.Admin().Encryption(ctx, a.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		if enc.Rotation == nil && enc.Version == before.Version+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's rotation did not finish: %+v", enc)
		}
		time.Sleep(100 * time.Millisecond)
	}
	benc, err := g2.Admin().Encryption(ctx, b.TenantID)
	if err != nil || benc.Version != 1 || benc.Rotation != nil {
		t.Fatalf("B's key after A's rotation: %+v, %v", benc, err)
	}
	bAfter := auditOf(t, g2, b.TenantID)
	for _, r := range bAfter[len(bBefore):] {
		if strings.HasPrefix(r.Action, "tenant.rotate-key") || strings.Contains(r.Target, a.TenantID) {
			t.Errorf("B's log got a record of A's rotation: %+v", r)
		}
	}
}

func auditOf(t *testing.T, g *harness.Server, tenant string) []client.AuditRecord {
	t.Helper()
	page, err := g.Admin().Audit(context.Background(), tenant, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return page.Records
}
