package changelog

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var secret = []byte("0123456789abcdef0123456789abcdef")

// testKeys is one in-memory keyring for every log of the tests, so that a
// log reopened on a store reads what the earlier one sealed.
var testKeys = func() *tenantkey.Keyring {
	kr, err := tenantkey.Open(tenantkey.Options{KEK: []byte(secret)})
	if err != nil {
		panic(err)
	}
	return kr
}()

func openDB(t testing.TB, dir string) *storage.DB {
	t.Helper()
	opts := storage.Options{InMemory: dir == "", Logger: slog.New(slog.DiscardHandler)}
	if dir == "" {
		dir = "mem"
	}
	db, err := storage.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func newLog(t *testing.T, db *storage.DB, c *clock, mod func(*Options)) *Log {
	t.Helper()
	o := Options{Secret: secret, Now: c.now, Rollover: time.Hour, Keys: testKeys}
	if mod != nil {
		mod(&o)
	}
	l, err := New(db, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func tenantNS(i byte, env string) []byte {
	var id tenancy.TenantID
	id[0], id[15] = 0x40, i
	return keyspace.Namespace(id, env)
}

func key(pk string) attr.Item { return attr.Item{"pk": attr.Str(pk)} }

func item(pk, v string) attr.Item { return attr.Item{"pk": attr.Str(pk), "v": attr.Str(v)} }

// commit appends changes as one batch and applies it.
func commit(t *testing.T, l *Log, db *storage.DB, ns []byte, s Stream, cs ...Change) {
	t.Helper()
	a := l.NewAppender()
	b := db.NewBatch()
	defer b.Close()
	for _, c := range cs {
		if err := a.Append(db, b, ns, s, c); err != nil {
			a.Done(false)
			t.Fatal(err)
		}
	}
	err := db.Apply(b)
	a.Done(err == nil)
	if err != nil {
		t.Fatal(err)
	}
}

// readAll reads shard k of s in ns from its trim horizon to the end.
func readAll(t *testing.T, l *Log, db *storage.DB, ns []byte, s Stream, k uint32) []Record {
	t.Helper()
	p, err := l.TrimHorizon(db, ns, s, k)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for {
		pg, err := l.Read(db, ns, s, p, 2, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pg.Records...)
		if len(pg.Records) == 0 {
			return out
		}
		p = pg.Next
	}
}

func events(rs []Record) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("%s %s;", r.Event, r.Keys["pk"].S)
	}
	return s
}

func TestRecordRoundTrip(t *testing.T) {
	c := Change{Keys: key("a"), Old: item("a", "1"), New: item("a", "2"), Expired: true}
	for _, capture := range []ViewType{KeysOnly, NewImage, OldImage, NewAndOldImage} {
		v, ev := encodeRecord(c, capture, 1234)
		r, err := decodeRecord(v)
		if err != nil {
			t.Fatal(err)
		}
		if ev != Modify || r.Event != Modify || !r.Expired || r.Time.UnixMilli() != 1234 {
			t.Errorf("%s: got %v %v %v", capture, r.Event, r.Expired, r.Time)
		}
		if got, want := r.Old != nil, capture.WantsOld(); got != want {
			t.Errorf("%s: old image stored %v, want %v", capture, got, want)
		}
		if got, want := r.New != nil, capture.WantsNew(); got != want {
			t.Errorf("%s: new image stored %v, want %v", capture, got, want)
		}
		if !attr.EqualItems(r.Keys, c.Keys) {
			t.Errorf("%s: keys %v", capture, r.Keys)
		}
		for i := range v {
			if _, err := decodeRecord(v[:i]); err == nil {
				t.Errorf("%s: truncated record of %d bytes decoded", capture, i)
			}
		}
	}
	full, _ := encodeRecord(c, NewAndOldImage, 1)
	r, _ := decodeRecord(full)
	for _, view := range []ViewType{KeysOnly, NewImage, OldImage, NewAndOldImage} {
		p := r.Project(view)
		if (p.Old != nil) != view.WantsOld() || (p.New != nil) != view.WantsNew() {
			t.Errorf("Project(%s) = old %v new %v", view, p.Old, p.New)
		}
		want := attr.ItemSize(p.Keys) + attr.ItemSize(p.Old) + attr.ItemSize(p.New)
		if p.SizeBytes() != want {
			t.Errorf("SizeBytes(%s) = %d, want %d", view, p.SizeBytes(), want)
		}
	}
	if eventOf(Change{New: item("a", "1")}) != Insert || eventOf(Change{Old: item("a", "1")}) != Remove ||
		eventOf(Change{Existed: true}) != Remove || eventOf(Change{Existed: true, New: item("a", "1")}) != Modify {
		t.Error("eventOf")
	}
	for v, n := range viewNames {
		if got, ok := ParseViewType(n); !ok || got != v {
			t.Errorf("ParseViewType(%q) = %v %v", n, got, ok)
		}
	}
}

// TestRecordFromEncodedImages: a change given with its images already
// encoded (as the engine passes them) stores the same record as one given
// with decoded items, for every capture and event; a large image (long
// length prefix) included.
func TestRecordFromEncodedImages(t *testing.T) {
	big := item("a", strings.Repeat("x", 300_000))
	for _, c := range []Change{
		{Keys: key("a"), Old: item("a", "1"), New: item("a", "2")},
		{Keys: key("a"), New: item("a", "2")},
		{Keys: key("a"), Old: item("a", "1"), Expired: true},
		{Keys: key("a"), Old: big, New: item("a", "2")},
		{Keys: key("a"), Existed: true, Old: item("a", "1"), New: big},
	} {
		enc := c
		enc.Old, enc.New = nil, nil
		if c.Old != nil {
			enc.Existed, enc.OldEnc = true, attr.EncodeItem(c.Old)
		}
		if c.New != nil {
			enc.NewEnc = attr.EncodeItem(c.New)
		}
		for _, capture := range []ViewType{KeysOnly, NewImage, OldImage, NewAndOldImage} {
			v1, ev1 := encodeRecord(c, capture, 7)
			v2, ev2 := encodeRecord(enc, capture, 7)
			r1, err1 := decodeRecord(v1)
			r2, err2 := decodeRecord(v2)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: decode: %v, %v", capture, err1, err2)
			}
			if ev1 != ev2 || r1.Event != r2.Event || r1.Expired != r2.Expired || len(v1) != len(v2) ||
				!attr.EqualItems(r1.Keys, r2.Keys) || !attr.EqualItems(r1.Old, r2.Old) || !attr.EqualItems(r1.New, r2.New) ||
				(r1.Old == nil) != (r2.Old == nil) || (r1.New == nil) != (r2.New == nil) {
				t.Errorf("%s: from items %+v (%d bytes), from encodings %+v (%d bytes)", capture, r1.Event, len(v1), r2.Event, len(v2))
			}
		}
	}
}

