package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// newFleetManager returns a Manager of a fleet (Lease) named holder over
// the shared store st and log l.
func newFleetManager(t *testing.T, st KV, l *fakeLog, holder string) *Manager {
	t.Helper()
	m, err := New(Options{KV: st, Log: l, SecretKey: make([]byte, 32), AllowPrivate: true, Lease: 2 * time.Second,
		Holder: holder, Rescan: 100 * time.Millisecond, BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestLostLeaseAdvancesNothing: a fleet's worker whose lease another
// gateway took over while its delivery was in flight (it stalled past
// the expiry) writes nothing after the 2xx — its write is conditioned on
// the position it read — and stops delivering; the new holder delivers
// the batch again (at least once) and moves the position.
func TestLostLeaseAdvancesNothing(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := kv.NewLocal(db)
	l := newFakeLog()
	rc, hold, held, release := heldReceiver(t)
	tenant := tenancy.NewTenantID()
	l.addTable(tenant, "live", "orders")
	m1 := newFleetManager(t, st, l, "g1")
	v, err := m1.Create(ctx, adminScope(t, tenant, "live"), CreateInput{Table: "orders", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	hold.Store(true)
	l.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "1"))
	wait(t, held, "g1's delivery")
	pos, err := m1.st.position(tenant, v.ID)
	if err != nil || pos.Holder != "g1" {
		t.Fatalf("position while g1 delivers: %+v %v", pos, err)
	}
	// g1 stalls; its lease expires and g2 takes the subscription over.
	taken := pos
	taken.Holder, taken.Expires = "g2", time.Now().Add(time.Hour)
	pv, _ := json.Marshal(taken)
	var b kv.Batch
	b.Set(keyspace.WebhookCursor(tenant, v.ID), pv)
	if err := st.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}
	close(release) // g1's delivery is acknowledged now
	rc.waitRecords(1)
	time.Sleep(100 * time.Millisecond)
	if now, err := m1.st.position(tenant, v.ID); err != nil || now.Holder != "g2" || now.Cursor != taken.Cursor {
		t.Fatalf("g1 wrote the position after losing its lease: %+v (%v), want %+v", now, err, taken)
	}
	// g2 starts (it finds the subscription in the registry) and delivers
	// the batch again.
	m2 := newFleetManager(t, st, l, "g2")
	got := rc.waitRecords(2)
	if got[0].EventID != got[1].EventID {
		t.Errorf("g2 delivered %s, want %s again", got[1].EventID, got[0].EventID)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		now, err := m2.st.position(tenant, v.ID)
		if err == nil && now.Holder == "g2" && now.Cursor != taken.Cursor {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("g2 did not move the position: %+v %v", now, err)
		}
	}
	l.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "2"))
	if got := rc.waitRecords(3); len(got) > 3 {
		t.Errorf("%d records: g1 delivered again after losing the lease", len(got))
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(rc.records()); n != 3 {
		t.Errorf("%d records, want 3 (only the holder delivers)", n)
	}
}

// TestCloseEndsLease: a fleet Manager that closes ends the leases it
// holds (an expiry of now), so another gateway need not wait them out.
func TestCloseEndsLease(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := kv.NewLocal(db)
	l := newFakeLog()
	rc := newReceiver(t)
	tenant := tenancy.NewTenantID()
	l.addTable(tenant, "live", "orders")
	m1 := newFleetManager(t, st, l, "g1")
	v, err := m1.Create(ctx, adminScope(t, tenant, "live"), CreateInput{Table: "orders", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	l.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "1"))
	rc.waitRecords(1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p, err := m1.st.position(tenant, v.ID); err == nil && p.Holder == "g1" && time.Until(p.Expires) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("g1 holds no lease")
		}
	}
	m1.Close()
	p, err := m1.st.position(tenant, v.ID)
	if err != nil || time.Until(p.Expires) > 0 {
		t.Fatalf("after g1 closed its position is %+v (%v): the lease still runs", p, err)
	}
	m2 := newFleetManager(t, st, l, "g2")
	l.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "2"))
	rc.waitRecords(2)
	if p, err := m2.st.position(tenant, v.ID); err != nil || p.Holder != "g2" {
		t.Errorf("position after g2 delivered: %+v %v", p, err)
	}
}
