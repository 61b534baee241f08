package storage

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// collect walks it forwards (or backwards) and returns "key=value" strings.
func collect(t *testing.T, it *Iter, backwards bool) []string {
	t.Helper()
	var out []string
	ok := it.First()
	if backwards {
		ok = it.Last()
	}
	for ; ok; ok = map[bool]func() bool{false: it.Next, true: it.Prev}[backwards]() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Error(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return out
}

func fill(t *testing.T, db *DB, keys ...string) {
	t.Helper()
	apply(t, db, func(b *Batch) {
		for _, k := range keys {
			b.Set([]byte(k), []byte(strings.ToUpper(k)))
		}
	})
}

func TestIterBounds(t *testing.T) {
	db := openMem(t)
	fill(t, db, "a", "b", "b\x00", "c", "d")
	for _, tc := range []struct {
		lower, upper string
		want         []string
	}{
		{"", "", []string{"a=A", "b=B", "b\x00=B\x00", "c=C", "d=D"}},
		{"b", "d", []string{"b=B", "b\x00=B\x00", "c=C"}},
		{"b\x00", "c", []string{"b\x00=B\x00"}},
		{"x", "z", nil},
	} {
		var lo, hi []byte
		if tc.lower != "" {
			lo = []byte(tc.lower)
		}
		if tc.upper != "" {
			hi = []byte(tc.upper)
		}
		it := db.NewIter(lo, hi)
		if got := collect(t, it, false); !slices.Equal(got, tc.want) {
			t.Errorf("[%q, %q) forwards = %q, want %q", tc.lower, tc.upper, got, tc.want)
		}
		rev := slices.Clone(tc.want)
		slices.Reverse(rev)
		if got := collect(t, it, true); !slices.Equal(got, rev) {
			t.Errorf("[%q, %q) backwards = %q, want %q", tc.lower, tc.upper, got, rev)
		}
		if err := it.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestIterSeek(t *testing.T) {
	db := openMem(t)
	fill(t, db, "a", "c", "e", "g")
	it := db.NewIter([]byte("b"), []byte("f"))
	defer it.Close()
	for _, tc := range []struct {
		op, key string
		want    string // "" = not valid
	}{
		{"ge", "c", "c"},
		{"ge", "d", "e"},
		{"ge", "a", "c"}, // clamped to the lower bound
		{"ge", "f", ""},
		{"lt", "e", "c"},
		{"lt", "z", "e"}, // clamped to the upper bound
		{"lt", "c", ""},
	} {
		var ok bool
		if tc.op == "ge" {
			ok = it.SeekGE([]byte(tc.key))
		} else {
			ok = it.SeekLT([]byte(tc.key))
		}
		if got := string(it.Key()); ok != (tc.want != "") || got != tc.want {
			t.Errorf("Seek%s(%q) = %v at %q, want %q", strings.ToUpper(tc.op), tc.key, ok, got, tc.want)
		}
	}
	if !it.SeekGE([]byte("c")) || !it.Next() || string(it.Key()) != "e" || !it.Prev() || string(it.Key()) != "c" {
		t.Error("Next/Prev after SeekGE(c) did not visit e then c")
	}
}

func TestIterCallerOwnsBuffers(t *testing.T) {
	db := openMem(t)
	fill(t, db, "a1", "a2", "b1")
	lo, hi := []byte("a"), []byte("b")
	it := db.NewIter(lo, hi)
	defer it.Close()
	copy(lo, "0") // bounds were copied: widening them now changes nothing
	copy(hi, "z")
	var keys, vals [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, it.Key())
		vals = append(vals, it.Value())
	}
	if got := fmt.Sprintf("%s %s", keys, vals); got != "[a1 a2] [A1 A2]" {
		t.Errorf("kept keys and values = %s, want [a1 a2] [A1 A2]", got)
	}
}

func TestIterSeesCountersAndRangeDeletes(t *testing.T) {
	db := openMem(t)
	fill(t, db, "a", "b", "c")
	apply(t, db, func(b *Batch) {
		b.AddCounter([]byte("n"), 2)
		b.AddCounter([]byte("n"), 3)
		b.DeleteRange([]byte("b"), []byte("c"))
	})
	it := db.NewIter(nil, nil)
	defer it.Close()
	got := collect(t, it, false)
	want := []string{"a=A", "c=C", "n=" + string(encodeCounter(nil, 5))}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSnapshot(t *testing.T) {
	db := openMem(t)
	fill(t, db, "a", "b")
	apply(t, db, func(b *Batch) { b.AddCounter([]byte("n"), 1) })
	snap := db.NewSnapshot()

	apply(t, db, func(b *Batch) {
		b.Set([]byte("a"), []byte("new"))
		b.Delete([]byte("b"))
		b.Set([]byte("c"), []byte("C"))
		b.AddCounter([]byte("n"), 1)
	})

	if v, err := snap.Get([]byte("a")); err != nil || string(v) != "A" {
		t.Errorf("snapshot Get(a) = %q, %v; want A", v, err)
	}
	if _, err := snap.Get([]byte("c")); err != ErrNotFound {
		t.Errorf("snapshot Get(c) = %v, want ErrNotFound", err)
	}
	if n, err := snap.Counter([]byte("n")); err != nil || n != 1 {
		t.Errorf("snapshot Counter = %d, %v; want 1", n, err)
	}
	it := snap.NewIter(nil, []byte("m"))
	if got, want := collect(t, it, false), []string{"a=A", "b=B"}; !slices.Equal(got, want) {
		t.Errorf("snapshot iter = %q, want %q", got, want)
	}
	it.Close()
	if got := mustGet(t, db, "a"); got != "new" {
		t.Errorf("DB Get(a) = %q, want new", got)
	}

	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := snap.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := snap.Get([]byte("a")); err != ErrClosed {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if it := snap.NewIter(nil, nil); it.First() || it.Error() != ErrClosed {
		t.Errorf("NewIter after Close: Error = %v, want ErrClosed", it.Error())
	}
}

func TestIterUseAfterClose(t *testing.T) {
	db := openMem(t)
	fill(t, db, "a")
	it := db.NewIter(nil, nil)
	if !it.First() {
		t.Fatal("First = false")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if it.Valid() || it.First() || it.Key() != nil || it.Error() != ErrClosed {
		t.Errorf("closed iterator still usable; Error = %v", it.Error())
	}
	if err := it.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}
