package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// countingKV counts the Scans of a KV.
type countingKV struct {
	KV
	scans atomic.Int64
}

func (c *countingKV) Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error {
	c.scans.Add(1)
	return c.KV.Scan(ctx, lo, hi, f)
}

func newLocal(t *testing.T) *kv.Local {
	t.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return kv.NewLocal(db)
}

// TestShowReadsTheDeadLetterCount: show (Get) reports a subscription's
// dead letters from its count, kept in the batch that adds or removes
// one, without reading the list; the count follows dead-lettering and
// redrive exactly.
func TestShowReadsTheDeadLetterCount(t *testing.T) {
	ctx := context.Background()
	st := &countingKV{KV: newLocal(t)}
	l := newFakeLog()
	m, err := New(Options{KV: st, Log: l, SecretKey: make([]byte, 32), AllowPrivate: true,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	rc := newReceiver(t)
	var ok atomic.Bool
	rc.respond = func(int64) int {
		if ok.Load() {
			return 200
		}
		return 400
	}
	tenant := tenancy.NewTenantID()
	l.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	v, err := m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	for i := range 3 {
		l.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", string(rune('1'+i))))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		dls, err := m.DeadLetters(ctx, s, v.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(dls) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters, want 3", len(dls))
		}
	}
	m.Pause(ctx, s, v.ID) // the worker reads nothing more
	before := st.scans.Load()
	got, err := m.Get(ctx, s, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.DeadLetters != 3 {
		t.Errorf("show: %d dead letters, want 3", got.DeadLetters)
	}
	if n := st.scans.Load() - before; n != 0 {
		t.Errorf("show scanned %d ranges; want none (the count is one read)", n)
	}
	ok.Store(true)
	m.Resume(ctx, s, v.ID)
	if _, err := m.RedriveDeadLetters(ctx, s, v.ID); err != nil {
		t.Fatal(err)
	}
	rc.waitRecords(3)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := m.Get(ctx, s, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		dls, _ := m.DeadLetters(ctx, s, v.ID, 0)
		if got.DeadLetters == 0 && len(dls) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the redrive: show says %d, the list holds %d; want 0", got.DeadLetters, len(dls))
		}
	}
}

// TestLegacyCounts: a tenant whose subscriptions and dead letters were
// stored before counts were kept gets them counted: a creation counts the
// subscriptions listed (the limit holds), and the worker counts the list
// once.
func TestLegacyCounts(t *testing.T) {
	ctx := context.Background()
	st := newLocal(t)
	l := newFakeLog()
	open := func() *Manager {
		m, err := New(Options{KV: st, Log: l, SecretKey: make([]byte, 32), AllowPrivate: true, MaxPerTenant: 2,
			BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	tenant := tenancy.NewTenantID()
	l.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	rc := newReceiver(t)
	// NB: a creation starts the subscription's worker, which reads the
	// counts at once; the store is made as before counts only once that
	// process is gone, and a new one opens it (as after an upgrade).
	first := open()
	v, err := first.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	m := open()
	// As stored before counts: no count records, two dead letters.
	var b kv.Batch
	b.Delete(keyspace.WebhookCount(tenant))
	b.Delete(keyspace.WebhookDeadCount(tenant, v.ID))
	b.Set(keyspace.WebhookDeadLetter(tenant, v.ID, 1), []byte(`{"n":1,"records":[]}`))
	b.Set(keyspace.WebhookDeadLetter(tenant, v.ID, 2), []byte(`{"n":2,"records":[]}`))
	if err := st.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Get(ctx, s, v.ID); err != nil || got.DeadLetters != 2 {
		t.Fatalf("show without a count: %d dead letters (%v), want 2", got.DeadLetters, err)
	}
	if _, err := m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL}); !apierr.Is(err, apierr.LimitExceeded) {
		t.Fatalf("a third subscription with a limit of 2: %v", err)
	}
	if err := m.Start(); err != nil { // the worker counts the list
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := st.Get(ctx, keyspace.WebhookDeadCount(tenant, v.ID))
		if err == nil && bytes.Equal(c, kv.EncodeCounter(2)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not count the list: %x %v", c, err)
		}
	}
	if err := m.Delete(ctx, s, v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL}); err != nil {
		t.Fatalf("after a deletion: %v", err)
	}
}