// TestNamespacesSeeOnlyTheirRecords: two tenants and two environments
// write one stream (a shared table); each reads exactly its own changes,
// in order, with images as its view type shows them.
func TestNamespacesSeeOnlyTheirRecords(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	s, err := l.CreateStream(7, NewImage, "tbl", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	nss := [][]byte{tenantNS(1, "live"), tenantNS(2, "live"), tenantNS(1, "test")}
	for i, ns := range nss {
		pk := fmt.Sprintf("t%d", i)
		commit(t, l, db, ns, s, Change{Keys: key(pk), New: item(pk, "1")})
		c.add(time.Millisecond)
		commit(t, l, db, ns, s, Change{Keys: key(pk), Old: item(pk, "1"), New: item(pk, "2")})
		commit(t, l, db, ns, s, Change{Keys: key(pk + "x"), New: item(pk+"x", "1")}, Change{Keys: key(pk), Old: item(pk, "2")})
	}
	for i, ns := range nss {
		pk := fmt.Sprintf("t%d", i)
		rs := readAll(t, l, db, ns, s, 0)
		if got, want := events(rs), fmt.Sprintf("INSERT %s;MODIFY %s;INSERT %sx;REMOVE %s;", pk, pk, pk, pk); got != want {
			t.Errorf("namespace %d reads %q, want %q", i, got, want)
		}
		for j, r := range rs {
			if r.Old != nil {
				t.Errorf("NEW_IMAGE record %d has an old image", j)
			}
			if j > 0 && r.Seq <= rs[j-1].Seq {
				t.Errorf("sequence numbers not increasing: %d then %d", rs[j-1].Seq, r.Seq)
			}
		}
		if rs[1].New["v"].S != "2" {
			t.Errorf("MODIFY new image %v", rs[1].New)
		}
	}
	// Sequence numbers are per namespace: each starts at the same place.
	a, b := readAll(t, l, db, nss[0], s, 0), readAll(t, l, db, nss[1], s, 0)
	if a[0].Seq != b[0].Seq {
		t.Errorf("first sequence numbers differ across namespaces (%d, %d): they are not per namespace", a[0].Seq, b[0].Seq)
	}
	if l.EventID(nss[0], s, a[0].Seq) == l.EventID(nss[1], s, b[0].Seq) {
		t.Error("two namespaces' records share an event id")
	}
}

// TestUnappliedChangeLeavesNoRecord: a record is part of the item's batch:
// an abandoned batch leaves none, and its number holds back no reader.
func TestUnappliedChangeLeavesNoRecord(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	s, _ := l.CreateStream(1, KeysOnly, "tbl", nil, nil)
	ns := tenantNS(1, "live")
	a := l.NewAppender()
	b := db.NewBatch()
	if err := a.Append(db, b, ns, s, Change{Keys: key("lost"), New: item("lost", "1")}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	a.Done(false)
	commit(t, l, db, ns, s, Change{Keys: key("kept"), New: item("kept", "1")})
	if got := events(readAll(t, l, db, ns, s, 0)); got != "INSERT kept;" {
		t.Errorf("read %q", got)
	}
}

// TestReadersWaitForEarlierCommits: a record is not read while a change
// numbered before it is still being committed, so a reader moving on can
// never skip it.
func TestReadersWaitForEarlierCommits(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	s, _ := l.CreateStream(1, KeysOnly, "tbl", nil, nil)
	ns := tenantNS(1, "live")
	slow := l.NewAppender()
	sb := db.NewBatch()
	defer sb.Close()
	if err := slow.Append(db, sb, ns, s, Change{Keys: key("slow"), New: item("slow", "1")}); err != nil {
		t.Fatal(err)
	}
	latest, err := l.Latest(db, ns, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, l, db, ns, s, Change{Keys: key("fast"), New: item("fast", "1")})
	if got := events(readAll(t, l, db, ns, s, 0)); got != "" {
		t.Errorf("read %q while an earlier change is in flight", got)
	}
	if err := db.Apply(sb); err != nil {
		t.Fatal(err)
	}
	slow.Done(true)
	if got := events(readAll(t, l, db, ns, s, 0)); got != "INSERT slow;INSERT fast;" {
		t.Errorf("read %q", got)
	}
	pg, err := l.Read(db, ns, s, latest, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := events(pg.Records); got != "INSERT slow;INSERT fast;" {
		t.Errorf("LATEST taken while a change was in flight reads %q; the change counts as later", got)
	}
}

// TestSequenceSurvivesRestart: after a restart a namespace's numbers keep
// increasing (the leased ceiling).
func TestSequenceSurvivesRestart(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	dir := t.TempDir()
	ns := tenantNS(1, "live")
	db, err := storage.Open(dir, storage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l := newLog(t, db, c, nil)
	s, _ := l.CreateStream(1, NewAndOldImage, "tbl", nil, nil)
	for i := 0; i < 3; i++ {
		commit(t, l, db, ns, s, Change{Keys: key("a"), New: item("a", fmt.Sprint(i))})
	}
	before := readAll(t, l, db, ns, s, 0)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	l = newLog(t, db, c, nil)
	commit(t, l, db, ns, s, Change{Keys: key("a"), Old: item("a", "2"), New: item("a", "3")})
	after := readAll(t, l, db, ns, s, 0)
	if len(after) != 4 || after[3].Seq <= before[2].Seq {
		t.Fatalf("after restart: %d records, last seq %d, before %d", len(after), after[len(after)-1].Seq, before[2].Seq)
	}
}

// TestConcurrentWritersKeepPerKeyOrder: writers of many tenants, each key
// written under its own lock (as the engine's stripes), produce records
// whose order per key is the commit order, with no duplicate numbers.
func TestConcurrentWritersKeepPerKeyOrder(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	s, _ := l.CreateStream(1, NewImage, "tbl", nil, nil)
	const tenants, keys, writes = 3, 4, 20
	var locks [tenants][keys]sync.Mutex
	var counts [tenants][keys]int // guarded by locks
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				tn, k := (w+i)%tenants, (w*7+i)%keys
				ns := tenantNS(byte(tn), "live")
				pk := fmt.Sprintf("k%d", k)
				locks[tn][k].Lock()
				// The value is the number of earlier writes to the key.
				n := counts[tn][k]
				counts[tn][k]++
				commit(t, l, db, ns, s, Change{Keys: key(pk), New: item(pk, fmt.Sprint(n))})
				if i%5 == 0 {
					readAll(t, l, db, ns, s, 0) // readers run alongside
				}
				locks[tn][k].Unlock()
			}
		}()
	}
	wg.Wait()
	total := 0
	for tn := 0; tn < tenants; tn++ {
		rs := readAll(t, l, db, tenantNS(byte(tn), "live"), s, 0)
		total += len(rs)
		next := map[string]int{}
		seen := map[uint64]bool{}
		for _, r := range rs {
			pk := r.Keys["pk"].S
			if got := r.New["v"].S; got != fmt.Sprint(next[pk]) {
				t.Errorf("tenant %d key %s: record %s where %d was due", tn, pk, got, next[pk])
			}
			next[pk]++
			if seen[r.Seq] {
				t.Errorf("tenant %d: duplicate seq %d", tn, r.Seq)
			}
			seen[r.Seq] = true
		}
	}
	if total != 6*writes {
		t.Errorf("%d records, want %d", total, 6*writes)
	}
}

// TestShardsRollOver: shards follow the schedule and close on disable;
// a closed shard reads as drained once its records are read.
func TestShardsRollOver(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	s, _ := l.CreateStream(1, KeysOnly, "tbl", nil, nil)
	ns, other := tenantNS(1, "live"), tenantNS(2, "live")
	commit(t, l, db, ns, s, Change{Keys: key("a"), New: item("a", "1")})
	c.add(90 * time.Minute) // into shard 1
	commit(t, l, db, ns, s, Change{Keys: key("b"), New: item("b", "1")})
	shards, err := l.Shards(db, ns, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2 || !shards[0].Closed || shards[1].Closed || shards[0].HasParent || !shards[1].HasParent || shards[1].Parent != 0 {
		t.Fatalf("shards %+v", shards)
	}
	if shards[0].Empty || shards[0].First != shards[0].Last {
		t.Errorf("shard 0 range %+v", shards[0])
	}
	// Another namespace sees the same shards, empty.
	os, err := l.Shards(db, other, s)
	if err != nil || len(os) != 2 || !os[0].Empty || !os[1].Empty {
		t.Fatalf("other namespace's shards %+v %v", os, err)
	}
	if l.ShardID(s, 0) == l.ShardID(s, 1) {
		t.Error("shard ids repeat")
	}
	p := Position{Shard: 0}
	pg, err := l.Read(db, ns, s, p, 10, 1<<20)
	if err != nil || len(pg.Records) != 1 || !pg.Drained {
		t.Fatalf("read closed shard 0: %+v %v", pg, err)
	}
	pg, err = l.Read(db, ns, s, Position{Shard: 1}, 10, 1<<20)
	if err != nil || len(pg.Records) != 1 || pg.Drained {
		t.Fatalf("read open shard 1: %+v %v", pg, err)
	}
	s, err = l.DisableStream(1, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.NewAppender().Append(db, db.NewBatch(), ns, s, Change{Keys: key("c"), New: item("c", "1")}); !errors.Is(err, ErrStreamDisabled) {
		t.Errorf("Append to a disabled stream: %v", err)
	}
	c.add(5 * time.Hour)
	shards, _ = l.Shards(db, ns, s)
	if len(shards) != 2 || !shards[1].Closed {
		t.Fatalf("after disable: %+v", shards)
	}
	pg, err = l.Read(db, ns, s, pg.Next, 10, 1<<20)
	if err != nil || len(pg.Records) != 0 || !pg.Drained {
		t.Fatalf("read disabled shard 1 past its end: %+v %v", pg, err)
	}
	// A re-enabled stream is a new stream with a new label.
	s2, err := l.CreateStream(1, KeysOnly, "tbl", nil, nil)
	if err != nil || s2.ID == s.ID || s2.Label() == s.Label() {
		t.Fatalf("re-enabled stream %+v %v", s2, err)
	}
	all, _ := l.Streams(1)
	if len(all) != 2 || all[0].Enabled() || !all[1].Enabled() {
		t.Errorf("streams %+v", all)
	}
}

// TestTrim: records past retention are range-deleted in the background;
// reading them is ErrTrimmed; a stream disabled past retention goes.
func TestTrim(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, func(o *Options) { o.Retention = 3 * time.Hour })
	s, _ := l.CreateStream(1, NewAndOldImage, "tbl", nil, nil)
	ns := tenantNS(1, "live")
	for i := 0; i < 6; i++ { // one record every 30 minutes: shards 0, 0, 1, 1, 2, 2
		commit(t, l, db, ns, s, Change{Keys: key(fmt.Sprint(i)), New: item(fmt.Sprint(i), "x")})
		c.add(30 * time.Minute)
	}
	first := Position{Shard: 0, Seq: 1}
	c.add(75 * time.Minute) // now = start + 4h15m: cutoff = 1h15m, in shard 1, after record 2
	st, err := l.Trim(db)
	if err != nil {
		t.Fatal(err)
	}
	if st.Trimmed != 1 {
		t.Errorf("trim stats %+v", st)
	}
	if _, err := l.Read(db, ns, s, first, 10, 1<<20); !errors.Is(err, ErrTrimmed) {
		t.Errorf("read trimmed position: %v", err)
	}
	if _, err := l.TrimHorizon(db, ns, s, 0); !errors.Is(err, ErrTrimmed) {
		t.Errorf("TrimHorizon of a trimmed shard: %v", err)
	}
	// LATEST honours retention as TRIM_HORIZON does: a shard past it is
	// trimmed, a kept one gives the position after its newest record.
	if _, err := l.Latest(db, ns, s, 0); !errors.Is(err, ErrTrimmed) {
		t.Errorf("Latest of a shard past retention: %v", err)
	}
	if p, err := l.Latest(db, ns, s, 2); err != nil || p != (Position{Shard: 2, Seq: 7}) {
		t.Errorf("Latest of the open shard = %+v, %v; want {2 7}", p, err)
	}
	rs := readAll(t, l, db, ns, s, 1)
	if got := events(rs); got != "INSERT 3;" {
		t.Errorf("shard 1 after trim: %q", got)
	}
	shards, _ := l.Shards(db, ns, s)
	if len(shards) == 0 || shards[0].Index != 1 {
		t.Errorf("shards after trim %+v", shards)
	}
	lo, hi := keyspace.ChangeStreamRange(ns, s.Table, s.ID)
	if n := countKeys(t, db, lo, hi); n != 3 {
		t.Errorf("%d records stored after trim, want 3", n)
	}
	// Disabled and past retention: everything goes, descriptor too.
	if _, err := l.DisableStream(1, s.ID); err != nil {
		t.Fatal(err)
	}
	c.add(4 * time.Hour)
	if _, err := l.Trim(db); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, db, lo, hi); n != 0 {
		t.Errorf("%d records of an expired stream remain", n)
	}
	if _, err := l.Stream(1, s.ID); !errors.Is(err, ErrStreamNotFound) {
		t.Errorf("expired stream's descriptor: %v", err)
	}
	elo, ehi := keyspace.ChangeLogEntries()
	if n := countKeys(t, db, elo, ehi); n != 0 {
		t.Errorf("%d change log entries remain", n)
	}
}

func countKeys(t *testing.T, db *storage.DB, lo, hi []byte) int {
	t.Helper()
	it := db.NewIter(lo, hi)
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDropTenant: the tenant's entries go; its records are in its range.
func TestDropTenant(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	s, _ := l.CreateStream(1, KeysOnly, "tbl", nil, nil)
	var gone, kept tenancy.TenantID
	gone[0], kept[0] = 1, 2
	for _, id := range []tenancy.TenantID{gone, kept} {
		commit(t, l, db, keyspace.Namespace(id, "live"), s, Change{Keys: key("a"), New: item("a", "1")})
		lo, hi := keyspace.ChangeLogRange(keyspace.Namespace(id, "live"))
		tlo, thi := keyspace.TenantRange(id)
		if string(lo) < string(tlo) || string(hi) > string(thi) {
			t.Fatal("a namespace's change log lies outside its tenant's range")
		}
	}
	if err := l.DropTenant(db, gone); err != nil {
		t.Fatal(err)
	}
	lo, hi := keyspace.ChangeLogEntries()
	if n := countKeys(t, db, lo, hi); n != 1 {
		t.Errorf("%d entries after dropping one of two tenants", n)
	}
}

// TestFindStreams: a stream is found by table name for the namespaces
// that may read it, and a tenant's streams go with the tenant.
func TestFindStreams(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	var ta, tb tenancy.TenantID
	ta[0], tb[0] = 1, 2
	a, b := keyspace.Namespace(ta, "live"), keyspace.Namespace(tb, "live")
	shared, _ := l.CreateStream(1, KeysOnly, "orders", nil, []byte("meta"))
	c.add(time.Millisecond)
	own, _ := l.CreateStream(2, KeysOnly, "orders", a, nil)
	for _, tc := range []struct {
		ns   []byte
		id   uint64
		want int
	}{{a, shared.ID, 1}, {b, shared.ID, 1}, {a, own.ID, 1}, {b, own.ID, 0}, {keyspace.Namespace(ta, "test"), own.ID, 0}} {
		got, err := l.FindStreams("orders", tc.id, tc.ns)
		if err != nil || len(got) != tc.want {
			t.Errorf("FindStreams(orders, %d, %x) = %d streams (%v), want %d", tc.id, tc.ns, len(got), err, tc.want)
		}
		if len(got) == 1 && got[0].ID == shared.ID && string(got[0].Meta) != "meta" {
			t.Errorf("meta %q", got[0].Meta)
		}
	}
	if err := l.DropTenant(db, ta); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stream(2, own.ID); !errors.Is(err, ErrStreamNotFound) {
		t.Errorf("a dropped tenant's stream: %v", err)
	}
	if _, err := l.Stream(1, shared.ID); err != nil {
		t.Errorf("a shared stream after dropping a tenant: %v", err)
	}
}

// TestStreamNameIndex: descriptors are indexed by owner and table name, so
// FindStreams and VisibleStreams read only the shared part and the
// caller's own part; a descriptor without its index key (written before
// the index existed) is indexed when the log opens; dropping a tenant or
// expiring a stream deletes its index key with the descriptor.
func TestStreamNameIndex(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, func(o *Options) { o.Retention = time.Hour })
	var ta, tb tenancy.TenantID
	ta[0], tb[0] = 1, 2
	a, b := keyspace.Namespace(ta, "live"), keyspace.Namespace(tb, "live")
	shared, _ := l.CreateStream(1, KeysOnly, "orders", nil, nil)
	c.add(time.Millisecond)
	own, _ := l.CreateStream(2, KeysOnly, "orders", a, nil)
	c.add(time.Millisecond)
	other, _ := l.CreateStream(3, KeysOnly, "orders", b, nil)
	c.add(time.Millisecond)
	gone, _ := l.CreateStream(2, NewImage, "orders", a, nil) // a later stream of a's table
	names := func(ss []Stream) string {
		out := ""
		for _, s := range ss {
			out += fmt.Sprintf("%d/%d;", s.Table, s.ID)
		}
		return out
	}
	if got, want := names(mustStreams(t)(l.VisibleStreams(a))), fmt.Sprintf("1/%d;2/%d;2/%d;", shared.ID, own.ID, gone.ID); got != want {
		t.Errorf("VisibleStreams(a) = %s, want %s", got, want)
	}
	if got, want := names(mustStreams(t)(l.VisibleStreams(b))), fmt.Sprintf("1/%d;3/%d;", shared.ID, other.ID); got != want {
		t.Errorf("VisibleStreams(b) = %s, want %s", got, want)
	}
	// Every descriptor has its index key; one without is indexed on open.
	lo, hi := keyspace.OwnerStreamNames(b)
	if n := countKeys(t, db, lo, hi); n != 1 {
		t.Fatalf("%d index keys of b, want 1", n)
	}
	del := db.NewBatch()
	del.Delete(keyspace.StreamName(b, "orders", 3, other.ID))
	if err := db.Apply(del); err != nil {
		t.Fatal(err)
	}
	del.Close()
	if got, _ := l.FindStreams("orders", other.ID, b); len(got) != 0 {
		t.Fatalf("found an unindexed stream: %+v", got)
	}
	l = newLog(t, db, c, func(o *Options) { o.Retention = time.Hour })
	if got, err := l.FindStreams("orders", other.ID, b); err != nil || len(got) != 1 || got[0].Table != 3 {
		t.Errorf("FindStreams after reopening = %+v, %v", got, err)
	}
	// Dropping tenant a deletes its descriptors and their index keys.
	if err := l.DropTenant(db, ta); err != nil {
		t.Fatal(err)
	}
	lo, hi = keyspace.TenantStreamNames(ta)
	if n := countKeys(t, db, lo, hi); n != 0 {
		t.Errorf("%d index keys of a dropped tenant", n)
	}
	// A stream disabled past retention goes with its index key.
	if _, err := l.DisableStream(1, shared.ID); err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Hour)
	if _, err := l.Trim(db); err != nil {
		t.Fatal(err)
	}
	lo, hi = keyspace.OwnerStreamNames(nil)
	if n := countKeys(t, db, lo, hi); n != 0 {
		t.Errorf("%d index keys of an expired shared stream", n)
	}
	if got := names(mustStreams(t)(l.VisibleStreams(b))); got != fmt.Sprintf("3/%d;", other.ID) {
		t.Errorf("VisibleStreams(b) at the end = %s", got)
	}
}

