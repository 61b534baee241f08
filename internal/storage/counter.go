package storage

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// counterLen is the size of an encoded counter and of every merge operand.
const counterLen = 8

// counterMerger is the only merge operator of the store: every Merge record
// is a signed 64-bit addend, and merging adds them with two's-complement
// wrap-around (associative and commutative, as Pebble requires; saturating
// addition would not be associative).
//
// NB: Name is persisted in the OPTIONS file and checked on Open. Never change
// it; a different encoding needs a new merger and a migration.
var counterMerger = &pebble.Merger{
	Name: "tenantdb.counter.v1",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &counterValueMerger{}
		if err := m.add(value); err != nil {
			return nil, err
		}
		return m, nil
	},
}

type counterValueMerger struct {
	sum int64
	buf [counterLen]byte
}

func (m *counterValueMerger) add(v []byte) error {
	d, err := DecodeCounter(v)
	if err != nil {
		return err
	}
	m.sum += d
	return nil
}

func (m *counterValueMerger) MergeNewer(value []byte) error { return m.add(value) }
func (m *counterValueMerger) MergeOlder(value []byte) error { return m.add(value) }

func (m *counterValueMerger) Finish(bool) ([]byte, io.Closer, error) {
	binary.BigEndian.PutUint64(m.buf[:], uint64(m.sum))
	return m.buf[:], nil, nil
}

// encodeCounter appends the 8-byte big-endian two's-complement encoding of v.
func encodeCounter(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// DecodeCounter decodes the 8-byte value a counter key holds, as returned by
// Get or an Iter. It returns an error if v is not exactly 8 bytes.
func DecodeCounter(v []byte) (int64, error) {
	if len(v) != counterLen {
		return 0, fmt.Errorf("storage: counter value is %d bytes, want %d", len(v), counterLen)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// SetCounter sets counter key to v (a base later AddCounter calls add to).
func (b *Batch) SetCounter(key []byte, v int64) { b.Set(key, encodeCounter(nil, v)) }

// EncodeCounter returns the value a counter key holding v has (what
// DecodeCounter decodes), for stores of counters other than this one.
func EncodeCounter(v int64) []byte { return encodeCounter(nil, v) }
