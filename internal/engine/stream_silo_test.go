package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestStreamOfDeletedSiloTable: the records of a silo table live in each
// tenant's own store, from which they go when the table is deleted; its stream
// stays readable (each tenant its own records, through every Streams
// operation, LATEST included) until retention all the same, as any
// deleted table's, and is listed; after retention it is gone.
func TestStreamOfDeletedSiloTable(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	in := streamTable("Silo", "NEW_IMAGE")
	in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
	arn := op.create(in).LatestStreamArn
	mine := a.create(func() *wire.CreateTableInput {
		in := streamTable("MySilo", "KEYS_ONLY")
		in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
		return in
	}()).LatestStreamArn
	a.put("Silo", itemOf(t, `{"pk":{"S":"a1"},"v":{"S":"1"}}`))
	a.put("Silo", itemOf(t, `{"pk":{"S":"a2"},"v":{"S":"2"}}`))
	b.put("Silo", itemOf(t, `{"pk":{"S":"b1"},"v":{"S":"3"}}`))
	a.put("MySilo", itemOf(t, `{"pk":{"S":"m1"}}`))
	env.e.mu.RLock()
	silos := len(env.e.silos)
	env.e.mu.RUnlock()
	if silos != 2 {
		t.Fatalf("%d silo stores open, want 2 (one per tenant, A's holding both its silo tables)", silos)
	}
	_, err := env.e.DeleteTable(testCtx, op.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Silo"})
	noErr(t, err)
	_, err = env.e.DeleteTable(testCtx, a.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "MySilo"})
	noErr(t, err)
	// The tenants' stores stay (their other silo data would be there);
	// the deleted tables' items and records are gone from them.
	for _, who := range []testActor{a, b} {
		db, release, err := env.e.siloStoreOf(testCtx, who.p.Tenant)
		noErr(t, err)
		it := db.NewIter(keyspace.NamespaceRange(who.p.Tenant, who.p.Env))
		for ok := it.First(); ok; ok = it.Next() {
			if k := it.Key(); !isCeiling(who.p.Tenant, k) && !isChangeMeta(who.p.Tenant, k) {
				t.Errorf("the deleted silo tables left %q in a tenant's store", k)
			}
		}
		it.Close()
		release()
	}
	env.clock.Set(env.clock.Now().Add(time.Hour))
	env.e.trimChangeLog() // within retention: trims nothing

	for _, c := range []struct {
		who  testActor
		arn  string
		want string
	}{{a, arn, "INSERT a1,INSERT a2"}, {b, arn, "INSERT b1"}, {a, mine, "INSERT m1"}} {
		got, err := c.who.streamAPIRecords(c.arn)
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("records of a deleted silo table's stream: %v (%v), want %s", got, err, c.want)
		}
	}
	if _, err := b.streamAPIRecords(mine); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("B reads A's deleted silo table's stream: %v", err)
	}
	// LATEST is after the last record moved over: nothing to read there.
	d, err := env.e.DescribeStream(testCtx, a.scope("DescribeStream"), &wire.DescribeStreamInput{StreamArn: arn})
	noErr(t, err)
	sh := d.StreamDescription.Shards[len(d.StreamDescription.Shards)-1]
	it, err := env.e.GetShardIterator(testCtx, a.scope("GetShardIterator"), &wire.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: "LATEST"})
	noErr(t, err)
	r, err := env.e.GetRecords(testCtx, a.scope("GetRecords"), &wire.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil || len(r.Records) != 0 || r.NextShardIterator != nil {
		t.Errorf("GetRecords at LATEST of a deleted silo table's stream: %d records, next %v, %v", len(r.Records), r.NextShardIterator, err)
	}
	got, err := a.listStreams("")
	if err != nil || len(got) != 2 {
		t.Errorf("ListStreams after deleting silo tables: %v (%v)", got, err)
	}
	// After retention: gone.
	env.clock.Set(env.clock.Now().Add(24 * time.Hour))
	env.e.trimChangeLog()
	if _, err := a.streamAPIRecords(arn); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("a deleted silo table's stream after retention: %v", err)
	}
	if got, err := a.listStreams(""); err != nil || len(got) != 0 {
		t.Errorf("ListStreams after retention: %v (%v)", got, err)
	}
}

// isChangeMeta reports whether k is change-log metadata of one of
// tenant's namespaces (sequence ceiling, trim horizons), which outlives a
// table's records.
func isChangeMeta(tenant tenancy.TenantID, k []byte) bool {
	env, ok := keyspace.NamespaceOf(tenant, k)
	if !ok {
		return false
	}
	lo, hi := keyspace.ChangeMetaRange(keyspace.Namespace(tenant, env))
	return string(k) >= string(lo) && string(k) < string(hi)
}