func mustStreams(t *testing.T) func([]Stream, error) []Stream {
	return func(ss []Stream, err error) []Stream {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ss
	}
}

// TestMoveToMain: a namespace's records of a table in another store (a
// silo table's) are copied into the main store, horizon and trimming
// entry included; copying again (after a crash) changes nothing; the
// main store then reads and trims them as its own.
func TestMoveToMain(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	main, silo := openDB(t, ""), openDB(t, "")
	l := newLog(t, main, c, func(o *Options) { o.Retention = 3 * time.Hour })
	s, _ := l.CreateStream(7, NewImage, "silo", nil, nil)
	ns, other := tenantNS(1, "live"), tenantNS(2, "live")
	for i := range 4 { // shards 0, 0, 1, 1
		commit(t, l, silo, ns, s, Change{Keys: key(fmt.Sprint(i)), New: item(fmt.Sprint(i), "x")})
		commit(t, l, silo, other, s, Change{Keys: key("o"), New: item("o", "x")})
		c.add(30 * time.Minute)
	}
	c.add(135 * time.Minute) // cutoff in shard 1, after record 2 of ns
	if _, err := l.Trim(silo); err != nil {
		t.Fatal(err)
	}
	s, _ = l.DisableStream(7, s.ID)
	for range 2 {
		if err := l.MoveToMain(silo, ns, 7); err != nil {
			t.Fatal(err)
		}
	}
	if got := events(readAll(t, l, main, ns, s, 1)); got != "INSERT 3;" {
		t.Errorf("moved records: %q", got)
	}
	if _, err := l.TrimHorizon(main, ns, s, 0); !errors.Is(err, ErrTrimmed) {
		t.Errorf("the trimmed shard after moving: %v", err)
	}
	if got := readAll(t, l, main, other, s, 1); len(got) != 0 {
		t.Errorf("another namespace's records moved: %d", len(got))
	}
	if p, err := l.Latest(main, ns, s, 1); err != nil || p.Seq <= readAll(t, l, main, ns, s, 1)[0].Seq {
		t.Errorf("LATEST of moved records = %+v, %v", p, err)
	}
	c.add(4 * time.Hour)
	if st, err := l.Trim(main); err != nil || st.Forgotten != 1 {
		t.Errorf("trimming the moved records past retention: %+v, %v", st, err)
	}
	lo, hi := keyspace.ChangeStreamRange(ns, 7, s.ID)
	if n := countKeys(t, main, lo, hi); n != 0 {
		t.Errorf("%d moved records left after retention", n)
	}
}
