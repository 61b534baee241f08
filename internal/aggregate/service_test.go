package aggregate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// fakeLog is one table's change log and items, with changes that may be
// in flight: numbered but not yet committed, as the engine's are between
// allocating a sequence number and applying the batch. A follower never
// reads past the lowest change in flight; a snapshot holds exactly the
// committed changes.
type fakeLog struct {
	mu       sync.Mutex
	table    string
	seq      uint64
	entries  []*fakeEntry // by seq
	items    map[string]attr.Item
	retained map[string]bool
	wake     chan struct{}
	now      time.Time
	follows  atomic.Int64 // FollowLog calls
	// onPage, if set, is called (unlocked) before FollowLog returns a
	// page with entries.
	onPage func()
}

type fakeEntry struct {
	e         Entry
	committed bool
}

func newFakeLog(table string) *fakeLog {
	return &fakeLog{table: table, items: map[string]attr.Item{}, retained: map[string]bool{}, wake: make(chan struct{})}
}

func (l *fakeLog) check(table string) error {
	if table != l.table {
		return apierr.New(apierr.ResourceNotFound, "Requested resource not found")
	}
	return nil
}

func (l *fakeLog) RetainLog(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(table); err != nil {
		return err
	}
	l.retained[consumer] = true
	return nil
}

func (l *fakeLog) ReleaseLog(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.retained, consumer)
	return l.check(table)
}

func (l *fakeLog) FollowLog(ctx context.Context, s tenancy.Scope, table string, from Cursor, limit int) (FollowPage, error) {
	p, err := l.follow(table, from, limit)
	l.mu.Lock()
	hook := l.onPage
	l.mu.Unlock()
	if hook != nil && len(p.Entries) > 0 {
		hook()
	}
	return p, err
}

func (l *fakeLog) follow(table string, from Cursor, limit int) (FollowPage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(table); err != nil {
		return FollowPage{}, err
	}
	l.follows.Add(1)
	p := FollowPage{Next: from, CaughtUp: true}
	for _, fe := range l.entries {
		if !fe.committed {
			// As the engine's: not caught up while a change of the
			// namespace is being committed.
			p.CaughtUp = false
		}
		if fe.e.Seq <= from.Seq {
			continue
		}
		if !fe.committed {
			break
		}
		if len(p.Entries) == limit {
			p.CaughtUp = false
			break
		}
		p.Entries = append(p.Entries, fe.e)
		p.Next = fe.e.Next
	}
	return p, nil
}

func (l *fakeLog) WaitLog(ctx context.Context, s tenancy.Scope, table string, from Cursor) error {
	l.mu.Lock()
	w := l.wake
	l.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *fakeLog) SnapshotLog(ctx context.Context, s tenancy.Scope, table string, each func(attr.Item) error) (Cursor, []Cursor, error) {
	l.mu.Lock()
	items := make([]attr.Item, 0, len(l.items))
	for _, it := range l.items {
		items = append(items, it)
	}
	var at Cursor
	var included []Cursor
	inflight := false
	for _, fe := range l.entries {
		switch {
		case !fe.committed:
			inflight = true
		case inflight:
			included = append(included, fe.e.Next)
		default:
			at = fe.e.Next
		}
	}
	l.mu.Unlock()
	for _, it := range items {
		if err := each(it); err != nil {
			return Cursor{}, nil, err
		}
	}
	return at, included, nil
}

// begin numbers a change of item key (new nil: delete) without
// committing it; commit makes it visible.
func (l *fakeLog) begin(key string, new attr.Item, expired bool) *fakeEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	fe := &fakeEntry{e: Entry{Record: Record{Seq: l.seq, Keys: attr.Item{"pk": attr.Str(key)}, New: new, Expired: expired, Time: time.Now()}}}
	fe.e.Next = Cursor{Stream: 1, Seq: l.seq}
	l.entries = append(l.entries, fe)
	return fe
}

func (l *fakeLog) commit(fes ...*fakeEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fe := range fes {
		key := fe.e.Keys["pk"].S
		old := l.items[key]
		fe.e.Old = old
		switch {
		case fe.e.New == nil:
			fe.e.Event = Remove
			delete(l.items, key)
		case old == nil:
			fe.e.Event = Insert
			l.items[key] = fe.e.New
		default:
			fe.e.Event = Modify
			l.items[key] = fe.e.New
		}
		if fe.e.New == nil && old == nil {
			// A delete of a missing item records nothing.
			fe.e.Event = 0
		}
		fe.committed = true
	}
	l.entries = slices.DeleteFunc(l.entries, func(fe *fakeEntry) bool { return fe.committed && fe.e.Event == 0 })
	close(l.wake)
	l.wake = make(chan struct{})
}

func (l *fakeLog) put(key string, it attr.Item) { l.commit(l.begin(key, it, false)) }

