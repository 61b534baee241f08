package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestSharedStoresReopen opens several small stores on one Shared, closes
// them and opens them again: each finds its own data, in memory and on disk.
func TestSharedStoresReopen(t *testing.T) {
	for _, inMem := range []bool{true, false} {
		t.Run(fmt.Sprint("inMemory=", inMem), func(t *testing.T) {
			sh := NewShared(1<<20, 16)
			defer sh.Close()
			root := t.TempDir()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			open := func(i int) *DB {
				db, err := Open(filepath.Join(root, fmt.Sprint(i)), Options{InMemory: inMem, Shared: sh, Small: true, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				return db
			}
			for round := 0; round < 3; round++ {
				for i := 0; i < 5; i++ {
					db := open(i)
					if round > 0 {
						v, err := db.Get([]byte("k"))
						if want := fmt.Sprintf("%d.%d", i, round-1); err != nil || string(v) != want {
							t.Fatalf("round %d store %d: got %q, %v; want %q", round, i, v, err, want)
						}
					}
					apply(t, db, func(b *Batch) { b.Set([]byte("k"), fmt.Appendf(nil, "%d.%d", i, round)) })
					if err := db.CloseIdle(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if inMem {
				if !sh.ExistsInMemory(filepath.Join(root, "3")) {
					t.Fatal("in-memory store 3 not kept")
				}
				sh.RemoveInMemory(filepath.Join(root, "3"))
				if sh.ExistsInMemory(filepath.Join(root, "3")) || !sh.ExistsInMemory(filepath.Join(root, "4")) {
					t.Fatal("RemoveInMemory removed the wrong stores")
				}
				db := open(3)
				defer db.Close()
				if _, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
					t.Fatalf("removed store still holds data: %v", err)
				}
			}
		})
	}
}

// TestSmallStoreClosedIdleIsSmall shows what CloseIdle is for: Pebble keeps
// a used WAL (1.1 MB preallocated for a small store) to reuse; CloseIdle
// flushes and removes it, and the closed store takes a few KB of disk.
func TestSmallStoreClosedIdleIsSmall(t *testing.T) {
	sh := NewShared(1<<20, 16)
	defer sh.Close()
	dir := t.TempDir()
	db, err := Open(dir, Options{Shared: sh, Small: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, db, func(b *Batch) { b.Set([]byte("k"), []byte("v")) })
	if err := db.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	if n := diskBytes(t, dir); n > 256<<10 {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error { t.Log(p, fi.Size(), allocated(fi)); return nil })
		t.Fatalf("a closed small store holding one key uses %d bytes of disk, want < 256 KB", n)
	}
}

// diskBytes is the disk space (allocated blocks, as du counts) under dir.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		n += allocated(fi)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
