package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// feedTable is a table with a change feed as a gateway sees them: a Scan
// that is no snapshot (writes land between its pages) and positions that
// are indexes into the changes.
type feedTable struct {
	mu      sync.Mutex
	items   map[string]attr.Item
	log     []changelog.Entry
	onPage  func() // called before each Scan page, without mu
	scanned int
}

func newFeedTable() *feedTable { return &feedTable{items: map[string]attr.Item{}} }

func (f *feedTable) write(pk string, it attr.Item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.items[pk]
	e := changelog.Entry{Record: changelog.Record{Time: time.Now(), Keys: attr.Item{"pk": attr.Str(pk)}, Old: old, New: it}}
	switch {
	case it == nil && old == nil:
		return
	case it == nil:
		e.Event = changelog.Remove
		delete(f.items, pk)
	case old == nil:
		e.Event = changelog.Insert
		f.items[pk] = it
	default:
		e.Event = changelog.Modify
		f.items[pk] = it
	}
	f.log = append(f.log, e)
}

// random makes one random change of one of keys items.
func (f *feedTable) random(r *rand.Rand, keys, groups int) {
	pk := fmt.Sprintf("k%04d", r.IntN(keys))
	if r.IntN(4) == 0 {
		f.write(pk, nil)
		return
	}
	n, _ := attr.ParseNumber(fmt.Sprintf("%d.%d", r.IntN(100), r.IntN(10)))
	f.write(pk, attr.Item{"pk": attr.Str(pk), "grp": attr.Str(fmt.Sprint("g", r.IntN(groups))), "amt": attr.Num(n)})
}

// recount counts the table's items now.
func (f *feedTable) recount(t *testing.T, c *compiled) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	fo := newFold(c, "", func(string) (*groupState, error) { return nil, nil })
	for _, it := range f.items {
		if err := fo.change(nil, it); err != nil {
			t.Fatal(err)
		}
	}
	return figures(fo.touched)
}

func figures(gs map[string]*groupState) map[string]string {
	out := map[string]string{}
	for k, g := range gs {
		if g.empty() {
			continue
		}
		s := "0"
		if d := g.Sums["amt"]; d != nil {
			s = d.String()
		}
		out[groupText(k)] = fmt.Sprintf("%d/%s", g.Count, s)
	}
	return out
}

func (f *feedTable) Retain(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	return nil
}

func (f *feedTable) Follow(ctx context.Context, s tenancy.Scope, table, from string, limit int) ([]changelog.Entry, string, bool, func(int) string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, _ := strconv.Atoi(from)
	j := min(len(f.log), i+limit)
	es := append([]changelog.Entry(nil), f.log[i:j]...)
	return es, strconv.Itoa(j), j == len(f.log), func(k int) string { return strconv.Itoa(i + k + 1) }, nil
}

func (f *feedTable) Wait(ctx context.Context, s tenancy.Scope, table, from string) error {
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
	}
	return nil
}

// Start returns the position of the first change at or after t.
func (f *feedTable) Start(ctx context.Context, s tenancy.Scope, table string, t time.Time) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := sort.Search(len(f.log), func(i int) bool { return !f.log[i].Time.Before(t) })
	return strconv.Itoa(i), nil
}

// Scan returns 3 items a page in key order, writes landing between pages.
func (f *feedTable) Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error) {
	if f.onPage != nil {
		f.onPage()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.items))
	for k := range f.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	after := ""
	if in.ExclusiveStartKey != nil {
		after = in.ExclusiveStartKey["pk"].S
	}
	out := &wire.ScanOutput{}
	for _, k := range keys {
		if k <= after {
			continue
		}
		if len(out.Items) == 3 {
			out.LastEvaluatedKey = attr.Item{"pk": attr.Str(out.Items[2]["pk"].S)}
			break
		}
		out.Items = append(out.Items, f.items[k])
	}
	f.scanned++
	return out, nil
}

