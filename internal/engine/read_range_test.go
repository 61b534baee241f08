package engine

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
)

// keyAlphabet holds the bytes that stress the S/B key encoding: its escape
// (0x00 0xFF), its terminator (0x00 0x01), and ordinary bytes.
var keyAlphabet = []byte{0x00, 0x01, 0x02, 'a', 'b', 0xFE, 0xFF}

func randBytes(rng *rand.Rand, min, max int) []byte {
	n := min + rng.IntN(max-min+1)
	b := make([]byte, n)
	for i := range b {
		b[i] = keyAlphabet[rng.IntN(len(keyAlphabet))]
	}
	return b
}

var keyNumbers = []string{
	"0", "1", "-1", "0.5", "-0.5", "0.05", "-0.05", "10", "-10", "100", "-100", "100.5", "-100.5",
	"99.99", "1e10", "-1e10", "123456789012345678901234567890123456.78", "-123456789012345678901234567890123456.78",
	"9.9999999999999999999999999999999999999E+125", "-9.9999999999999999999999999999999999999E+125",
	"1E-130", "-1E-130", "0.000001", "-0.000001",
}

func randNumber(rng *rand.Rand) attr.Value {
	if rng.IntN(3) == 0 {
		return attr.Num(attr.MustNumber(keyNumbers[rng.IntN(len(keyNumbers))]))
	}
	s := fmt.Sprintf("%d", rng.IntN(2000)-1000)
	if rng.IntN(2) == 0 {
		s += fmt.Sprintf(".%d", rng.IntN(100))
	}
	return attr.Num(attr.MustNumber(s))
}

// keyRunes are the S counterpart of keyAlphabet: valid UTF-8 whose bytes
// include 0x00, 0x01 and high bytes.
var keyRunes = []rune{0x00, 0x01, 0x02, 'a', 'b', 'é', 0xFFFF, 0x10FFFF}

func randKeyValue(rng *rand.Rand, t attr.Type, min int) attr.Value {
	switch t {
	case attr.S:
		r := make([]rune, min+rng.IntN(4-min+1))
		for i := range r {
			r[i] = keyRunes[rng.IntN(len(keyRunes))]
		}
		return attr.Str(string(r))
	case attr.B:
		return attr.Bin(randBytes(rng, min, 4))
	}
	return randNumber(rng)
}

// bruteMatch is an oracle for sortKeyMatches that shares no code with
// attr.Compare: strings and bytes compare bytewise, numbers as rationals.
func bruteMatch(v attr.Value, op expr.KeyOp, vals []attr.Value) bool {
	cmp := func(a, b attr.Value) int {
		switch a.Type {
		case attr.S:
			return strings.Compare(a.S, b.S)
		case attr.B:
			return bytes.Compare(a.B, b.B)
		}
		x, _ := new(big.Rat).SetString(a.N.String())
		y, _ := new(big.Rat).SetString(b.N.String())
		return x.Cmp(y)
	}
	switch op {
	case 0:
		return true
	case expr.KeyEQ:
		return cmp(v, vals[0]) == 0
	case expr.KeyLT:
		return cmp(v, vals[0]) < 0
	case expr.KeyLE:
		return cmp(v, vals[0]) <= 0
	case expr.KeyGT:
		return cmp(v, vals[0]) > 0
	case expr.KeyGE:
		return cmp(v, vals[0]) >= 0
	case expr.KeyBetween:
		return cmp(v, vals[0]) >= 0 && cmp(v, vals[1]) <= 0
	case expr.KeyBeginsWith:
		if v.Type == attr.S {
			return strings.HasPrefix(v.S, vals[0].S)
		}
		return bytes.HasPrefix(v.B, vals[0].B)
	}
	panic("bad op")
}

func (s keySpan) contains(k []byte) bool {
	return bytes.Compare(k, s.lo) >= 0 && bytes.Compare(k, s.hi) < 0
}

