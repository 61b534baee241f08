package changelog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/storage"
)

func TestCursorText(t *testing.T) {
	for _, c := range []Cursor{{}, {Stream: 1_799_000_000_000, Shard: 7, Seq: 1 << 40}, {Stream: ^uint64(0), Shard: ^uint32(0), Seq: ^uint64(0)}} {
		got, err := ParseCursor(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %v, %v; want %v", c.String(), got, err, c)
		}
	}
	if !(Cursor{}).IsZero() || (Cursor{Seq: 1}).IsZero() {
		t.Error("IsZero is wrong")
	}
	for _, bad := range []string{"", "x", "0000000000000000-00000000-000000000000000", "0000000000000000-00000000-000000000000000G",
		"0000000000000000_00000000-0000000000000000", "0000000000000000-00000000-000000000000000A", "+000000000000000-00000000-0000000000000000"} {
		if _, err := ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) accepted it", bad)
		}
	}
}

// followAll follows table 1 in ns from c to the end in pages of n.
func followAll(t *testing.T, l *Log, db *storage.DB, ns []byte, from Cursor, n int) ([]Entry, Cursor) {
	t.Helper()
	var out []Entry
	for i := 0; ; i++ {
		pg, err := l.Follow(db, ns, 1, from, n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pg.Entries...)
		from = pg.Next
		if pg.CaughtUp {
			if len(pg.Entries) >= n {
				t.Fatalf("page of %d entries (limit %d) says caught up", len(pg.Entries), n)
			}
			return out, from
		}
		if i > 10_000 {
			t.Fatal("Follow does not end")
		}
	}
}

// TestFollowAcrossStreams: a table's log is every stream it had —
// visible, then hidden, then visible again — and Follow reads it as one
// sequence, including changes committed to an old stream after the next
// one took the first records (the DDL switch lets writers holding the old
// definition finish), in pages small enough to end inside each stream.
func TestFollowAcrossStreams(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, func(o *Options) { o.Rollover = time.Second })
	ns, other := tenantNS(1, "live"), tenantNS(2, "live")
	s1, _ := l.CreateStream(1, NewImage, "tbl", nil, nil)
	var want []string
	put := func(s Stream, pk string, v int) {
		ch := Change{Keys: key(pk), New: item(pk, fmt.Sprint(v))}
		if v > 0 {
			ch.Old = item(pk, fmt.Sprint(v-1))
		}
		commit(t, l, db, ns, s, ch)
		commit(t, l, db, other, s, ch)
		want = append(want, fmt.Sprintf("%s=%d", pk, v))
	}
	for i := 0; i < 5; i++ {
		put(s1, "a", i)
		c.add(400 * time.Millisecond) // rollovers
	}
	s2, err := l.Create(StreamConfig{Table: 1, View: NewAndOldImage, Name: "tbl", Hidden: true})
	if err != nil {
		t.Fatal(err)
	}
	put(s2, "b", 0)
	put(s1, "a", 5) // a writer that read the old definition
	s1, _ = l.DisableStream(1, s1.ID)
	for i := 1; i < 4; i++ {
		put(s2, "b", i)
		c.add(700 * time.Millisecond)
	}
	c.add(time.Millisecond)
	s3, _ := l.CreateStream(1, NewImage, "tbl", nil, nil)
	put(s3, "a", 6)
	put(s2, "b", 4)
	if _, err := l.DisableStream(1, s2.ID); err != nil {
		t.Fatal(err)
	}
	put(s3, "b", 5)

	for _, n := range []int{1, 2, 3, 100} {
		got, end := followAll(t, l, db, ns, Cursor{}, n)
		var seen []string
		for i, e := range got {
			seen = append(seen, fmt.Sprintf("%s=%s", e.Keys["pk"].S, e.New["v"].S))
			if i > 0 && e.Seq <= got[i-1].Seq {
				t.Errorf("limit %d: entry %d has seq %d after %d", n, i, e.Seq, got[i-1].Seq)
			}
			if e.Next.Seq != e.Seq || e.Next.Stream != e.Stream || e.EventID != l.EventID(ns, Stream{Table: 1, ID: e.Stream}, e.Seq) {
				t.Errorf("entry %d: Next %v, EventID %s do not name it", i, e.Next, e.EventID)
			}
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("limit %d: followed\n%v\nwant\n%v", n, seen, want)
		}
		if end != got[len(got)-1].Next {
			t.Errorf("limit %d: end cursor %v, last entry's %v", n, end, got[len(got)-1].Next)
		}
		// From the middle, through the text form.
		mid, _ := ParseCursor(got[len(got)/2].Next.String())
		rest, _ := followAll(t, l, db, ns, mid, n)
		if len(rest) != len(got)-len(got)/2-1 || rest[0].Seq != got[len(got)/2+1].Seq {
			t.Errorf("limit %d: from the middle got %d entries", n, len(rest))
		}
	}
	// The hidden stream keeps both images, whatever the view types.
	got, _ := followAll(t, l, db, ns, Cursor{}, 100)
	for _, e := range got {
		if e.Stream == s2.ID && e.Event == Modify && (e.Old == nil || e.New == nil) {
			t.Errorf("hidden stream entry %s lacks an image: %v", e.SequenceNumber, e.Record)
		}
	}
}

