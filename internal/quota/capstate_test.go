package quota

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestBucketsSurviveCrash: a tenant that spent its burst credit does not
// get it back by a restart, even one without Close (the periodic
// checkpoint); another tenant is untouched by it; the checkpoint lives in
// the tenant's own range and is deleted once the buckets are full again.
func TestBucketsSurviveCrash(t *testing.T) {
	db := memDB(t)
	c := &clock{t: t0}
	opts := Options{DB: db, Now: c.now, FlushInterval: 5 * time.Millisecond,
		Default: Limits{ReadUnits: 1, WriteUnits: 1, BurstSeconds: 300}}
	m1 := newManager(t, opts)
	a, b := tid(1), tid(2)
	put := &wire.PutItemInput{TableName: "t"}
	if err := do(t, m1, a, "PutItem", put, wire.Usage{WriteUnits: 300, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := do(t, m1, a, "PutItem", put, wire.Usage{WriteUnits: 1, Table: "t"}); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("burst credit spent, yet: %v", err)
	}
	key := keyspace.Capacity(a)
	if lo, hi := keyspace.TenantRange(a); bytes.Compare(key, lo) < 0 || bytes.Compare(key, hi) >= 0 {
		t.Fatalf("checkpoint key %q outside the tenant's range", key)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := db.Get(key); err == nil {
			break
		} else if !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint of the buckets was written")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// "Restart" without Close: a second manager on the same store.
	c.add(10 * time.Second)
	m2 := newManager(t, opts)
	if err := do(t, m2, a, "PutItem", put, wire.Usage{WriteUnits: 10, Table: "t"}); err != nil {
		t.Fatalf("10 s of refill should admit one write: %v", err)
	}
	if err := do(t, m2, a, "PutItem", put, wire.Usage{WriteUnits: 1, Table: "t"}); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("after a restart the tenant had its burst credit back: %v", err)
	}
	// The other tenant has its whole burst credit.
	for range 2 {
		if err := do(t, m2, b, "PutItem", put, wire.Usage{WriteUnits: 100, Table: "t"}); err != nil {
			t.Fatalf("other tenant: %v", err)
		}
	}

	// Refilled completely, the tenant's checkpoint goes away.
	c.add(400 * time.Second)
	if err := m2.saveBuckets(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("checkpoint of full buckets still stored: %v", err)
	}
}

// TestForgetStopsCheckpoints: once a tenant being deleted is forgotten,
// no checkpoint of its buckets lands in its range (which the deletion
// clears next), even for a debit that was pending.
func TestForgetStopsCheckpoints(t *testing.T) {
	db, _, m := checkpointManager(t)
	a := tid(1)
	put := &wire.PutItemInput{TableName: "t"}
	if err := do(t, m, a, "PutItem", put, wire.Usage{WriteUnits: 50, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := m.saveBuckets(); err != nil {
		t.Fatal(err)
	}
	if err := do(t, m, a, "PutItem", put, wire.Usage{WriteUnits: 50, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	m.Forget(a)
	if err := db.DeleteRange(keyspace.TenantRange(a)); err != nil { // the tenant's range goes
		t.Fatal(err)
	}
	if err := m.saveBuckets(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(keyspace.Capacity(a)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a forgotten tenant's buckets were checkpointed into its deleted range: %v", err)
	}
}

// TestQuotaChangeRewritesCheckpoint: a quota change is checkpointed even
// without a debit after it, so a restart does not refill the buckets at
// the new rate since the last debit (less than they hold when the rate
// was lowered: a checkpoint more restrictive than the truth).
func TestQuotaChangeRewritesCheckpoint(t *testing.T) {
	db := memDB(t)
	c := &clock{t: t0}
	opts := Options{DB: db, Now: c.now, FlushInterval: time.Hour,
		Default: Limits{ReadUnits: 100, WriteUnits: 100, BurstSeconds: 300}}
	m1 := newManager(t, opts)
	a := tid(1)
	put := &wire.PutItemInput{TableName: "t"}
	if err := do(t, m1, a, "PutItem", put, wire.Usage{WriteUnits: 30000, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := m1.saveBuckets(); err != nil {
		t.Fatal(err)
	}
	c.add(100 * time.Second) // refilled to 10000 of 30000
	if _, err := m1.SetQuota(context.Background(), sys(a), "", Update{WriteUnits: f64(50)}); err != nil {
		t.Fatal(err)
	}
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, opts)
	q, err := m2.GetQuota(context.Background(), sys(a), "")
	if err != nil {
		t.Fatal(err)
	}
	if q.WriteUnits != 50 || q.Available == nil || q.Available.WriteUnits != 10000 {
		t.Fatalf("after restart quota = %+v available %+v, want 10000 write units available", q, q.Available)
	}
}

// TestRememberStartsFresh: a request racing a tenant's deletion (after
// Forget, before the range is deleted) loads the deleted tenant's buckets
// again; a tenant created later with the same id does not inherit them,
// nor get them checkpointed into its new range.
func TestRememberStartsFresh(t *testing.T) {
	db, _, m := checkpointManager(t)
	a := tid(1)
	put := &wire.PutItemInput{TableName: "t"}
	if err := do(t, m, a, "PutItem", put, wire.Usage{WriteUnits: 300, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := m.saveBuckets(); err != nil {
		t.Fatal(err)
	}
	m.Forget(a)
	// A request of the tenant being deleted, still admitted.
	if err := do(t, m, a, "PutItem", put, wire.Usage{}); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("racing request: %v", err)
	}
	if err := db.DeleteRange(keyspace.TenantRange(a)); err != nil {
		t.Fatal(err)
	}
	m.Remember(a) // the id is created again
	q, err := m.GetQuota(context.Background(), sys(a), "")
	if err != nil {
		t.Fatal(err)
	}
	if q.Available == nil || q.Available.WriteUnits != 300 {
		t.Fatalf("the new tenant inherited the deleted one's buckets: available %+v", q.Available)
	}
	if err := m.saveBuckets(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(keyspace.Capacity(a)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the deleted tenant's buckets were checkpointed into the new tenant's range: %v", err)
	}
}

// checkpointManager returns a manager on a fresh store with a manual clock,
// 1 unit/s read and write with 300 s of burst, and no background
// checkpoints (the tests call saveBuckets).
func checkpointManager(t *testing.T) (*storage.DB, *clock, *Manager) {
	db := memDB(t)
	c := &clock{t: t0}
	m := newManager(t, Options{DB: db, Now: c.now, FlushInterval: time.Hour,
		Default: Limits{ReadUnits: 1, WriteUnits: 1, BurstSeconds: 300}})
	return db, c, m
}

// TestForgetStopsUsageFlush: usage a tenant being deleted records (a
// request in flight during the deletion) is not flushed into its deleted
// range.
func TestForgetStopsUsageFlush(t *testing.T) {
	db, _, m := checkpointManager(t)
	a := tid(1)
	if err := do(t, m, a, "PutItem", &wire.PutItemInput{TableName: "t"}, wire.Usage{WriteUnits: 1, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	m.Forget(a)
	lo, hi := keyspace.TenantRange(a)
	if err := db.DeleteRange(lo, hi); err != nil { // the tenant's range goes
		t.Fatal(err)
	}
	// A request admitted before the deletion ends after it.
	if err := do(t, m, a, "GetItem", &wire.GetItemInput{TableName: "t"}, wire.Usage{ReadUnits: 1, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	it := db.NewIter(lo, hi)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		t.Errorf("key %q written into the deleted tenant's range", it.Key())
	}
}