// TestSortKeySpanProperty compares the physical key span of every key
// operator with a brute-force filter over random keys of S, N and B sort
// keys, with and without trailing key parts (index entries), next to keys
// of other partitions that share the prefix's bytes.
func TestSortKeySpanProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []expr.KeyOp{0, expr.KeyEQ, expr.KeyLT, expr.KeyLE, expr.KeyGT, expr.KeyGE, expr.KeyBetween, expr.KeyBeginsWith}
	for _, typ := range []attr.Type{attr.S, attr.N, attr.B} {
		for round := 0; round < 150; round++ {
			base := keyspace.Items([]byte("t0123456789abcdefn"), 7)
			// Partitions of one random pk type; the first is queried.
			pkType := []attr.Type{attr.S, attr.N, attr.B}[rng.IntN(3)]
			var parts [][]byte
			for i := 0; i < 4; i++ {
				pk := randKeyValue(rng, pkType, 1)
				parts = append(parts, attr.AppendKey(bytes.Clone(base), pk))
			}
			p := parts[0]
			index := rng.IntN(2) == 0
			type key struct {
				k   []byte
				v   attr.Value
				own bool
			}
			var keys []key
			var vals []attr.Value
			for i := 0; i < 40; i++ {
				v := randKeyValue(rng, typ, 1)
				vals = append(vals, v)
				pi := 0
				if i%3 == 2 {
					pi = rng.IntN(len(parts))
				}
				k := attr.AppendKey(bytes.Clone(parts[pi]), v)
				if index { // an index entry continues with the table's key
					k = attr.AppendKey(k, randKeyValue(rng, attr.S, 1))
				}
				keys = append(keys, key{k: k, v: v, own: bytes.Equal(parts[pi], p)})
			}
			for _, op := range ops {
				if op == expr.KeyBeginsWith && typ == attr.N {
					continue
				}
				for trial := 0; trial < 8; trial++ {
					pick := func() attr.Value {
						if rng.IntN(2) == 0 {
							return vals[rng.IntN(len(vals))]
						}
						return randKeyValue(rng, typ, 0)
					}
					var operands []attr.Value
					switch op {
					case 0:
					case expr.KeyBetween:
						a, b := pick(), pick()
						if bruteMatch(a, expr.KeyGT, []attr.Value{b}) {
							a, b = b, a
						}
						operands = []attr.Value{a, b}
					case expr.KeyBeginsWith:
						v := pick()
						if typ == attr.S && len(v.S) > 0 {
							r := []rune(v.S)
							v = attr.Str(string(r[:rng.IntN(len(r)+1)]))
						} else if typ == attr.B && len(v.B) > 0 {
							v = attr.Bin(v.B[:rng.IntN(len(v.B)+1)])
						}
						operands = []attr.Value{v}
					default:
						operands = []attr.Value{pick()}
					}
					span := sortKeySpan(p, op, operands)
					for _, k := range keys {
						want := k.own && bruteMatch(k.v, op, operands)
						if got := span.contains(k.k); got != want {
							t.Fatalf("type %s op %d operands %v: key %x (value %v, own partition %v): in span = %v, want %v (span %x..%x)",
								typ, op, operands, k.k, k.v, k.own, got, want, span.lo, span.hi)
						}
						if k.own && sortKeyMatches(k.v, op, operands) != want {
							t.Fatalf("sortKeyMatches(%v, %d, %v) = %v, want %v", k.v, op, operands, !want, want)
						}
					}
				}
			}
		}
	}
}

