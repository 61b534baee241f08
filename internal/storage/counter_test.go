package storage

import (
	"errors"
	"math"
	"testing"
)

func TestCounter(t *testing.T) {
	db := openMem(t)
	key := []byte("n")
	if n, err := db.Counter(key); err != nil || n != 0 {
		t.Fatalf("absent Counter = %d, %v; want 0, nil", n, err)
	}
	apply(t, db, func(b *Batch) {
		b.AddCounter(key, 5)
		b.AddCounter(key, -2) // two operands in one batch
	})
	apply(t, db, func(b *Batch) { b.AddCounter(key, 10) })
	if n, err := db.Counter(key); err != nil || n != 13 {
		t.Fatalf("Counter = %d, %v; want 13", n, err)
	}

	// A plain Get sees the 8-byte encoding.
	v, err := db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := DecodeCounter(v); err != nil || n != 13 {
		t.Errorf("DecodeCounter(Get) = %d, %v; want 13", n, err)
	}

	// Delete resets; AddCounter then starts from 0.
	apply(t, db, func(b *Batch) {
		b.Delete(key)
		b.AddCounter(key, 1)
	})
	if n, _ := db.Counter(key); n != 1 {
		t.Errorf("after Delete+AddCounter, Counter = %d, want 1", n)
	}
}

func TestCounterWrapsAround(t *testing.T) {
	db := openMem(t)
	key := []byte("n")
	apply(t, db, func(b *Batch) { b.AddCounter(key, math.MaxInt64) })
	apply(t, db, func(b *Batch) { b.AddCounter(key, 1) })
	if n, _ := db.Counter(key); n != math.MinInt64 {
		t.Errorf("MaxInt64+1 = %d, want MinInt64 (two's-complement wrap)", n)
	}
}

// TestCounterSurvivesCompaction merges operands spread over the memtable,
// L0 and lower levels, then reopens: the merger runs in flushes,
// compactions and reads alike.
func TestCounterSurvivesCompaction(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	key := []byte("n")
	var want int64
	for round := range 5 {
		for i := range 20 {
			d := int64(round*100 + i - 7)
			want += d
			apply(t, db, func(b *Batch) { b.AddCounter(key, d) })
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.pdb.Compact(t.Context(), []byte("a"), []byte("z"), false); err != nil {
		t.Fatal(err)
	}
	apply(t, db, func(b *Batch) { b.AddCounter(key, 3) })
	want += 3
	if n, err := db.Counter(key); err != nil || n != want {
		t.Fatalf("Counter = %d, %v; want %d", n, err, want)
	}
	db.Close()
	db = openT(t, dir, Options{})
	if n, err := db.Counter(key); err != nil || n != want {
		t.Fatalf("after reopen, Counter = %d, %v; want %d", n, err, want)
	}
}

func TestCounterOnPlainValue(t *testing.T) {
	db := openMem(t)
	apply(t, db, func(b *Batch) { b.Set([]byte("s"), []byte("not a counter")) })
	if _, err := db.Counter([]byte("s")); err == nil {
		t.Error("Counter of a 13-byte value succeeded")
	}
	// Set with a valid encoding is a base the counter adds to.
	apply(t, db, func(b *Batch) { b.Set([]byte("c"), encodeCounter(nil, 100)) })
	apply(t, db, func(b *Batch) { b.AddCounter([]byte("c"), 1) })
	if n, err := db.Counter([]byte("c")); err != nil || n != 101 {
		t.Errorf("Counter = %d, %v; want 101", n, err)
	}
	// Merging onto a malformed base fails loudly rather than guessing.
	apply(t, db, func(b *Batch) { b.AddCounter([]byte("s"), 1) })
	if v, err := db.Get([]byte("s")); err == nil {
		t.Errorf("Get of a counter merged onto a plain value = %q, want an error", v)
	} else if errors.Is(err, ErrNotFound) {
		t.Errorf("Get = ErrNotFound, want a merge error")
	}
}

func TestDecodeCounter(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want string
	}{
		{0, "\x00\x00\x00\x00\x00\x00\x00\x00"},
		{1, "\x00\x00\x00\x00\x00\x00\x00\x01"},
		{-1, "\xff\xff\xff\xff\xff\xff\xff\xff"},
		{math.MinInt64, "\x80\x00\x00\x00\x00\x00\x00\x00"},
	} {
		if got := string(encodeCounter(nil, tc.v)); got != tc.want {
			t.Errorf("encodeCounter(%d) = %q, want %q", tc.v, got, tc.want)
		}
		if got, err := DecodeCounter([]byte(tc.want)); err != nil || got != tc.v {
			t.Errorf("DecodeCounter(%q) = %d, %v; want %d", tc.want, got, err, tc.v)
		}
	}
	for _, bad := range []string{"", "1234567", "123456789"} {
		if _, err := DecodeCounter([]byte(bad)); err == nil {
			t.Errorf("DecodeCounter(%q) succeeded", bad)
		}
	}
}

// TestCounterMergerAssociative checks the property Pebble relies on:
// merging newest-first or oldest-first gives the same result.
func TestCounterMergerAssociative(t *testing.T) {
	ops := []int64{7, -3, math.MaxInt64, 12, math.MinInt64, -1}
	enc := func(v int64) []byte { return encodeCounter(nil, v) }

	older, err := counterMerger.Merge(nil, enc(ops[len(ops)-1]))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(ops) - 2; i >= 0; i-- {
		if err := older.MergeOlder(enc(ops[i])); err != nil {
			t.Fatal(err)
		}
	}
	newer, err := counterMerger.Merge(nil, enc(ops[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range ops[1:] {
		if err := newer.MergeNewer(enc(v)); err != nil {
			t.Fatal(err)
		}
	}
	a, _, _ := older.Finish(true)
	b, _, _ := newer.Finish(true)
	if string(a) != string(b) {
		t.Errorf("MergeOlder chain = %x, MergeNewer chain = %x", a, b)
	}
	if _, err := counterMerger.Merge(nil, []byte("bad")); err == nil {
		t.Error("Merge of a 3-byte operand succeeded")
	}
}

func TestMergerNameIsStable(t *testing.T) {
	// NB: persisted by Pebble; changing it makes existing stores unopenable.
	if got, want := counterMerger.Name, "tenantdb.counter.v1"; got != want {
		t.Fatalf("merger name = %q, want %q", got, want)
	}
}
