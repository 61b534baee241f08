package storage

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Snapshot is a consistent, read-only view of the DB as of NewSnapshot:
// later writes are invisible to it. Get, Counter and NewIter may be called
// concurrently; Close must not race with them. A snapshot keeps the versions
// it can see from being compacted away, so close it promptly.
type Snapshot struct {
	db *DB
	// snap is nil once the snapshot or its DB is closed. It is written by
	// Close (owner, db.mu read-held) or DB.Close (db.mu write-held) and read
	// under db.mu read-held.
	snap *pebble.Snapshot
	err  error // why the snapshot is unusable when snap is nil
}

// NewSnapshot returns a snapshot of the latest data. Errors, including
// ErrClosed, are reported by the snapshot's methods.
func (db *DB) NewSnapshot() *Snapshot {
	if err := db.enter(); err != nil {
		return &Snapshot{err: err}
	}
	defer db.mu.RUnlock()
	s := &Snapshot{db: db, snap: db.pdb.NewSnapshot()}
	db.open.Lock()
	db.open.snaps[s] = struct{}{}
	db.open.Unlock()
	return s
}

// use runs f with the live Pebble snapshot, or returns the reason it is
// unusable (ErrClosed after Close or DB.Close).
func (s *Snapshot) use(f func(*pebble.Snapshot) error) error {
	if s.db == nil {
		return s.err
	}
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	if s.snap == nil {
		return ErrClosed
	}
	return f(s.snap)
}

// Get is DB.Get as of the snapshot.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	var v []byte
	err := s.use(func(snap *pebble.Snapshot) error {
		var err error
		v, err = get(snap, key)
		return err
	})
	return v, err
}

// Counter is DB.Counter as of the snapshot.
func (s *Snapshot) Counter(key []byte) (int64, error) {
	var n int64
	err := s.use(func(snap *pebble.Snapshot) error {
		var err error
		n, err = counter(snap, key)
		return err
	})
	return n, err
}

// NewIter is DB.NewIter as of the snapshot. Close the iterator before the
// snapshot.
func (s *Snapshot) NewIter(lower, upper []byte) *Iter {
	var it *Iter
	err := s.use(func(snap *pebble.Snapshot) error {
		it = s.db.newIter(snap, lower, upper)
		return nil
	})
	if err != nil {
		return &Iter{err: err}
	}
	return it
}

// Close releases the snapshot. It is safe to call more than once and after
// DB.Close.
func (s *Snapshot) Close() error {
	if s.db == nil {
		return nil
	}
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	if s.snap == nil {
		return nil
	}
	s.db.open.Lock()
	delete(s.db.open.snaps, s)
	s.db.open.Unlock()
	if err := s.release(); err != nil {
		return fmt.Errorf("storage: close snapshot: %w", err)
	}
	return nil
}

// release closes the Pebble snapshot. REQUIRES: db.mu held, and exclusive
// access to s (the owner under the read lock, or DB.Close under the write
// lock).
func (s *Snapshot) release() error {
	err := s.snap.Close()
	s.snap = nil
	return err
}