// TestFollowInFlight: Follow never passes a change still being committed,
// and says it is not caught up while one is.
func TestFollowInFlight(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, nil)
	ns := tenantNS(1, "live")
	s, _ := l.CreateStream(1, NewImage, "tbl", nil, nil)
	commit(t, l, db, ns, s, Change{Keys: key("a"), New: item("a", "0")})
	slow := l.NewAppender()
	b1 := db.NewBatch()
	defer b1.Close()
	if err := slow.Append(db, b1, ns, s, Change{Keys: key("b"), New: item("b", "0")}); err != nil {
		t.Fatal(err)
	}
	woke := l.Changed(db, ns)
	commit(t, l, db, ns, s, Change{Keys: key("c"), New: item("c", "0")})
	select {
	case <-woke:
	default:
		t.Error("Changed did not fire on a commit")
	}
	pg, err := l.Follow(db, ns, 1, Cursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Entries) != 1 || pg.CaughtUp {
		t.Fatalf("with b in flight: %d entries, caught up %v; want 1, false", len(pg.Entries), pg.CaughtUp)
	}
	if err := db.Apply(b1); err != nil {
		t.Fatal(err)
	}
	slow.Done(true)
	pg, err = l.Follow(db, ns, 1, pg.Next, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Entries) != 2 || !pg.CaughtUp || pg.Entries[0].Keys["pk"].S != "b" {
		t.Fatalf("after b committed: %v, caught up %v", pg.Entries, pg.CaughtUp)
	}
	// Waiting ends with the context when nothing comes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	select {
	case <-l.Changed(db, ns):
		t.Error("Changed fired with nothing committed")
	case <-ctx.Done():
	}
}

// TestFollowTrimmed: trimming reports a cursor before a deleted record
// as trimmed (never a silent gap), the zero cursor starts at what is
// kept, CursorAt finds times, and a longer stream retention keeps more.
func TestFollowTrimmed(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, func(o *Options) { o.Retention = time.Hour; o.Rollover = 10 * time.Minute })
	ns := tenantNS(1, "live")
	s, _ := l.CreateStream(1, NewImage, "tbl", nil, nil)
	start := c.now()
	var times []time.Time
	for i := 0; i < 12; i++ { // one change every 10 minutes for two hours
		times = append(times, c.now())
		commit(t, l, db, ns, s, Change{Keys: key("a"), Existed: i > 0, New: item("a", fmt.Sprint(i))})
		c.add(10 * time.Minute)
	}
	all, err := l.Follow(db, ns, 1, Cursor{}, 100)
	if err != nil || len(all.Entries) != 12 {
		t.Fatalf("before trimming: %d entries, %v", len(all.Entries), err)
	}
	cur, err := l.CursorAt(db, ns, 1, times[3].Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if pg, _ := l.Follow(db, ns, 1, cur, 1); len(pg.Entries) != 1 || pg.Entries[0].New["v"].S != "4" {
		t.Errorf("CursorAt(t3+1s) then Follow: %v", pg.Entries)
	}
	if cur, _ := l.CursorAt(db, ns, 1, start.Add(-time.Hour)); cur.Seq != all.Entries[0].Seq-1 {
		t.Errorf("CursorAt(before all) = %v, want just before seq %d", cur, all.Entries[0].Seq)
	}
	end, _ := l.CursorAt(db, ns, 1, c.now())
	if pg, _ := l.Follow(db, ns, 1, end, 10); len(pg.Entries) != 0 || !pg.CaughtUp {
		t.Errorf("CursorAt(now) is not the end: %v", pg.Entries)
	}

	// Retention of one stream stretched to 3h: nothing goes.
	if err := l.SetRetention(1, 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Trim(db); err != nil {
		t.Fatal(err)
	}
	if pg, err := l.Follow(db, ns, 1, all.Entries[0].Next, 100); err != nil || len(pg.Entries) != 11 {
		t.Fatalf("with 3h retention: %d entries, %v", len(pg.Entries), err)
	}
	// Back to the log's hour: the first 6 or so go.
	if err := l.SetRetention(1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Trim(db); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Follow(db, ns, 1, all.Entries[0].Next, 100); !errors.Is(err, ErrTrimmed) {
		t.Errorf("Follow from a trimmed cursor: %v, want ErrTrimmed", err)
	}
	if _, err := l.CursorAt(db, ns, 1, times[2]); !errors.Is(err, ErrTrimmed) {
		t.Errorf("CursorAt(a trimmed time): %v, want ErrTrimmed", err)
	}
	kept, err := l.Follow(db, ns, 1, Cursor{}, 100)
	if err != nil || len(kept.Entries) == 0 || len(kept.Entries) >= 12 {
		t.Fatalf("from zero after trimming: %d entries, %v", len(kept.Entries), err)
	}
	first := kept.Entries[0]
	if first.Time.Before(c.now().Add(-time.Hour)) {
		t.Errorf("kept a record of %v, older than the hour", first.Time)
	}
	// The cursor just before the first kept record is not trimmed.
	if _, err := l.Follow(db, ns, 1, Cursor{Stream: first.Stream, Shard: first.Shard, Seq: first.Seq - 1}, 1); err != nil {
		t.Errorf("Follow from just before the oldest kept record: %v", err)
	}
	if cur, err := l.CursorAt(db, ns, 1, first.Time); err != nil || cur.Seq != first.Seq-1 {
		t.Errorf("CursorAt(oldest kept) = %v, %v", cur, err)
	}
}
