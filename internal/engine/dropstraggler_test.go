package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// A request admitted before its tenant's deletion (it holds a Scope of the
// tenant) must not write into the tenant's range, nor re-create its silo
// store, once DropTenant has run: the catalog deletes the range right after,
// and a later write would be left behind for good.
func TestDropTenantRefusesStragglers(t *testing.T) {
	e, siloDir := siloTestEngine(t)
	db := e.db
	ctx := context.Background()

	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	createShared(t, e, "pool_t", "pk:S", "", nil)
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	put := tenantScope(t, a, "PutItem")
	for _, tbl := range []string{"silo_t", "pool_t"} {
		putItems(t, e, put, tbl, attr.Item{"pk": sval("before")})
	}
	if err := e.DropTenant(ctx, tenancy.SystemScope(a, "test")); err != nil {
		t.Fatal(err)
	}
	// The catalog now deletes the tenant's range.
	lo, hi := keyspace.TenantRange(a)
	bt := db.NewBatch()
	bt.DeleteRange(lo, hi)
	if err := db.Apply(bt); err != nil {
		t.Fatal(err)
	}
	bt.Close()

	for _, tbl := range []string{"pool_t", "silo_t"} {
		_, err := e.PutItem(ctx, put, &wire.PutItemInput{TableName: tbl, Item: attr.Item{"pk": sval("after")}})
		if !apierr.Is(err, apierr.ResourceNotFound) {
			t.Errorf("PutItem into %s by a dropped tenant's request: %v, want ResourceNotFound", tbl, err)
		}
		_, err = e.TransactWriteItems(ctx, tenantScope(t, a, "TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
			{Put: &wire.TransactPut{TableName: tbl, Item: attr.Item{"pk": sval("tx")}}}}})
		if err == nil {
			t.Errorf("TransactWriteItems into %s by a dropped tenant's request succeeded", tbl)
		}
	}
	it := db.NewIter(lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		t.Errorf("key left in the dropped tenant's range: %q", it.Key())
	}
	it.Close()
	if _, err := os.Stat(filepath.Join(siloDir, a.String())); !os.IsNotExist(err) {
		t.Errorf("silo dir of the dropped tenant re-created (stat err %v)", err)
	}
	// Other tenants write as before.
	putItems(t, e, tenantScope(t, b, "PutItem"), "pool_t", attr.Item{"pk": sval("b")})
	putItems(t, e, tenantScope(t, b, "PutItem"), "silo_t", attr.Item{"pk": sval("b")})
}

// A tenant created again with a dropped tenant's id (ReviveTenant) writes
// normally.
func TestReviveTenant(t *testing.T) {
	e := openEnv(t).e
	createShared(t, e, "pool_t", "pk:S", "", nil)
	a := tenancy.NewTenantID()
	if err := e.DropTenant(context.Background(), tenancy.SystemScope(a, "test")); err != nil {
		t.Fatal(err)
	}
	_, err := e.PutItem(context.Background(), tenantScope(t, a, "PutItem"), &wire.PutItemInput{TableName: "pool_t", Item: attr.Item{"pk": sval("x")}})
	if !apierr.Is(err, apierr.ResourceNotFound) {
		t.Fatalf("PutItem of a dropped tenant: %v, want ResourceNotFound", err)
	}
	e.ReviveTenant(tenancy.SystemScope(a, "test"))
	putItems(t, e, tenantScope(t, a, "PutItem"), "pool_t", attr.Item{"pk": sval("x")})
}
