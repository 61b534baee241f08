package storage

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Iter walks the keys in [lower, upper) in byte order, forwards or
// backwards. The zero position is unpositioned: call First, Last, SeekGE or
// SeekLT. Positioning methods report whether the iterator is now at a key.
//
// An Iter is not safe for concurrent use. When a positioning method returns
// false, check Error: false with a nil error means the range is exhausted.
// Every Iter must be closed.
type Iter struct {
	db *DB
	// it and err are written by Close and by DB.Close (under db.mu held for
	// writing); methods read them under db.mu held for reading.
	it  *pebble.Iterator
	err error
}

// NewIter returns an iterator over [lower, upper) of the latest data. A nil
// bound is unbounded. Errors, including ErrClosed, are reported by Error.
func (db *DB) NewIter(lower, upper []byte) *Iter {
	if err := db.enter(); err != nil {
		return &Iter{err: err}
	}
	defer db.mu.RUnlock()
	return db.newIter(db.pdb, lower, upper)
}

// newIter creates and registers an iterator. REQUIRES: db.mu read-held.
func (db *DB) newIter(r pebble.Reader, lower, upper []byte) *Iter {
	// NB: Pebble keeps references to the bounds; copy them so the caller may
	// reuse its slices.
	o := &pebble.IterOptions{LowerBound: clone(lower), UpperBound: clone(upper)}
	pit, err := r.NewIter(o)
	if err != nil {
		return &Iter{err: fmt.Errorf("storage: new iterator: %w", err)}
	}
	it := &Iter{db: db, it: pit}
	db.open.Lock()
	db.open.iters[it] = struct{}{}
	db.open.Unlock()
	return it
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// do runs f on the live Pebble iterator, or returns false if the iterator is
// closed, failed to open or its DB is closed.
func (i *Iter) do(f func(*pebble.Iterator) bool) bool {
	if i.db == nil {
		return false
	}
	i.db.mu.RLock()
	defer i.db.mu.RUnlock()
	if i.it == nil {
		return false
	}
	return f(i.it)
}

// First moves to the first key in range.
func (i *Iter) First() bool { return i.do((*pebble.Iterator).First) }

// Last moves to the last key in range.
func (i *Iter) Last() bool { return i.do((*pebble.Iterator).Last) }

// Next moves to the next key.
func (i *Iter) Next() bool { return i.do((*pebble.Iterator).Next) }

// Prev moves to the previous key.
func (i *Iter) Prev() bool { return i.do((*pebble.Iterator).Prev) }

// SeekGE moves to the first key >= key (clamped to the lower bound).
func (i *Iter) SeekGE(key []byte) bool {
	return i.do(func(it *pebble.Iterator) bool { return it.SeekGE(key) })
}

// SeekLT moves to the last key < key (clamped to the upper bound).
func (i *Iter) SeekLT(key []byte) bool {
	return i.do(func(it *pebble.Iterator) bool { return it.SeekLT(key) })
}

// Valid reports whether the iterator is at a key.
func (i *Iter) Valid() bool { return i.do((*pebble.Iterator).Valid) }

// Key returns a copy of the current key, or nil if not Valid.
func (i *Iter) Key() []byte {
	var k []byte
	i.do(func(it *pebble.Iterator) bool {
		if it.Valid() {
			k = clone(it.Key())
		}
		return true
	})
	return k
}

// Value returns a copy of the current value, or nil if not Valid or if the
// value cannot be read; in that case the iterator becomes invalid and Error
// reports why.
func (i *Iter) Value() []byte {
	var v []byte
	i.do(func(it *pebble.Iterator) bool {
		if !it.Valid() {
			return true
		}
		pv, err := it.ValueAndErr()
		if err == nil {
			v = append(make([]byte, 0, len(pv)), pv...)
		}
		return true
	})
	return v
}

// Error returns the error that stopped iteration, if any: an I/O or
// corruption error, or ErrClosed once the iterator or its DB is closed.
func (i *Iter) Error() error {
	if i.db == nil {
		return i.err
	}
	i.db.mu.RLock()
	defer i.db.mu.RUnlock()
	if i.it == nil {
		return i.err
	}
	if err := i.it.Error(); err != nil {
		return fmt.Errorf("storage: iterate: %w", err)
	}
	return nil
}

// Close releases the iterator and returns the error that stopped iteration,
// if any. Later calls to its methods report ErrClosed. It is safe to call
// Close more than once, and after DB.Close.
func (i *Iter) Close() error {
	if i.db == nil {
		return nil
	}
	i.db.mu.RLock()
	defer i.db.mu.RUnlock()
	if i.it == nil {
		return nil
	}
	err := i.release()
	i.db.open.Lock()
	delete(i.db.open.iters, i)
	i.db.open.Unlock()
	if err != nil {
		return fmt.Errorf("storage: iterate: %w", err)
	}
	return nil
}

// release closes the Pebble iterator. REQUIRES: db.mu held, and exclusive
// access to i (the owner under the read lock, or Close under the write lock).
func (i *Iter) release() error {
	err := i.it.Close()
	i.it, i.err = nil, ErrClosed
	return err
}
