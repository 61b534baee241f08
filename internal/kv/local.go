package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tenantdb/tenantdb/internal/storage"
)

// Local is the Store of the embedded server, over its Pebble store.
type Local struct {
	db *storage.DB
	// mu makes checking a batch's conditions and applying it one step.
	// NB: one process owns a Pebble store, and every conditional write of
	// the control plane goes through this one Local, so the mutex is the
	// whole serialization (unconditional batches skip it).
	mu sync.Mutex
}

// NewLocal returns the Store over db. Open one per store.
func NewLocal(db *storage.DB) *Local { return &Local{db: db} }

// Get implements Store.
func (l *Local) Get(_ context.Context, key []byte) ([]byte, error) {
	v, err := l.db.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNotFound
	}
	return v, err
}

// Scan implements Store.
func (l *Local) Scan(_ context.Context, lo, hi []byte, f func(k, v []byte) bool) error {
	it := l.db.NewIter(lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		if !f(it.Key(), it.Value()) {
			break
		}
	}
	err := it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// Apply implements Store.
func (l *Local) Apply(_ context.Context, b *Batch) error {
	if len(b.Ops) == 0 {
		return nil
	}
	if b.Conditional() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i := range b.Ops {
			op := &b.Ops[i]
			if op.Cond == CondNone {
				continue
			}
			cur, err := l.db.Get(op.Key)
			if errors.Is(err, storage.ErrNotFound) {
				cur, err = nil, nil
			}
			if err != nil {
				return err
			}
			if !op.Holds(cur) {
				return fmt.Errorf("%w: key %q", ErrConflict, op.Key)
			}
		}
	}
	sb := l.db.NewBatch()
	defer sb.Close()
	for _, op := range b.Ops {
		switch op.Kind {
		case OpSet:
			sb.Set(op.Key, op.Value)
		case OpDelete:
			sb.Delete(op.Key)
		case OpAdd:
			sb.AddCounter(op.Key, op.Delta)
		case OpDeleteRange:
			sb.DeleteRange(op.Key, op.End)
		}
	}
	if b.NoSync {
		return l.db.ApplyNoSync(sb)
	}
	return l.db.Apply(sb)
}

// SyncWAL makes batches applied with NoSync durable.
func (l *Local) SyncWAL() error { return l.db.SyncWAL() }

var _ Store = (*Local)(nil)