// recount is the aggregate computed from scratch over the current items.
func (l *fakeLog) recount(t *testing.T, d Definition) map[string]Group {
	t.Helper()
	c, err := d.compile()
	if err != nil {
		t.Fatal(err)
	}
	f := newFold(c, tenant.String(), func(string) (*groupState, error) { return nil, nil })
	l.mu.Lock()
	for _, it := range l.items {
		if err := f.change(nil, it); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Unlock()
	return showGroups(&d, f.touched)
}

func showGroups(d *Definition, gs map[string]*groupState) map[string]Group {
	out := map[string]Group{}
	for k, g := range gs {
		if g.empty() {
			continue
		}
		n := g.Count
		gr := Group{Count: &n, Sum: map[string]string{}}
		for _, a := range d.Sum {
			v := "0"
			if s := g.Sums[a]; s != nil {
				v = s.String()
			}
			gr.Sum[a] = v
		}
		out[groupText(k)] = gr
	}
	return out
}

// fakeTables records materialised items.
type fakeTables struct {
	mu    sync.Mutex
	items map[string]attr.Item
}

func itemKeyText(k attr.Item) string { return k["pk"].S + "|" + k["sk"].S }

func (f *fakeTables) PutItem(ctx context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[itemKeyText(in.Item)] = in.Item
	return &wire.PutItemOutput{}, nil
}

func (f *fakeTables) DeleteItem(ctx context.Context, s tenancy.Scope, in *wire.DeleteItemInput) (*wire.DeleteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.items, itemKeyText(in.Key))
	return &wire.DeleteItemOutput{}, nil
}

var tenant = tenancy.TenantID{0xab, 0xcd}

func testScope() tenancy.Scope { return tenancy.SystemScope(tenant, "test") }

func openService(t *testing.T, db *storage.DB, l *fakeLog, tables Tables) *Service {
	t.Helper()
	return openServiceWith(t, Options{DB: db, Log: l, Tables: tables, PageSize: 7})
}

// openServiceWith starts a Service with o (its Scope set).
func openServiceWith(t *testing.T, o Options) *Service {
	t.Helper()
	o.Scope = func(tenancy.TenantID, string) tenancy.Scope { return testScope() }
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func memDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitFor polls show until cond holds, and returns the show after the
// one that saw it hold, if cond still holds there.
//
// NB: Show reads the progress (state, cursor, applied) and the groups in
// two reads, so one show can pair the groups of a batch with the
// progress from before it (applied 0 beside groups that fold 3
// changes). The progress the next show reads is at least as new as
// those groups, so once the worker is idle it matches them.
func waitFor(t *testing.T, s *Service, name string, cond func(Info) bool) Info {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	held := false
	for {
		in, err := s.Show(context.Background(), testScope(), name)
		if err != nil {
			t.Fatal(err)
		}
		if cond(in) {
			if held {
				return in
			}
			held = true
			continue
		}
		held = false
		if time.Now().After(deadline) {
			t.Fatalf("timed out; last: %+v", in)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func num(s string) attr.Value { return attr.Num(attr.MustNumber(s)) }

func ticket(status, cost string) attr.Item {
	return attr.Item{"status": attr.Str(status), "cost": num(cost)}
}

func sameGroups(a, b map[string]Group) bool {
	if len(a) != len(b) {
		return false
	}
	for k, g := range a {
		h, ok := b[k]
		if !ok || (g.Count == nil) != (h.Count == nil) || (g.Count != nil && *g.Count != *h.Count) || len(g.Sum) != len(h.Sum) {
			return false
		}
		for a, v := range g.Sum {
			if h.Sum[a] != v {
				return false
			}
		}
	}
	return true
}

func caughtUpTo(l *fakeLog, want map[string]Group) func(Info) bool {
	return func(in Info) bool { return in.State == stateReady && sameGroups(in.Groups, want) }
}

// TestServiceFollows: an aggregate is built from the existing items, then
// follows the log, and a rebuild with changes in flight around its
// snapshot counts each of them exactly once.
func TestServiceFollows(t *testing.T) {
	ctx := context.Background()
	db := memDB(t)
	l := newFakeLog("tickets")
	l.put("t1", ticket("OPEN", "1.5"))
	l.put("t2", ticket("OPEN", "2"))
	tables := &fakeTables{items: map[string]attr.Item{}}
	s := openService(t, db, l, tables)
	defer s.Close()
	d := Definition{Name: "by-status", Table: "tickets", GroupBy: "status", Count: true, Sum: []string{"cost"},
		Item: map[string]string{"pk": "AGG", "sk": "STATUS#{group}"}}
	if _, err := s.Create(ctx, testScope(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, testScope(), d); apierr.KindOf(err) != apierr.Conflict {
		t.Fatalf("second create: %v, want Conflict", err)
	}
	d2 := d
	d2.Name, d2.Table = "other", "nope"
	if _, err := s.Create(ctx, testScope(), d2); apierr.KindOf(err) != apierr.ResourceNotFound {
		t.Fatalf("create on a missing table: %v, want ResourceNotFound", err)
	}
	waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))

	l.put("t1", ticket("CLOSED", "1.5"))
	l.put("t3", ticket("OPEN", "0.25"))
	l.commit(l.begin("t2", nil, true)) // TTL expiry
	in := waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))
	if in.Groups["OPEN"].Sum["cost"] != "0.25" || *in.Groups["CLOSED"].Count != 1 {
		t.Fatalf("groups = %+v", in.Groups)
	}
	if in.Applied != 3 {
		t.Errorf("applied = %d, want 3", in.Applied)
	}

	// The materialised items follow, and their own changes (which the
	// real log records) are not counted: write one into the log.
	// NB: its keys are set before it is committed: a worker reads a
	// committed entry at once.
	agg := l.begin("AGG", attr.Item{"pk": attr.Str("AGG"), "sk": attr.Str("STATUS#OPEN"), "status": attr.Str("OPEN")}, false)
	l.mu.Lock()
	agg.e.Keys = attr.Item{"pk": attr.Str("AGG"), "sk": attr.Str("STATUS#OPEN")}
	l.mu.Unlock()
	l.commit(agg)
	l.mu.Lock()
	delete(l.items, "AGG")
	l.mu.Unlock()
	l.put("t4", ticket("OPEN", "1"))
	waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))
	deadline := time.Now().Add(5 * time.Second)
	for {
		tables.mu.Lock()
		open, closed := tables.items["AGG|STATUS#OPEN"], tables.items["AGG|STATUS#CLOSED"]
		tables.mu.Unlock()
		if open != nil && closed != nil && open["count"].N.String() == "2" && open["sum_cost"].N.String() == "1.25" && closed["count"].N.String() == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("materialised items: %v %v", open, closed)
		}
		time.Sleep(time.Millisecond)
	}

	// Rebuild with changes in flight: t5 (seq n) is numbered but not
	// committed while t6 (seq n+1) commits; the snapshot holds t6, not t5.
	t5 := l.begin("t5", ticket("OPEN", "10"), false)
	l.put("t6", ticket("CLOSED", "20"))
	if _, err := s.Rebuild(ctx, testScope(), d.Name); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, d.Name, func(in Info) bool { return in.Rebuilds == 2 && in.State == stateReady })
	l.commit(t5)
	l.put("t6", ticket("OPEN", "20"))
	waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))

	if err := s.Delete(ctx, testScope(), d.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Show(ctx, testScope(), d.Name); apierr.KindOf(err) != apierr.NotFound {
		t.Fatalf("show after delete: %v", err)
	}
	if l.retained[consumer(d.Name)] {
		t.Errorf("the log is still retained for the deleted aggregate")
	}
	if list, err := s.List(ctx, testScope()); err != nil || len(list) != 0 {
		t.Fatalf("list = %v, %v", list, err)
	}
}

