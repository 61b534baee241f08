package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestDropTenantRemovesSilosAndRegistry(t *testing.T) {
	e, siloDir := siloTestEngine(t)

	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	createShared(t, e, "pool_t", "pk:S", "", nil)
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	for _, tn := range []tenancy.TenantID{a, b} {
		for _, tbl := range []string{"silo_t", "pool_t"} {
			putItems(t, e, tenantScope(t, tn, "PutItem"), tbl, attr.Item{"pk": sval("k1"), "v": sval(tn.String())})
		}
	}
	for _, tn := range []tenancy.TenantID{a, b} {
		if _, err := os.Stat(filepath.Join(siloDir, tn.String())); err != nil {
			t.Fatalf("silo dir of %s missing before drop: %v", tn, err)
		}
	}

	if err := e.DropTenant(context.Background(), tenancy.SystemScope(a, "test")); err != nil {
		t.Fatalf("DropTenant: %v", err)
	}
	if _, err := os.Stat(filepath.Join(siloDir, a.String())); !os.IsNotExist(err) {
		t.Errorf("silo dir of dropped tenant still there (stat err %v)", err)
	}
	pairs, err := e.registryPairs()
	if err != nil {
		t.Fatal(err)
	}
	sawB := false
	for _, p := range pairs {
		if bytes.HasPrefix(p.ns, keyspace.Tenant(a)) {
			t.Errorf("registry still lists dropped tenant's namespace for table %d", p.id)
		}
		if bytes.HasPrefix(p.ns, keyspace.Tenant(b)) {
			sawB = true
		}
	}
	if !sawB {
		t.Error("registry lost the other tenant's entries")
	}
	// The other tenant is untouched.
	for _, tbl := range []string{"silo_t", "pool_t"} {
		out, err := e.GetItem(context.Background(), tenantScope(t, b, "GetItem"), &wire.GetItemInput{TableName: tbl, Key: attr.Item{"pk": sval("k1")}})
		if err != nil {
			t.Fatalf("GetItem %s as other tenant: %v", tbl, err)
		}
		if got := out.Item["v"].S; got != b.String() {
			t.Errorf("%s: other tenant's item = %q, want %q", tbl, got, b.String())
		}
	}
	// Idempotent.
	if err := e.DropTenant(context.Background(), tenancy.SystemScope(a, "test")); err != nil {
		t.Errorf("second DropTenant: %v", err)
	}
}
