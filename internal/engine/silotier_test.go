package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// fakeTiers says which tenants are of the silo tier (the catalog does in
// the server).
type fakeTiers map[tenancy.TenantID]bool

func (f fakeTiers) SiloTier(_ context.Context, t tenancy.TenantID) (bool, error) { return f[t], nil }

// TestSiloTierPlacement: a silo-tier tenant's items of a shared namespace
// table live in its silo store from its first write, a pool tenant's in
// the main store; the background work that finds a table's data through
// the registry (GSI backfill, TTL expiry, DeleteTable's drop) finds the
// silo-tier tenant's in its store; Placement says where each lives.
func TestSiloTierPlacement(t *testing.T) {
	env := openEnv(t)
	env.e.Close()
	silo, pool := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	env.opts.Tiers = fakeTiers{silo.p.Tenant: true}
	env.e = env.open()
	op := env.operator()
	op.create(tableInput("Shared", false))
	_, err := env.e.UpdateTimeToLive(testCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Shared",
		TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	noErr(t, err)
	now := env.clock.Now().Unix()
	for _, a := range []testActor{silo, pool} {
		for i := range 10 {
			exp := now + 3600
			if i%2 == 0 {
				exp = now - 10
			}
			a.put("Shared", itemOf(t, fmt.Sprintf(`{"pk":{"S":"k%d"},"g":{"S":"G"},"exp":{"N":"%d"}}`, i, exp)))
		}
	}
	inMain := func(a testActor) bool {
		lo, hi := keyspaceNS(a)
		it := env.db.NewIter(lo, hi)
		defer it.Close()
		return it.First()
	}
	if inMain(silo) || !inMain(pool) {
		t.Fatalf("items in the main store: silo-tier tenant %v (want false), pool tenant %v (want true)", inMain(silo), inMain(pool))
	}
	ps, err := env.e.Placement(testCtx, silo.scope("GetItem"))
	noErr(t, err)
	if len(ps) != 1 || ps[0].Table != "Shared" || ps[0].Store != "silo" || !ps[0].HasData {
		t.Fatalf("Placement of the silo-tier tenant: %+v", ps)
	}
	ps, err = env.e.Placement(testCtx, pool.scope("GetItem"))
	noErr(t, err)
	if len(ps) != 1 || ps[0].Store != "pool" || !ps[0].HasData {
		t.Fatalf("Placement of the pool tenant: %+v", ps)
	}

	// A GSI added later is backfilled from the silo-tier tenant's store.
	_, err = env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Shared",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "g", AttributeType: "S"}},
		GlobalSecondaryIndexUpdates: []wire.GlobalSecondaryIndexUpdate{{Create: &wire.CreateGlobalSecondaryIndexAction{
			IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "ALL"}}}}})
	noErr(t, err)
	for deadline := time.Now().Add(20 * time.Second); op.describe("Shared").GlobalSecondaryIndexes[0].IndexStatus != "ACTIVE"; {
		if time.Now().After(deadline) {
			t.Fatal("index not ACTIVE")
		}
		time.Sleep(5 * time.Millisecond)
	}
	gsi := func(a testActor) int {
		items, _ := queryAll(t, env.e, a.scope("Query"), wire.QueryInput{TableName: "Shared", IndexName: strPtr("byG"),
			KeyConditionExpression: strPtr("g = :g"), ExpressionAttributeValues: exprVals(":g", sval("G"))})
		return len(items)
	}
	if s, p := gsi(silo), gsi(pool); s != 10 || p != 10 {
		t.Fatalf("GSI after the backfill: silo-tier tenant %d items, pool tenant %d; want 10, 10", s, p)
	}

	// TTL expiry finds the silo-tier tenant's items in its store.
	noErr(t, env.e.sweep())
	for _, a := range []testActor{silo, pool} {
		if n := a.describe("Shared").ItemCount; n != 5 {
			t.Fatalf("after the sweep: %d items, want 5", n)
		}
	}

	// DeleteTable removes the silo-tier tenant's data from its store.
	_, err = env.e.DeleteTable(testCtx, op.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Shared"})
	noErr(t, err)
	db, release, err := env.e.siloStoreOf(testCtx, silo.p.Tenant)
	noErr(t, err)
	defer release()
	ns := keyspace.Namespace(silo.p.Tenant, silo.p.Env)
	it := db.NewIter(keyspace.NamespaceRange(silo.p.Tenant, silo.p.Env))
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if k := it.Key(); !isCeiling(silo.p.Tenant, k) {
			t.Fatalf("the dropped table left %q in the silo-tier tenant's store (ns %q)", k, ns)
		}
	}
}
