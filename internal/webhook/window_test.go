package webhook

import (
	"context"
	"fmt"
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
	const writes = 150
	for i := 1; i <= writes; i++ {
		f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("o", fmt.Sprintf("%03d", i)))
		time.Sleep(time.Millisecond)
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
	// NB: reads are at least a window apart, so at most one per window
	// that passed, plus the one under way when the writes began.
	if limit := int64(elapsed/window) + 2; reads > limit {
		t.Errorf("%d reads of the log for %d commits in %v; want at most %d (one per %v window)", reads, writes, elapsed, limit, window)
	}
}
