package webhook

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// heldReceiver is a receiver whose deliveries from the second on wait,
// once hold is set, until release is closed: held receives when one
// does.
func heldReceiver(t *testing.T) (rc *receiver, hold *atomic.Bool, held, release chan struct{}) {
	rc = newReceiver(t)
	hold = new(atomic.Bool)
	held, release = make(chan struct{}, 1), make(chan struct{})
	rc.respond = func(int64) int {
		if hold.CompareAndSwap(true, false) {
			held <- struct{}{}
			<-release
		}
		return 200
	}
	return rc, hold, held, release
}

func wait(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen within 10 s", what)
	}
}

func tenantKeys(t *testing.T, db *storage.DB, tenant tenancy.TenantID) int {
	t.Helper()
	lo, hi := keyspace.TenantRange(tenant)
	it := db.NewIter(lo, hi)
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

// TestNoWriteIntoDeletedRange: a worker whose delivery was in flight when
// its tenant's range was deleted writes no cursor or attempt into the
// range when the delivery succeeds, and stops.
func TestNoWriteIntoDeletedRange(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	rc, hold, held, release := heldReceiver(t)
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "orders")
	v, err := f.m.Create(ctx, adminScope(t, tenant, "live"), CreateInput{Table: "orders", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "1"))
	rc.waitRecords(1)

	hold.Store(true)
	f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "2"))
	wait(t, held, "the second delivery")
	lo, hi := keyspace.TenantRange(tenant)
	b := f.db.NewBatch()
	b.DeleteRange(lo, hi)
	if err := f.db.Apply(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	close(release)
	rc.waitRecords(2)
	deadline := time.Now().Add(5 * time.Second)
	for f.m.worker(tenant, v.ID) != nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := tenantKeys(t, f.db, tenant); n != 0 {
		t.Errorf("%d keys in the deleted tenant's range after its subscription's worker went on", n)
	}
	if f.m.worker(tenant, v.ID) != nil {
		t.Error("the worker of a subscription whose range was deleted did not stop")
	}
}

// TestRetireTenantFencesWorkers: a delivery acknowledged after
// RetireTenant returned moves no cursor (the tenant's range may be
// deleted at once); UnretireTenant starts the worker again, which
// delivers that batch again (at least once).
func TestRetireTenantFencesWorkers(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	rc, hold, held, release := heldReceiver(t)
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "orders")
	v, err := f.m.Create(ctx, adminScope(t, tenant, "live"), CreateInput{Table: "orders", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "1"))
	rc.waitRecords(1)
	var pos position
	for deadline := time.Now().Add(10 * time.Second); pos.cursor().Seq != 1; time.Sleep(time.Millisecond) {
		if pos, err = f.m.st.position(tenant, v.ID); err != nil || time.Now().After(deadline) {
			t.Fatalf("the first delivery's cursor: %+v, %v", pos, err)
		}
	}

	hold.Store(true)
	f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "2"))
	wait(t, held, "the second delivery")
	f.m.RetireTenant(tenant)
	if f.m.worker(tenant, v.ID) != nil {
		t.Error("a retired tenant's worker is still registered")
	}
	close(release)
	got := rc.waitRecords(2)
	time.Sleep(50 * time.Millisecond) // the retired worker's write, if it made one
	if now, err := f.m.st.position(tenant, v.ID); err != nil || now != pos {
		t.Fatalf("a retired tenant's worker moved its cursor: %+v (%v), before %+v", now, err, pos)
	}

	f.m.UnretireTenant(tenant)
	got = rc.waitRecords(3)
	if got[1].EventID != got[2].EventID {
		t.Errorf("after unretiring, delivered %s, want %s again (its cursor did not move)", got[2].EventID, got[1].EventID)
	}
}