// TestServiceRandom is the model test against the fake log: random puts,
// deletes, TTL expiries and transactions (several changes committed at
// once, in any order), restarts of the service between batches, a
// rebuild in the middle; the aggregate always ends equal to a recount.
func TestServiceRandom(t *testing.T) {
	ctx := context.Background()
	db := memDB(t)
	l := newFakeLog("tickets")
	d := Definition{Name: "m", Table: "tickets", GroupBy: "status", Count: true, Sum: []string{"cost"}, Where: "cost >= :z",
		Values: map[string]attr.Value{":z": num("-50")}}
	s := openService(t, db, l, nil)
	if _, err := s.Create(ctx, testScope(), d); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	statuses := []string{"OPEN", "CLOSED", "PENDING"}
	change := func() *fakeEntry {
		k := fmt.Sprintf("t%d", r.IntN(40))
		if r.IntN(5) == 0 {
			return l.begin(k, nil, r.IntN(2) == 0)
		}
		cost := fmt.Sprintf("%d.%02d", r.IntN(200)-100, r.IntN(100))
		return l.begin(k, ticket(statuses[r.IntN(3)], cost), false)
	}
	for i := 0; i < 2000; i++ {
		switch r.IntN(20) {
		case 0: // a transaction of up to 5 distinct items, committed in shuffled order
			var fes []*fakeEntry
			seen := map[string]bool{}
			for j := 0; j < 1+r.IntN(5); j++ {
				fe := change()
				if k := fe.e.Keys["pk"].S; seen[k] {
					l.commit(fe)
					continue
				} else {
					seen[k] = true
				}
				fes = append(fes, fe)
			}
			r.Shuffle(len(fes), func(a, b int) { fes[a], fes[b] = fes[b], fes[a] })
			l.commit(fes...)
		case 1:
			s.Close()
			s = openService(t, db, l, nil)
		case 2:
			if _, err := s.Rebuild(ctx, testScope(), d.Name); err != nil {
				t.Fatal(err)
			}
		default:
			l.commit(change())
		}
	}
	waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))
	s.Close()
}
