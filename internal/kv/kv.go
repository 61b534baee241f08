// Package kv is the seam between the control plane and where its records
// live: an ordered key-value store with atomic, conditional batches.
//
// The catalog (tenants, slugs, credentials, memberships, invitations), the
// audit log, quota records and usage counters, and the tenants' wrapped
// data keys are written through it. Each of those packages declares the
// Store interface it consumes (Get, Scan, Apply); two implementations
// satisfy them all:
//
//   - Local, here: the embedded server's Pebble store. Conditions are
//     checked under one mutex of the process, which is the only writer
//     of its store.
//   - enginekv.Store: a DynamoDB-API engine shared by a fleet of
//     gateways. Conditions are the engine's condition expressions and a
//     multi-key batch is one TransactWriteItems, so two gateways racing
//     for one key are ordered by the engine, never by a gateway's lock.
//
// NB: read-modify-write in a consumer is always "read, build a batch whose
// conditions say what was read, Apply, and on ErrConflict read again":
// that is what makes it correct with several writers, whatever the
// implementation.
package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrNotFound is returned by Get for an absent key.
var ErrNotFound = errors.New("kv: not found")

// ErrConflict is in the chain of Apply's error when a condition of the
// batch did not hold; nothing of the batch was written.
var ErrConflict = errors.New("kv: condition failed")

// OpKind says what an Op does.
type OpKind uint8

// The kinds of Op.
const (
	OpSet         OpKind = iota + 1 // store Value at Key
	OpDelete                        // remove Key
	OpAdd                           // add Delta to the counter at Key (absent counts as 0)
	OpCheck                         // only check the condition on Key
	OpDeleteRange                   // remove every key in [Key, End)
)

// Cond is a condition on the value a key holds before the batch.
type Cond uint8

// The conditions.
const (
	CondNone    Cond = iota // no condition
	CondAbsent              // the key holds nothing
	CondEquals              // the key holds exactly Op.Old
	CondPresent             // the key holds something
)

// Op is one operation of a Batch.
type Op struct {
	Kind  OpKind
	Key   []byte
	Value []byte // OpSet
	Delta int64  // OpAdd
	End   []byte // OpDeleteRange
	Cond  Cond
	Old   []byte // CondEquals
}

// Batch is a list of operations that Apply commits atomically: all or
// none, and none if any condition fails. A key appears at most once in a
// batch (the engine refuses two actions on one item in a transaction).
//
// NB: on a DynamoDB-API engine a batch is atomic only up to 100 operations
// and only without DeleteRange (enginekv/DESIGN.md says what happens
// beyond); every batch the control plane builds with a condition stays
// within that.
type Batch struct {
	Ops []Op
	// NoSync lets Local acknowledge before its WAL is synced (storage's
	// ApplyNoSync); it is durable with the next synced write. The engine
	// ignores it (every engine write is durable when acknowledged).
	NoSync bool
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// Set stores value at key, unconditionally.
func (b *Batch) Set(key, value []byte) {
	b.Ops = append(b.Ops, Op{Kind: OpSet, Key: clone(key), Value: clone(value)})
}

// SetIfAbsent stores value at key if key holds nothing.
func (b *Batch) SetIfAbsent(key, value []byte) {
	b.Ops = append(b.Ops, Op{Kind: OpSet, Key: clone(key), Value: clone(value), Cond: CondAbsent})
}

// SetIfEquals stores value at key if key holds exactly old (nothing, if
// old is nil).
func (b *Batch) SetIfEquals(key, old, value []byte) {
	op := Op{Kind: OpSet, Key: clone(key), Value: clone(value), Cond: CondEquals, Old: clone(old)}
	if old == nil {
		op.Cond = CondAbsent
	}
	b.Ops = append(b.Ops, op)
}

// Delete removes key, unconditionally.
func (b *Batch) Delete(key []byte) {
	b.Ops = append(b.Ops, Op{Kind: OpDelete, Key: clone(key)})
}

// DeleteIfEquals removes key if it holds exactly old.
func (b *Batch) DeleteIfEquals(key, old []byte) {
	b.Ops = append(b.Ops, Op{Kind: OpDelete, Key: clone(key), Cond: CondEquals, Old: clone(old)})
}

// Expect makes the batch conditional on key holding exactly old (nothing,
// if old is nil) without writing key.
func (b *Batch) Expect(key, old []byte) {
	op := Op{Kind: OpCheck, Key: clone(key), Cond: CondEquals, Old: clone(old)}
	if old == nil {
		op.Cond = CondAbsent
	}
	b.Ops = append(b.Ops, op)
}

// ExpectPresent makes the batch conditional on key holding something,
// without writing key.
func (b *Batch) ExpectPresent(key []byte) {
	b.Ops = append(b.Ops, Op{Kind: OpCheck, Key: clone(key), Cond: CondPresent})
}

// Add adds delta to the counter at key.
func (b *Batch) Add(key []byte, delta int64) {
	b.Ops = append(b.Ops, Op{Kind: OpAdd, Key: clone(key), Delta: delta})
}

// DeleteRange removes every key in [lo, hi).
func (b *Batch) DeleteRange(lo, hi []byte) {
	b.Ops = append(b.Ops, Op{Kind: OpDeleteRange, Key: clone(lo), End: clone(hi)})
}

// Len returns the number of operations.
func (b *Batch) Len() int { return len(b.Ops) }

// Conditional reports whether any operation carries a condition.
func (b *Batch) Conditional() bool {
	for _, op := range b.Ops {
		if op.Cond != CondNone {
			return true
		}
	}
	return false
}

// Holds reports whether a key holding cur (nil: nothing) satisfies op's
// condition.
func (op *Op) Holds(cur []byte) bool {
	switch op.Cond {
	case CondAbsent:
		return cur == nil
	case CondPresent:
		return cur != nil
	case CondEquals:
		return cur != nil && bytes.Equal(cur, op.Old)
	}
	return true
}

// CounterLen is the size of an encoded counter.
const CounterLen = 8

// EncodeCounter returns the 8-byte big-endian encoding of v, the value
// Get and Scan return for a key written with Add.
func EncodeCounter(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// DecodeCounter decodes a counter value.
func DecodeCounter(v []byte) (int64, error) {
	if len(v) != CounterLen {
		return 0, fmt.Errorf("kv: counter value is %d bytes, want %d", len(v), CounterLen)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// Store is what every implementation provides; consumers declare their
// own copy of it (or the part they use).
type Store interface {
	// Get returns the value at key, ErrNotFound if absent.
	Get(ctx context.Context, key []byte) ([]byte, error)
	// Scan calls f for every key in [lo, hi) in ascending order until f
	// returns false. k and v are valid only during the call. On the
	// engine, lo and hi must lie in one partition (keyspace.Partition).
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	// Apply commits b (see Batch). Errors: ErrConflict.
	Apply(ctx context.Context, b *Batch) error
}
