package webhook

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TestSteadyWritesShareDeliveries: under a steady stream of commits a
// worker reads the log at most once per Window (it read and delivered
// once per commit: one POST and one cursor write each), and still
// delivers every record once, in order.
func TestSteadyWritesShareDeliveries(t *testing.T) {
	ctx := context.Background()
	const window = 20 * time.Millisecond
	f := newFixture(t, Options{AllowPrivate: true, Window: window})
	rc := newReceiver(t)
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "orders")
	v, err := f.m.Create(ctx, adminScope(t, tenant, "live"), CreateInput{Table: "orders", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "0"))
	rc.waitRecords(1)

	before, start := f.log.follows.Load(), time.Now()
	const writes = 300
	for i := 1; i <= writes; i++ {
		f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", fmt.Sprintf("%03d", i)))
		if i%2 == 1 {
			time.Sleep(time.Millisecond) // two commits a millisecond: well above Pacer's threshold on a slow machine too
		}
	}
	elapsed := time.Since(start)
	reads := f.log.follows.Load() - before
	got := rc.waitRecords(writes + 1)
	for i, r := range got {
		if sk := r.Dynamodb.NewImage["sk"].S; sk != fmt.Sprintf("%03d", i) && !(i == 0 && sk == "0") {
			t.Fatalf("record %d: sk %q (out of order or twice)", i, sk)
		}
	}
	if len(got) != writes+1 {
		t.Errorf("got %d records, want %d", len(got), writes+1)
	}
	// NB: once the window is open reads are at least a window apart, so
	// at most one per window that passed, plus the one under way when the
	// writes began; before it opens (changelog.Pacer: PaceRecords changes
	// within the horizon) a read per commit and the empty read after it.
	if limit := int64(elapsed/window) + 2 + 2*changelog.PaceRecords; reads > limit {
		t.Errorf("%d reads of the log for %d commits in %v; want at most %d (one per %v window once open)", reads, writes, elapsed, limit, window)
	}
}

// TestLightLoadReadsAtOnce: when changes are rare (below the rate at
// which changelog.Pacer opens the window) the worker reads each commit
// as it comes instead of waiting for the window: one read, and one
// delivery, per commit.
func TestLightLoadReadsAtOnce(t *testing.T) {
	ctx := context.Background()
	const window = 100 * time.Millisecond // opens at 40 changes a second
	f := newFixture(t, Options{AllowPrivate: true, Window: window})
	rc := newReceiver(t)
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "orders")
	v, err := f.m.Create(ctx, adminScope(t, tenant, "live"), CreateInput{Table: "orders", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "00"))
	rc.waitRecords(1)

	before, start := f.log.follows.Load(), time.Now()
	const writes = 15 // 25 a second
	for i := 1; i <= writes; i++ {
		f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", fmt.Sprintf("%02d", i)))
		time.Sleep(40 * time.Millisecond)
	}
	elapsed := time.Since(start)
	rc.waitRecords(writes + 1)
	reads := f.log.follows.Load() - before
	// NB: with the window open there would be at most one read per
	// window (elapsed/window + 2 ≈ 8); a slow machine may let a read
	// find two commits now and then, hence the quarter's slack.
	if windowed := int64(elapsed/window) + 2; reads < writes*3/4 || reads <= windowed {
		t.Errorf("%d reads of the log for %d commits in %v at light load; want one per commit (a window would allow %d)", reads, writes, elapsed, windowed)
	}
}

// TestRotationDuringARead: a secret rotated while the worker is reading
// the log, and a change committed after the rotation answered, found by
// that very read: the change is signed with the new secret (the worker
// notices the subscription changed before it acts on the page), so a
// receiver that trusts only the new secret from the answer on never
// rejects a delivery.
func TestRotationDuringARead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	rc := newReceiver(t)
	tenant := tenancy.NewTenantID()
	s := adminScope(t, tenant, "live")
	f.log.addTable(tenant, "live", "orders")
	v, err := f.m.Create(ctx, s, CreateInput{Table: "orders", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "1"))
	rc.waitRecords(1)

	var once sync.Once
	rotate := func() {
		once.Do(func() {
			r2, err := f.m.RotateSecret(ctx, s, v.ID, 0)
			if err != nil {
				t.Error(err)
				return
			}
			rc.mu.Lock()
			rc.secrets = []string{r2.Secret}
			rc.mu.Unlock()
			f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "2"))
		})
	}
	f.log.beforeFollow.Store(&rotate)
	f.log.put(tenant, "live", "orders", changelog.Modify, item("o", "1"), item("o", "1", "x", "y")) // wakes the worker
	got := rc.waitRecords(3)
	if rc.bad.Load() != 0 {
		t.Errorf("%d deliveries signed only with the rotated-out secret after the rotation answered", rc.bad.Load())
	}
	if got[2].Dynamodb.NewImage["sk"].S != "2" {
		t.Errorf("third record: %+v", got[2])
	}
}