func (f *feedTable) DescribeTable(ctx context.Context, s tenancy.Scope, in *wire.DescribeTableInput) (*wire.DescribeTableOutput, error) {
	return &wire.DescribeTableOutput{Table: &wire.TableDescription{KeySchema: []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}}}}, nil
}

// countingKV is a kv.Local that records the largest batch applied.
type countingKV struct {
	*kv.Local
	mu      sync.Mutex
	largest int
	commits int
}

func (c *countingKV) Apply(ctx context.Context, b *kv.Batch) error {
	c.mu.Lock()
	c.largest = max(c.largest, len(b.Ops))
	c.commits++
	c.mu.Unlock()
	return c.Local.Apply(ctx, b)
}

func openGatewayService(t *testing.T, st KV, f *feedTable, holder string) *Service {
	t.Helper()
	s, err := New(Options{KV: st, Feed: f, Items: f, Holder: holder, Lease: 300 * time.Millisecond, Settle: 30 * time.Millisecond,
		PageSize: 1000, Scope: func(tenancy.TenantID, string) tenancy.Scope { return testScope() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitFigures waits until the aggregate shows what want returns (a
// recount, taken again each time: the build's scan may still write).
func waitFigures(t *testing.T, s *Service, want func() map[string]string) Info {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var in Info
	var err error
	for time.Now().Before(deadline) {
		in, err = s.Show(context.Background(), testScope(), "a")
		if err == nil && in.State == stateReady && fmt.Sprint(groupFigures(in)) == fmt.Sprint(want()) {
			return in
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("shown %v (state %s, error %q, err %v), want %v", groupFigures(in), in.State, in.Error, err, want())
	return in
}

func groupFigures(in Info) map[string]string {
	out := map[string]string{}
	for g, x := range in.Groups {
		var n int64
		if x.Count != nil {
			n = *x.Count
		}
		out[g] = fmt.Sprintf("%d/%s", n, x.Sum["amt"])
	}
	return out
}

var gatewayDef = Definition{Name: "a", Table: "t", GroupBy: "grp", Count: true, Sum: []string{"amt"}}

// TestGatewayBuildUnderWrites: a gateway's build scans a table while
// writes land between the scan's pages (and before it, within the feed's
// start); the aggregate equals a recount, for many seeds. Without the
// build's rule (fold an item's changes only from the one whose old image
// contributes what the scan saw) it does not.
func TestGatewayBuildUnderWrites(t *testing.T) {
	c, err := gatewayDef.compile()
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			db, err := storage.Open("", storage.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			f := newFeedTable()
			r := rand.New(rand.NewPCG(seed, 1))
			for range 200 {
				f.random(r, 40, 5)
			}
			var rmu sync.Mutex
			f.onPage = func() {
				rmu.Lock()
				defer rmu.Unlock()
				for range r.IntN(6) {
					f.random(r, 40, 5)
				}
			}
			s := openGatewayService(t, kv.NewLocal(db), f, "gw1")
			if _, err := s.Create(context.Background(), testScope(), gatewayDef); err != nil {
				t.Fatal(err)
			}
			waitFigures(t, s, func() map[string]string { return f.recount(t, c) })
			// Then followed.
			rmu.Lock()
			for range 100 {
				f.random(r, 40, 5)
			}
			rmu.Unlock()
			waitFigures(t, s, func() map[string]string { return f.recount(t, c) })
		})
	}
}

// TestGatewayCommitsAtMost100Items: a page of changes touching 300
// groups is committed in several transactions of at most 100 items (99
// groups and the progress), and the build too.
func TestGatewayCommitsAtMost100Items(t *testing.T) {
	c, _ := gatewayDef.compile()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := newFeedTable()
	r := rand.New(rand.NewPCG(9, 9))
	for range 500 {
		f.random(r, 400, 300)
	}
	st := &countingKV{Local: kv.NewLocal(db)}
	s := openGatewayService(t, st, f, "gw1")
	if _, err := s.Create(context.Background(), testScope(), gatewayDef); err != nil {
		t.Fatal(err)
	}
	waitFigures(t, s, func() map[string]string { return f.recount(t, c) })
	f.mu.Lock()
	n0 := len(f.log)
	f.mu.Unlock()
	for range 1000 {
		f.random(r, 400, 300)
	}
	f.mu.Lock()
	n1 := len(f.log)
	f.mu.Unlock()
	in := waitFigures(t, s, func() map[string]string { return f.recount(t, c) })
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.largest > 100 {
		t.Errorf("a batch of %d operations: the engine takes 100 per transaction", st.largest)
	}
	if in.Applied < uint64(n1-n0) {
		t.Errorf("applied %d, want the %d changes after the build", in.Applied, n1-n0)
	}
}

// TestGatewayLeaseOneWorker: two gateways run a worker for one aggregate;
// one holds the lease and the other does not fold; when the holder stops
// the other takes over from the stored cursor, and the totals stay equal
// to a recount (nothing folded twice or lost).
func TestGatewayLeaseOneWorker(t *testing.T) {
	c, _ := gatewayDef.compile()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := newFeedTable()
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		f.random(r, 30, 4)
	}
	st := kv.NewLocal(db)
	s1 := openGatewayService(t, st, f, "gw1")
	if _, err := s1.Create(context.Background(), testScope(), gatewayDef); err != nil {
		t.Fatal(err)
	}
	s2 := openGatewayService(t, st, f, "gw2")
	waitFigures(t, s2, func() map[string]string { return f.recount(t, c) })
	for i := range 300 {
		f.random(r, 30, 4)
		if i == 150 {
			s1.Close() // gives the lease up; gw2 takes it
		}
		time.Sleep(time.Millisecond)
	}
	in := waitFigures(t, s2, func() map[string]string { return f.recount(t, c) })
	_, _, ns := namespace(testScope())
	if w := s2.gw.worker(ns, "a"); w == nil || !w.holding() {
		t.Errorf("gw2 does not hold the lease after gw1 stopped")
	}
	if in.Rebuilds != 1 {
		t.Errorf("%d builds, want 1 (the takeover goes on from the cursor)", in.Rebuilds)
	}
}

// TestGatewayRebuildsAfterTrim: an aggregate whose cursor nobody read for
// longer than the engine stream keeps changes is rebuilt, saying why,
// not followed across the gap.
func TestGatewayRebuildsAfterTrim(t *testing.T) {
	c, _ := gatewayDef.compile()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := newFeedTable()
	r := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		f.random(r, 20, 3)
	}
	st := kv.NewLocal(db)
	s1 := openGatewayService(t, st, f, "gw1")
	if _, err := s1.Create(context.Background(), testScope(), gatewayDef); err != nil {
		t.Fatal(err)
	}
	waitFigures(t, s1, func() map[string]string { return f.recount(t, c) })
	s1.Close()
	// Nobody read it for a day (and the feed lost what came meanwhile).
	_, _, ns := namespace(testScope())
	key := keyspace.AggregateProgress(ns, "a")
	raw, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var p progress
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	p.Seen, p.Holder, p.Expires = time.Now().Add(-25*time.Hour), "", time.Time{}
	var b kv.Batch
	b.Set(key, p.marshal())
	if err := st.Apply(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.items["lost"] = attr.Item{"pk": attr.Str("lost"), "grp": attr.Str("g9"), "amt": attr.Num(attr.MustNumber("1"))}
	f.mu.Unlock()
	s2 := openGatewayService(t, st, f, "gw2")
	in := waitFigures(t, s2, func() map[string]string { return f.recount(t, c) })
	if in.Rebuilds != 2 {
		t.Errorf("%d builds, want 2 (rebuilt after the gap)", in.Rebuilds)
	}
}
