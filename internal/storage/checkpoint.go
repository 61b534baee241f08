package storage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a copy of the store as of this moment into dir, which
// must not exist (its parent must): sstables are hard-linked when dir is
// on the same file system (they are immutable), the manifest and the WAL
// are copied, the WAL first synced so that writes applied without a sync
// are in the copy too. A store opened on dir sees exactly the writes
// applied before Checkpoint began. (An in-memory store's copy is written
// into its own in-memory file system.)
func (db *DB) Checkpoint(dir string) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if err := db.pdb.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("storage: checkpoint %s: %w", db.dir, err)
	}
	return nil
}

// CopyClosed copies the closed store in src to dst (which must not
// exist), with everything else src holds (subdirectories included): the
// caller makes sure nothing opens src meanwhile. Sstables and blob files
// are hard-linked when possible (immutable once written), every other file
// is copied and synced. This is Checkpoint for a store that is not open:
// opening it to checkpoint would cost an open (a WAL, a memtable,
// descriptors) per store.
func CopyClosed(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if immutable(d.Name()) {
			if err := os.Link(path, to); err == nil {
				return nil
			}
		}
		return copyFile(path, to)
	})
}

// immutable reports whether a store file never changes once written.
func immutable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
