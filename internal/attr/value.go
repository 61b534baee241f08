// Package attr provides DynamoDB attribute values: the ten types, exact
// 38-digit numbers, DynamoDB JSON encoding, a compact binary encoding for
// storage, item sizes as DynamoDB counts them, and an order-preserving
// encoding of key values.
//
// attr is a vocabulary package: it imports only apierr, so that validation
// failures carry DynamoDB's error kind and wording.
package attr

import (
	"bytes"
	"sort"
)

// Type is a DynamoDB attribute type.
type Type uint8

// The attribute types.
const (
	Invalid Type = iota
	S
	N
	B
	BOOL
	NULL
	M
	L
	SS
	NS
	BS
)

var typeNames = [...]string{"", "S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"}

// String returns the DynamoDB type descriptor ("S", "NS", ...).
func (t Type) String() string {
	if int(t) < len(typeNames) && t != Invalid {
		return typeNames[t]
	}
	return "INVALID"
}

// ParseType returns the Type named by a descriptor such as "S" or "NS".
func ParseType(s string) (Type, bool) {
	for i, n := range typeNames {
		if i > 0 && n == s {
			return Type(i), true
		}
	}
	return Invalid, false
}

// IsScalarKey reports whether t may be a key attribute type (S, N or B).
func (t Type) IsScalarKey() bool { return t == S || t == N || t == B }

// IsSet reports whether t is SS, NS or BS.
func (t Type) IsSet() bool { return t == SS || t == NS || t == BS }

// Value is one attribute value. Exactly the field matching Type is
// meaningful. Values are treated as immutable once built: code that changes
// a value builds a new one.
type Value struct {
	Type Type
	S    string
	N    Number
	B    []byte
	Bool bool // BOOL; a NULL value is always true
	M    map[string]Value
	L    []Value
	SS   []string
	NS   []Number
	BS   [][]byte
}

// Item is a map of attribute names to values.
type Item = map[string]Value

// Str returns an S value.
func Str(s string) Value { return Value{Type: S, S: s} }

// Num returns an N value.
func Num(n Number) Value { return Value{Type: N, N: n} }

// Bin returns a B value.
func Bin(b []byte) Value { return Value{Type: B, B: b} }

// Bool returns a BOOL value.
func BoolV(b bool) Value { return Value{Type: BOOL, Bool: b} }

// Null returns a NULL value.
func Null() Value { return Value{Type: NULL, Bool: true} }

// Map returns an M value.
func Map(m map[string]Value) Value { return Value{Type: M, M: m} }

// List returns an L value.
func List(l []Value) Value { return Value{Type: L, L: l} }

// IsZero reports whether v is the zero Value (no type), meaning "absent".
func (v Value) IsZero() bool { return v.Type == Invalid }

// Equal reports whether a and b are the same DynamoDB value. Sets compare
// without regard to order.
func Equal(a, b Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case S:
		return a.S == b.S
	case N:
		return a.N == b.N
	case B:
		return bytes.Equal(a.B, b.B)
	case BOOL:
		return a.Bool == b.Bool
	case NULL, Invalid:
		return true
	case M:
		if len(a.M) != len(b.M) {
			return false
		}
		for k, av := range a.M {
			bv, ok := b.M[k]
			if !ok || !Equal(av, bv) {
				return false
			}
		}
		return true
	case L:
		if len(a.L) != len(b.L) {
			return false
		}
		for i := range a.L {
			if !Equal(a.L[i], b.L[i]) {
				return false
			}
		}
		return true
	case SS:
		if len(a.SS) != len(b.SS) {
			return false
		}
		set := make(map[string]struct{}, len(a.SS))
		for _, s := range a.SS {
			set[s] = struct{}{}
		}
		for _, s := range b.SS {
			if _, ok := set[s]; !ok {
				return false
			}
		}
		return true
	case NS:
		if len(a.NS) != len(b.NS) {
			return false
		}
		set := make(map[Number]struct{}, len(a.NS))
		for _, s := range a.NS {
			set[s] = struct{}{}
		}
		for _, s := range b.NS {
			if _, ok := set[s]; !ok {
				return false
			}
		}
		return true
	case BS:
		if len(a.BS) != len(b.BS) {
			return false
		}
		set := make(map[string]struct{}, len(a.BS))
		for _, s := range a.BS {
			set[string(s)] = struct{}{}
		}
		for _, s := range b.BS {
			if _, ok := set[string(s)]; !ok {
				return false
			}
		}
		return true
	}
	return false
}

// EqualItems reports whether two items hold equal values for the same names.
func EqualItems(a, b Item) bool { return Equal(Map(a), Map(b)) }

// Compare orders two values of the same scalar type (S by UTF-8 bytes, N
// numerically, B by bytes), as DynamoDB orders sort keys. ok is false when
// the types differ or are not S, N or B.
func Compare(a, b Value) (c int, ok bool) {
	if a.Type != b.Type {
		return 0, false
	}
	switch a.Type {
	case S:
		return cmpStr(a.S, b.S), true
	case N:
		return a.N.Cmp(b.N), true
	case B:
		return bytes.Compare(a.B, b.B), true
	}
	return 0, false
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Clone returns a deep copy of v.
func Clone(v Value) Value {
	switch v.Type {
	case B:
		v.B = append([]byte(nil), v.B...)
	case M:
		m := make(map[string]Value, len(v.M))
		for k, e := range v.M {
			m[k] = Clone(e)
		}
		v.M = m
	case L:
		l := make([]Value, len(v.L))
		for i, e := range v.L {
			l[i] = Clone(e)
		}
		v.L = l
	case SS:
		v.SS = append([]string(nil), v.SS...)
	case NS:
		v.NS = append([]Number(nil), v.NS...)
	case BS:
		bs := make([][]byte, len(v.BS))
		for i, e := range v.BS {
			bs[i] = append([]byte(nil), e...)
		}
		v.BS = bs
	}
	return v
}

// CloneItem returns a deep copy of it.
func CloneItem(it Item) Item {
	if it == nil {
		return nil
	}
	out := make(Item, len(it))
	for k, v := range it {
		out[k] = Clone(v)
	}
	return out
}

// SortedNames returns the attribute names of it in byte order.
func SortedNames(it Item) []string {
	names := make([]string, 0, len(it))
	for k := range it {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
