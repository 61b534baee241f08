package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
)

// openMem opens an in-memory DB closed at the end of the test.
func openMem(t *testing.T) *DB {
	t.Helper()
	return openT(t, "mem", Options{InMemory: true})
}

func openT(t *testing.T, dir string, opts Options) *DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func apply(t *testing.T, db *DB, fill func(*Batch)) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	fill(b)
	if err := db.Apply(b); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func mustGet(t *testing.T, db *DB, key string) string {
	t.Helper()
	v, err := db.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(v)
}

func wantNotFound(t *testing.T, db *DB, key string) {
	t.Helper()
	if v, err := db.Get([]byte(key)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

func TestSetGetDelete(t *testing.T) {
	db := openMem(t)
	wantNotFound(t, db, "a")

	apply(t, db, func(b *Batch) {
		b.Set([]byte("a"), []byte("1"))
		b.Set([]byte("b"), []byte("2"))
		b.Set([]byte("empty"), nil)
	})
	if got := mustGet(t, db, "a"); got != "1" {
		t.Errorf("Get(a) = %q, want %q", got, "1")
	}
	if v, err := db.Get([]byte("empty")); err != nil || v == nil || len(v) != 0 {
		t.Errorf("Get(empty) = %#v, %v; want non-nil empty value", v, err)
	}

	apply(t, db, func(b *Batch) {
		b.Delete([]byte("a"))
		b.Set([]byte("b"), []byte("3"))
	})
	wantNotFound(t, db, "a")
	if got := mustGet(t, db, "b"); got != "3" {
		t.Errorf("Get(b) = %q, want %q", got, "3")
	}
}

func TestCallerOwnsBuffers(t *testing.T) {
	db := openMem(t)
	key, val := []byte("key"), []byte("value")
	b := db.NewBatch()
	b.Set(key, val)
	copy(key, "XXX") // reuse before Apply: the batch copied them
	copy(val, "XXXXX")
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
	b.Close()

	got, err := db.Get([]byte("key"))
	if err != nil || string(got) != "value" {
		t.Fatalf("Get(key) = %q, %v; want %q", got, err, "value")
	}
	copy(got, "YYYYY") // the returned value is the caller's
	if again := mustGet(t, db, "key"); again != "value" {
		t.Errorf("after mutating a returned value, Get = %q, want %q", again, "value")
	}
}

func TestView(t *testing.T) {
	db := openMem(t)
	apply(t, db, func(b *Batch) {
		b.Set([]byte("a"), []byte("value"))
		b.Set([]byte("empty"), nil)
	})
	var got string
	if err := db.View([]byte("a"), func(v []byte) error { got = string(v); return nil }); err != nil || got != "value" {
		t.Errorf("View(a) saw %q, %v; want %q", got, err, "value")
	}
	called := false
	if err := db.View([]byte("empty"), func(v []byte) error { called = len(v) == 0; return nil }); err != nil || !called {
		t.Errorf("View(empty): called with an empty value %v, err %v", called, err)
	}
	called = false
	if err := db.View([]byte("absent"), func([]byte) error { called = true; return nil }); !errors.Is(err, ErrNotFound) || called {
		t.Errorf("View(absent) = %v, fn called %v; want ErrNotFound without a call", err, called)
	}
	errFn := errors.New("from fn")
	if err := db.View([]byte("a"), func([]byte) error { return errFn }); err != errFn {
		t.Errorf("View with a failing fn = %v, want fn's error", err)
	}
	db.Close()
	if err := db.View([]byte("a"), func([]byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("View after Close = %v, want ErrClosed", err)
	}
}

func TestBatch(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	defer b.Close()
	if b.Len() != 0 {
		t.Errorf("empty Len = %d", b.Len())
	}
	b.Set([]byte("k"), make([]byte, 1000))
	b.Delete([]byte("j"))
	b.AddCounter([]byte("c"), 1)
	b.DeleteRange([]byte("x"), []byte("y"))
	b.DeleteRange([]byte("z"), []byte("z")) // empty: no-op
	if got, want := b.Len(), 4; got != want {
		t.Errorf("Len = %d, want %d", got, want)
	}
	if b.Size() < 1000 {
		t.Errorf("Size = %d, want >= 1000", b.Size())
	}
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(b); err == nil {
		t.Error("second Apply of the same batch succeeded")
	}
	b.Set([]byte("late"), nil)
	wantNotFound(t, db, "late")

	empty := db.NewBatch()
	defer empty.Close()
	if err := db.Apply(empty); err != nil {
		t.Errorf("Apply(empty) = %v", err)
	}
}

// TestLargeBatch applies a batch the size of the largest DynamoDB
// transaction (100 items of 400 KB): Pebble commits batches over half a
// memtable as their own flushable memtable.
func TestLargeBatch(t *testing.T) {
	db := openMem(t)
	value := bytes.Repeat([]byte("x"), 400<<10)
	apply(t, db, func(b *Batch) {
		for i := range 100 {
			b.Set(fmt.Appendf(nil, "item%03d", i), value)
		}
		if b.Len() != 100 || b.Size() < 100*len(value) {
			t.Errorf("Len, Size = %d, %d", b.Len(), b.Size())
		}
	})
	for _, k := range []string{"item000", "item099"} {
		if got := mustGet(t, db, k); len(got) != len(value) {
			t.Errorf("len(%s) = %d, want %d", k, len(got), len(value))
		}
	}
}

func TestBatchErrorsApplyNothing(t *testing.T) {
	db := openMem(t)
	other := openMem(t)
	for _, tc := range []struct {
		name string
		fill func(*Batch)
	}{
		{"inverted range", func(b *Batch) { b.DeleteRange([]byte("b"), []byte("a")) }},
		{"nil upper bound", func(b *Batch) { b.DeleteRange([]byte("a"), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := db.NewBatch()
			defer b.Close()
			b.Set([]byte("before"), []byte("x"))
			tc.fill(b)
			b.Set([]byte("after"), []byte("x"))
			if err := db.Apply(b); err == nil {
				t.Fatal("Apply succeeded")
			}
			wantNotFound(t, db, "before")
			wantNotFound(t, db, "after")
		})
	}
	t.Run("other DB", func(t *testing.T) {
		b := other.NewBatch()
		defer b.Close()
		b.Set([]byte("k"), nil)
		if err := db.Apply(b); err == nil {
			t.Fatal("Apply of another DB's batch succeeded")
		}
	})
	t.Run("closed batch", func(t *testing.T) {
		b := db.NewBatch()
		b.Set([]byte("k"), nil)
		b.Close()
		b.Close()
		if b.Len() != 0 || b.Size() != 0 {
			t.Errorf("closed batch Len, Size = %d, %d", b.Len(), b.Size())
		}
		if err := db.Apply(b); err == nil {
			t.Fatal("Apply of a closed batch succeeded")
		}
	})
}

func TestDeleteRange(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	apply(t, db, func(b *Batch) {
		for _, k := range []string{"t1/a", "t1/b", "t2/a", "t2/b", "t3/a"} {
			b.Set([]byte(k), []byte(k))
		}
		b.AddCounter([]byte("t2/n"), 5)
	})
	if err := db.Flush(); err != nil { // half in sstables, half in the memtable
		t.Fatal(err)
	}
	apply(t, db, func(b *Batch) { b.Set([]byte("t2/c"), nil) })

	if err := db.DeleteRange([]byte("t2/"), []byte("t20")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"t2/a", "t2/b", "t2/c"} {
		wantNotFound(t, db, k)
	}
	if n, err := db.Counter([]byte("t2/n")); err != nil || n != 0 {
		t.Errorf("Counter(t2/n) = %d, %v; want 0", n, err)
	}
	for _, k := range []string{"t1/a", "t1/b", "t3/a"} {
		mustGet(t, db, k)
	}
	if err := db.DeleteRange([]byte("b"), []byte("a")); err == nil {
		t.Error("DeleteRange with inverted bounds succeeded")
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{})
	apply(t, db, func(b *Batch) {
		b.Set([]byte("flushed"), []byte("1"))
		b.AddCounter([]byte("n"), 40)
	})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	apply(t, db, func(b *Batch) {
		b.Set([]byte("in-wal"), []byte("2"))
		b.AddCounter([]byte("n"), 2)
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openT(t, dir, Options{})
	if got := mustGet(t, db, "flushed"); got != "1" {
		t.Errorf("flushed = %q", got)
	}
	if got := mustGet(t, db, "in-wal"); got != "2" {
		t.Errorf("in-wal = %q", got)
	}
	if n, err := db.Counter([]byte("n")); err != nil || n != 42 {
		t.Errorf("Counter(n) = %d, %v; want 42", n, err)
	}
}

func TestClose(t *testing.T) {
	db := openMem(t)
	apply(t, db, func(b *Batch) { b.Set([]byte("a"), []byte("1")) })
	it := db.NewIter(nil, nil)
	if !it.First() {
		t.Fatalf("First = false, err %v", it.Error())
	}
	snap := db.NewSnapshot()
	b := db.NewBatch()
	b.Set([]byte("b"), nil)

	if err := db.Close(); err != nil {
		t.Fatalf("Close with an open iterator and snapshot: %v", err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}

	// Everything reports ErrClosed (or false) instead of touching freed memory.
	if _, err := db.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get = %v, want ErrClosed", err)
	}
	if _, err := db.Counter([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Counter = %v, want ErrClosed", err)
	}
	if err := db.Apply(b); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply = %v, want ErrClosed", err)
	}
	b.Close()
	if err := db.DeleteRange([]byte("a"), []byte("b")); !errors.Is(err, ErrClosed) {
		t.Errorf("DeleteRange = %v, want ErrClosed", err)
	}
	if err := db.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush = %v, want ErrClosed", err)
	}
	if _, err := db.Metrics(); !errors.Is(err, ErrClosed) {
		t.Errorf("Metrics = %v, want ErrClosed", err)
	}
	if it.Valid() || it.Next() || it.First() || it.Key() != nil || it.Value() != nil {
		t.Error("iterator still usable after DB.Close")
	}
	if err := it.Error(); !errors.Is(err, ErrClosed) {
		t.Errorf("Iter.Error = %v, want ErrClosed", err)
	}
	if err := it.Close(); err != nil {
		t.Errorf("Iter.Close after DB.Close = %v", err)
	}
	if _, err := snap.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Snapshot.Get = %v, want ErrClosed", err)
	}
	if err := snap.Close(); err != nil {
		t.Errorf("Snapshot.Close after DB.Close = %v", err)
	}
	it2 := db.NewIter(nil, nil)
	if it2.First() || !errors.Is(it2.Error(), ErrClosed) {
		t.Errorf("NewIter after Close: First ok or Error = %v, want ErrClosed", it2.Error())
	}
	if s := db.NewSnapshot(); !errors.Is(s.NewIter(nil, nil).Error(), ErrClosed) {
		t.Error("NewSnapshot after Close: NewIter did not report ErrClosed")
	}
}

// TestConcurrentUseAndClose is for the race detector: writers, readers and
// iterators run while the DB closes under them.
func TestConcurrentUseAndClose(t *testing.T) {
	db := openMem(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Appendf(nil, "k%d/%04d", g, i%100)
				b := db.NewBatch()
				b.Set(key, key)
				b.AddCounter([]byte("n"), 1)
				err := db.Apply(b)
				b.Close()
				if errors.Is(err, ErrClosed) {
					return
				} else if err != nil {
					t.Errorf("Apply: %v", err)
					return
				}
				if _, err := db.Get(key); errors.Is(err, ErrClosed) {
					return
				} else if err != nil {
					t.Errorf("Get: %v", err)
				}
				it := db.NewIter([]byte("k"), []byte("l"))
				for ok := it.First(); ok; ok = it.Next() {
					// Close may land between Key and Value; then Value is nil.
					k, v := it.Key(), it.Value()
					if !bytes.Equal(k, v) && !errors.Is(it.Error(), ErrClosed) {
						t.Errorf("key %q has value %q", k, v)
					}
				}
				err = it.Error()
				it.Close()
				if errors.Is(err, ErrClosed) {
					return
				} else if err != nil {
					t.Errorf("iterate: %v", err)
				}
			}
		})
	}
	for {
		if n, _ := db.Counter([]byte("n")); n >= 200 {
			break
		}
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
}

func TestMetrics(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	for i := range 10 {
		apply(t, db, func(b *Batch) { b.Set(fmt.Appendf(nil, "k%d", i), make([]byte, 1024)) })
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := db.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.DiskUsageBytes < 10*1024/4 { // snappy compresses zeros, but not to nothing
		t.Errorf("DiskUsageBytes = %d, want some", m.DiskUsageBytes)
	}
	if m.WALSyncsTotal == 0 || m.WALSyncsTotal > 10+2 {
		t.Errorf("WALSyncsTotal = %d after 10 synced serial applies", m.WALSyncsTotal)
	}
	if m.FlushesTotal < 1 {
		t.Errorf("FlushesTotal = %d, want >= 1", m.FlushesTotal)
	}
	n, err := db.EstimateDiskUsage([]byte("k"), []byte("l"))
	if err != nil || n == 0 {
		t.Errorf("EstimateDiskUsage = %d, %v; want > 0", n, err)
	}
}

func TestNoSyncSkipsFsync(t *testing.T) {
	db := openT(t, t.TempDir(), Options{NoSync: true})
	for i := range 50 {
		apply(t, db, func(b *Batch) { b.Set(fmt.Appendf(nil, "k%d", i), nil) })
	}
	m, err := db.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.WALSyncsTotal > 2 {
		t.Errorf("WALSyncsTotal = %d with NoSync, want ~0", m.WALSyncsTotal)
	}
	if got := mustGet(t, db, "k49"); got != "" {
		t.Errorf("k49 = %q", got)
	}
}

func TestOpenLockedDir(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir, Options{})
	if db, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)}); err == nil {
		db.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
}