// TestDeletedTenantNotRewritten: tenant t's subscriptions are held by
// gateway g1; t is deleted through g1 (its workers retired, its range
// deleted) while g2's workers, which do not hold the leases, still hold
// what they read of the subscriptions: none of them writes anything of t
// again (taking a lease on a position that is gone needs the
// subscription), so nothing of t is left.
func TestDeletedTenantNotRewritten(t *testing.T) {
	ctx := context.Background()
	st := newLocal(t)
	l := newFakeLog()
	tenant := tenancy.NewTenantID()
	l.addTable(tenant, "live", "orders")
	rc := newReceiver(t)
	m1 := newFleetManager(t, st, l, "g1")
	var ids []string
	for range 6 {
		v, err := m1.Create(ctx, adminScope(t, tenant, "live"), CreateInput{Table: "orders", URL: rc.srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		rc.trust(v.Secret)
		ids = append(ids, v.ID)
	}
	l.put(tenant, "live", "orders", changelog.Insert, nil, item("o", "1"))
	rc.waitRecords(len(ids))
	m2 := newFleetManager(t, st, l, "g2")
	time.Sleep(300 * time.Millisecond) // g2's workers read the subscriptions and find them held
	for _, id := range ids {
		if p, err := m1.st.position(tenant, id); err != nil || p.Holder != "g1" {
			t.Fatalf("position of %s: %+v %v; want g1's", id, p, err)
		}
	}
	_ = m2
	m1.RetireTenant(tenant)
	lo, hi := keyspace.TenantRange(tenant)
	var b kv.Batch
	b.DeleteRange(lo, hi)
	if err := st.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(recheckEvery + time.Second) // g2's workers notice the subscriptions gone
	var left [][]byte
	if err := st.Scan(ctx, lo, hi, func(k, _ []byte) bool {
		left = append(left, append([]byte(nil), k...))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%d records of the deleted tenant were written after its deletion: %q", len(left), left)
	}
}

// TestLargeDeadLetterInParts: a dead letter larger than deadPartSize is
// stored in parts and read back whole; the letter numbers and count skip
// the parts, and dropping the letter drops its parts.
func TestLargeDeadLetterInParts(t *testing.T) {
	db := newLocal(t)
	st, err := newStore(db, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	tenant := tenancy.NewTenantID()
	big := json.RawMessage(`{"blob":"` + strings.Repeat("y", 700<<10) + `"}`)
	small := json.RawMessage(`{"n":1}`)
	x := st.begin(tenant)
	x.deadLetter("sub_1", DeadLetter{N: 1, Status: 400, Records: []json.RawMessage{small}})
	x.deadLetter("sub_1", DeadLetter{N: 2, Status: 400, Records: []json.RawMessage{big, small}})
	if err := x.commit(); err != nil {
		t.Fatal(err)
	}
	lo, hi := keyspace.WebhookDeadLetters(tenant, "sub_1")
	var keys int
	st.scan(lo, hi, func(k, v []byte) bool {
		keys++
		if len(v) > deadPartSize {
			t.Errorf("a record of %d bytes", len(v))
		}
		return true
	})
	if keys != 2+3 {
		t.Errorf("%d records, want 2 letters and 3 parts", keys)
	}
	dls, n, err := st.deadLetters(tenant, "sub_1", 10)
	if err != nil || n != 2 || len(dls) != 2 {
		t.Fatalf("read back: %d of %d (%v)", len(dls), n, err)
	}
	if len(dls[1].Records) != 2 || !bytes.Equal(dls[1].Records[0], big) || !bytes.Equal(dls[1].Records[1], small) || dls[1].N != 2 {
		t.Fatalf("the large letter read back differs: %d records", len(dls[1].Records))
	}
	if last, err := st.lastN(lo, hi); err != nil || last != 2 {
		t.Errorf("lastN %d %v, want 2", last, err)
	}
	if c, err := st.deadCount(tenant, "sub_1"); err != nil || c != 2 {
		t.Errorf("count %d %v, want 2", c, err)
	}
	x = st.begin(tenant)
	x.dropDeadLetter("sub_1", 2)
	if err := x.commit(); err != nil {
		t.Fatal(err)
	}
	keys = 0
	st.scan(lo, hi, func(k, v []byte) bool { keys++; return true })
	if keys != 1 {
		t.Errorf("%d records after dropping the large letter, want 1", keys)
	}
	if c, err := st.deadCount(tenant, "sub_1"); err != nil || c != 1 {
		t.Errorf("count %d %v, want 1", c, err)
	}
}
