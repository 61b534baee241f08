package attr

import (
	"math/rand"
	"testing"
)

// randString returns a short string over bytes that exercise JSON
// escaping and UTF-8 (quotes, backslashes, controls, multi-byte and
// invalid sequences).
func randString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", `"`, `\`, "\n", "\x01", "é", "€", "\u2028", "\xff", " ", "<", "&"}
	n := r.Intn(12)
	s := ""
	for i := 0; i < n; i++ {
		s += pieces[r.Intn(len(pieces))]
	}
	return s
}

// randValue returns a random value of any type, nested up to depth.
func randValue(r *rand.Rand, depth int) Value {
	types := []Type{S, N, B, BOOL, NULL, M, L, SS, NS, BS}
	if depth <= 0 {
		types = types[:5]
	}
	switch types[r.Intn(len(types))] {
	case S:
		return Str(randString(r))
	case N:
		return Num(randNumber(r))
	case B:
		return Bin([]byte(randString(r)))
	case BOOL:
		return BoolV(r.Intn(2) == 0)
	case NULL:
		return Null()
	case M:
		return Map(randItem(r, depth-1))
	case L:
		l := make([]Value, r.Intn(4))
		for i := range l {
			l[i] = randValue(r, depth-1)
		}
		return List(l)
	case SS:
		v := Value{Type: SS}
		for i := 0; i < 1+r.Intn(3); i++ {
			v.SS = append(v.SS, randString(r)+string(rune('a'+i)))
		}
		return v
	case NS:
		v := Value{Type: NS}
		for i := 0; i < 1+r.Intn(3); i++ {
			v.NS = append(v.NS, MustNumber(string(rune('1'+i))))
		}
		return v
	default:
		v := Value{Type: BS}
		for i := 0; i < 1+r.Intn(3); i++ {
			v.BS = append(v.BS, []byte{byte(i), byte(r.Intn(256))})
		}
		return v
	}
}

// randItem returns a random item of up to five attributes.
func randItem(r *rand.Rand, depth int) Item {
	it := Item{}
	for i := 0; i < r.Intn(6); i++ {
		it[randString(r)+string(rune('a'+i))] = randValue(r, depth)
	}
	return it
}

// TestDecodeItemInMatchesDecodeItem: items of every attribute type,
// encoded one after another into one buffer and decoded each from its
// part of the buffer and of one string of it, equal what DecodeItem
// decodes; a string of other length is refused.
func TestDecodeItemInMatchesDecodeItem(t *testing.T) {
	r := rand.New(rand.NewSource(16))
	for i := 0; i < 2000; i++ {
		items := []Item{randItem(r, 3), randItem(r, 2), randItem(r, 1)}
		var buf []byte
		var ends []int
		for _, it := range items {
			buf = AppendItem(buf, it)
			ends = append(ends, len(buf))
		}
		s := string(buf)
		start := 0
		for j, end := range ends {
			got, err := DecodeItemIn(buf[start:end], s[start:end])
			want, werr := DecodeItem(buf[start:end])
			if err != nil || werr != nil || !EqualItems(got, want) || !EqualItems(got, items[j]) {
				t.Fatalf("item %d: DecodeItemIn = %v, %v; DecodeItem = %v, %v; encoded %v", j, got, err, want, werr, items[j])
			}
			start = end
		}
		// NB: the decoded items must not refer to the buffer.
		first, _ := DecodeItemIn(buf[:ends[0]], s[:ends[0]])
		for k := range buf {
			buf[k] = 0
		}
		if !EqualItems(first, items[0]) {
			t.Fatalf("zeroing the buffer changed a decoded item: %v, want %v", first, items[0])
		}
	}
	if _, err := DecodeItemIn([]byte{0}, ""); err == nil {
		t.Error("DecodeItemIn accepted a string of another length")
	}
}

// FuzzDecodeItemIn: on any bytes DecodeItemIn agrees with DecodeItem
// (both refuse, or both decode the same item).
func FuzzDecodeItemIn(f *testing.F) {
	f.Add(EncodeItem(Item{"a": Str("x"), "b": Num(MustNumber("-1.5")), "c": List([]Value{Null(), BoolV(true)})}))
	f.Add(EncodeItem(Item{"m": Map(Item{"s": {Type: SS, SS: []string{"1"}}, "b": {Type: BS, BS: [][]byte{{1}}}})}))
	f.Add([]byte{1, 1, 'a', 0xEE})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeItemIn(b, string(b))
		want, werr := DecodeItem(b)
		if (err == nil) != (werr == nil) || err == nil && !EqualItems(got, want) {
			t.Fatalf("DecodeItemIn(%x) = %v, %v; DecodeItem = %v, %v", b, got, err, want, werr)
		}
	})
}
