package storage

import (
	"bytes"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// maxBatchSize bounds a batch's encoded size well below Pebble's 4 GiB limit,
// which Pebble enforces with a panic.
const maxBatchSize = 1 << 30

var (
	// errBatchTooLarge is recorded by a Batch that grows past maxBatchSize.
	errBatchTooLarge = errors.New("storage: batch too large")
	// errBatchClosed is recorded by Close, so later use fails.
	errBatchClosed = errors.New("storage: batch closed")
)

// Batch collects writes that DB.Apply commits atomically. Its methods copy
// their arguments. A Batch is not safe for concurrent use; reads do not see
// its contents until it is applied.
//
// Writing methods return nothing: the first misuse (an inverted range, a
// batch past 1 GiB) is recorded and returned by DB.Apply, which then applies
// nothing. Every Batch must be closed, applied or not.
type Batch struct {
	db      *DB
	pb      *pebble.Batch
	err     error
	applied bool
	buf     [counterLen]byte
}

// NewBatch returns an empty batch for db.
func (db *DB) NewBatch() *Batch {
	return &Batch{db: db, pb: db.pdb.NewBatch()}
}

func (b *Batch) ok(extra int) bool {
	if b.err != nil {
		return false
	}
	if b.applied {
		b.err = errors.New("storage: write to an applied batch")
		return false
	}
	if b.pb.Len()+extra+32 > maxBatchSize {
		b.err = errBatchTooLarge
		return false
	}
	return true
}

// Set stores value at key, replacing any previous value or counter.
func (b *Batch) Set(key, value []byte) {
	if b.ok(len(key) + len(value)) {
		_ = b.pb.Set(key, value, nil) // only fails for indexed batches
	}
}

// Delete removes key.
func (b *Batch) Delete(key []byte) {
	if b.ok(len(key)) {
		_ = b.pb.Delete(key, nil)
	}
}

// DeleteRange removes every key in [lo, hi). lo == hi is a no-op; a nil hi or
// lo > hi records an error.
func (b *Batch) DeleteRange(lo, hi []byte) {
	if !b.ok(len(lo) + len(hi)) {
		return
	}
	switch c := bytes.Compare(lo, hi); {
	case hi == nil:
		b.err = errors.New("storage: DeleteRange needs an upper bound")
	case c > 0:
		b.err = errors.New("storage: DeleteRange bounds are inverted")
	case c < 0:
		_ = b.pb.DeleteRange(lo, hi, nil)
	}
}

// AddCounter adds delta (which may be negative) to the counter at key; an
// absent key counts as 0. NB: a key is either a counter or a plain value.
// Setting a counter key to anything but an 8-byte counter encoding makes
// later reads of it fail (DESIGN.md).
func (b *Batch) AddCounter(key []byte, delta int64) {
	if b.ok(len(key) + counterLen) {
		_ = b.pb.Merge(key, encodeCounter(b.buf[:0], delta), nil)
	}
}

// Len returns the number of operations in the batch (0 once closed).
func (b *Batch) Len() int {
	if b.pb == nil {
		return 0
	}
	return int(b.pb.Count())
}

// Size returns the encoded size of the batch in bytes, roughly what it adds
// to the WAL (0 once closed).
func (b *Batch) Size() int {
	if b.pb == nil {
		return 0
	}
	return b.pb.Len()
}

// Close releases the batch. It is safe to call more than once.
func (b *Batch) Close() {
	if b.pb != nil {
		_ = b.pb.Close()
		b.pb = nil
		if b.err == nil {
			b.err = errBatchClosed
		}
	}
}
