package engine

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
)

// keySpan is a half-open range [lo, hi) of physical keys.
type keySpan struct{ lo, hi []byte }

// empty reports whether the span holds no key.
func (s keySpan) empty() bool { return bytes.Compare(s.lo, s.hi) >= 0 }

// sortKeySpan returns the physical keys, under prefix p (everything up to and
// including the encoded partition key), whose next encoded value — the sort
// key of the table or index — satisfies op on vals. Keys may continue after
// the sort key (index entries append the table's key).
//
// NB: attr.AppendKey is order-preserving and self-delimiting (prefix-free),
// so every key whose sort key equals v starts with p+enc(v), and keys whose
// sort key is smaller (greater) than v sort before (after) all of them. Hence
// "= v" is the prefix span of p+enc(v), "> v" starts at its prefix end, and
// "< v" ends at p+enc(v). begins_with uses the escaped prefix without the
// terminator: every S/B value starting with the prefix encodes to bytes
// starting with it, and no other value does.
func sortKeySpan(p []byte, op expr.KeyOp, vals []attr.Value) keySpan {
	all := keySpan{lo: p, hi: keyspace.PrefixEnd(p)}
	if op == 0 {
		return all
	}
	at := func(v attr.Value) []byte { return attr.AppendKey(bytes.Clone(p), v) }
	switch op {
	case expr.KeyEQ:
		k := at(vals[0])
		return keySpan{lo: k, hi: keyspace.PrefixEnd(k)}
	case expr.KeyLT:
		return keySpan{lo: all.lo, hi: at(vals[0])}
	case expr.KeyLE:
		return keySpan{lo: all.lo, hi: keyspace.PrefixEnd(at(vals[0]))}
	case expr.KeyGT:
		return keySpan{lo: keyspace.PrefixEnd(at(vals[0])), hi: all.hi}
	case expr.KeyGE:
		return keySpan{lo: at(vals[0]), hi: all.hi}
	case expr.KeyBetween:
		return keySpan{lo: at(vals[0]), hi: keyspace.PrefixEnd(at(vals[1]))}
	case expr.KeyBeginsWith:
		k := at(vals[0])
		k = k[:len(k)-2] // drop the 0x00 0x01 terminator of the S/B encoding
		return keySpan{lo: k, hi: keyspace.PrefixEnd(k)}
	}
	panic("engine: unknown key operator")
}

// sortKeyMatches reports whether sort key value v satisfies op on vals; it is
// the value-level twin of sortKeySpan (for validating ExclusiveStartKey).
func sortKeyMatches(v attr.Value, op expr.KeyOp, vals []attr.Value) bool {
	if op == 0 {
		return true
	}
	cmp := func(w attr.Value) int {
		c, _ := attr.Compare(v, w)
		return c
	}
	switch op {
	case expr.KeyEQ:
		return cmp(vals[0]) == 0
	case expr.KeyLT:
		return cmp(vals[0]) < 0
	case expr.KeyLE:
		return cmp(vals[0]) <= 0
	case expr.KeyGT:
		return cmp(vals[0]) > 0
	case expr.KeyGE:
		return cmp(vals[0]) >= 0
	case expr.KeyBetween:
		return cmp(vals[0]) >= 0 && cmp(vals[1]) <= 0
	case expr.KeyBeginsWith:
		switch v.Type {
		case attr.S:
			return strings.HasPrefix(v.S, vals[0].S)
		case attr.B:
			return bytes.HasPrefix(v.B, vals[0].B)
		}
	}
	return false
}

// segmentSpan returns the keys under prefix p (a table's items or an
// index's entries) whose partition hash falls in parallel Scan segment seg
// of total.
func segmentSpan(p []byte, seg, total int) keySpan {
	lo, hi := keyspace.SegmentRange(seg, total)
	s := keySpan{lo: binary.BigEndian.AppendUint32(bytes.Clone(p), uint32(lo))}
	if hi >= 1<<32 {
		s.hi = keyspace.PrefixEnd(p)
	} else {
		s.hi = binary.BigEndian.AppendUint32(bytes.Clone(p), uint32(hi))
	}
	return s
}

// after narrows s to the keys strictly after k (forward paging).
// NB: the clamp keeps the span inside s whatever k is, so a forged start key
// can never widen what is read.
func (s keySpan) after(k []byte) keySpan {
	succ := append(bytes.Clone(k), 0) // the smallest key greater than k
	if bytes.Compare(succ, s.lo) > 0 {
		s.lo = succ
	}
	return s
}

// before narrows s to the keys strictly before k (backward paging).
func (s keySpan) before(k []byte) keySpan {
	if bytes.Compare(k, s.hi) < 0 {
		s.hi = bytes.Clone(k)
	}
	return s
}