// TestSortKeySpanTerminators pins the cases the self-delimiting encoding
// makes subtle.
func TestSortKeySpanTerminators(t *testing.T) {
	p := []byte("P")
	key := func(s string) []byte { return attr.AppendKey(bytes.Clone(p), attr.Str(s)) }
	num := func(s string) []byte { return attr.AppendKey(bytes.Clone(p), attr.Num(attr.MustNumber(s))) }
	S := func(s string) []attr.Value { return []attr.Value{attr.Str(s)} }
	N := func(s string) []attr.Value { return []attr.Value{attr.Num(attr.MustNumber(s))} }
	for _, tc := range []struct {
		name string
		span keySpan
		in   [][]byte
		out  [][]byte
	}{
		{"gt skips itself", sortKeySpan(p, expr.KeyGT, S("abc")), [][]byte{key("abc\x00"), key("abc\x00\x01"), key("abd"), key("abca")}, [][]byte{key("abc"), key("abb"), key("ab")}},
		{"ge", sortKeySpan(p, expr.KeyGE, S("abc")), [][]byte{key("abc"), key("abc\x00")}, [][]byte{key("ab"), key("abb\xff")}},
		{"lt", sortKeySpan(p, expr.KeyLT, S("abc")), [][]byte{key("ab"), key("ab\x00"), key("abb\xff\xff")}, [][]byte{key("abc"), key("abc\x00")}},
		{"le", sortKeySpan(p, expr.KeyLE, S("abc")), [][]byte{key("abc"), key("ab")}, [][]byte{key("abc\x00"), key("abca")}},
		{"eq", sortKeySpan(p, expr.KeyEQ, S("abc")), [][]byte{key("abc")}, [][]byte{key("abc\x00"), key("abca"), key("ab")}},
		{"begins_with", sortKeySpan(p, expr.KeyBeginsWith, S("ab")), [][]byte{key("ab"), key("ab\x00"), key("abc"), key("ab\xff")}, [][]byte{key("a"), key("a\xff"), key("b"), key("ac")}},
		{"begins_with NUL", sortKeySpan(p, expr.KeyBeginsWith, S("a\x00")), [][]byte{key("a\x00"), key("a\x00\x00"), key("a\x00b")}, [][]byte{key("a"), key("a\x01"), key("ab")}},
		{"negative gt", sortKeySpan(p, expr.KeyGT, N("-5")), [][]byte{num("-4.9"), num("0"), num("5"), num("-1e-130")}, [][]byte{num("-5"), num("-5.1"), num("-50")}},
		{"negative le", sortKeySpan(p, expr.KeyLE, N("-5")), [][]byte{num("-5"), num("-5.1"), num("-9.9999999999999999999999999999999999999E+125")}, [][]byte{num("-4.9"), num("0")}},
		{"fractional between", sortKeySpan(p, expr.KeyBetween, []attr.Value{attr.Num(attr.MustNumber("-0.5")), attr.Num(attr.MustNumber("0.25"))}), [][]byte{num("-0.5"), num("0"), num("0.25"), num("0.2499")}, [][]byte{num("-0.51"), num("0.251"), num("1")}},
	} {
		for _, k := range tc.in {
			if !tc.span.contains(k) {
				t.Errorf("%s: key %q not in span, want in", tc.name, k)
			}
		}
		for _, k := range tc.out {
			if tc.span.contains(k) {
				t.Errorf("%s: key %q in span, want out", tc.name, k)
			}
		}
	}
}

func TestSegmentSpansCoverHashSpace(t *testing.T) {
	p := []byte("P")
	for _, total := range []int{1, 2, 3, 7, 1000, 1000000} {
		segs := []int{0, total - 1}
		if total > 2 {
			segs = append(segs, total/2)
		}
		for _, seg := range segs {
			s := segmentSpan(p, seg, total)
			if s.empty() && total <= 1<<20 {
				lo, hi := keyspace.SegmentRange(seg, total)
				if lo != hi {
					t.Fatalf("segment %d/%d: empty span for hash range %d..%d", seg, total, lo, hi)
				}
			}
			if seg > 0 {
				prev := segmentSpan(p, seg-1, total)
				if !bytes.Equal(prev.hi, s.lo) {
					t.Fatalf("segment %d/%d: starts at %x, previous ends at %x", seg, total, s.lo, prev.hi)
				}
			}
		}
		if first := segmentSpan(p, 0, total); !bytes.Equal(first.lo, append(bytes.Clone(p), 0, 0, 0, 0)) {
			t.Fatalf("first segment of %d starts at %x", total, first.lo)
		}
		if last := segmentSpan(p, total-1, total); !bytes.Equal(last.hi, keyspace.PrefixEnd(p)) {
			t.Fatalf("last segment of %d ends at %x", total, last.hi)
		}
	}
}

func TestKeySpanClamp(t *testing.T) {
	s := keySpan{lo: []byte("b"), hi: []byte("d")}
	for _, tc := range []struct {
		got, want keySpan
	}{
		{s.after([]byte("a")), s},
		{s.after([]byte("c")), keySpan{lo: []byte("c\x00"), hi: []byte("d")}},
		{s.before([]byte("z")), s},
		{s.before([]byte("c")), keySpan{lo: []byte("b"), hi: []byte("c")}},
	} {
		if !bytes.Equal(tc.got.lo, tc.want.lo) || !bytes.Equal(tc.got.hi, tc.want.hi) {
			t.Errorf("got %q..%q, want %q..%q", tc.got.lo, tc.got.hi, tc.want.lo, tc.want.hi)
		}
	}
	if !s.after([]byte("z")).empty() || !s.before([]byte("a")).empty() {
		t.Errorf("clamping outside the span must leave it empty")
	}
}
