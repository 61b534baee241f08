package attr

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

func TestParseNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"00.000", "0"}, {"1", "1"}, {"01", "1"},
		{"1.50", "1.5"}, {"-12.5", "-12.5"}, {".5", "0.5"}, {"5.", "5"},
		{"1e3", "1000"}, {"1E-3", "0.001"}, {"+7", "7"}, {"123.456e1", "1234.56"},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678"},
		{"1E+125", "1" + string(bytes.Repeat([]byte("0"), 125))},
		{"100000000000000000000000000000000000000000", "100000000000000000000000000000000000000000"},
	} {
		n, err := ParseNumber(tc.in)
		if err != nil {
			t.Errorf("ParseNumber(%q): %v", tc.in, err)
			continue
		}
		if got := n.String(); got != tc.want {
			t.Errorf("ParseNumber(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "-", ".", "e5", "1e", "abc", "1.2.3", "NaN", "Infinity", "0x10", "1 ", " 1",
		"123456789012345678901234567890123456789", "1E126", "1E-131"} {
		if _, err := ParseNumber(bad); err == nil {
			t.Errorf("ParseNumber(%q) succeeded, want error", bad)
		}
	}
}

func TestNumberArith(t *testing.T) {
	for _, tc := range []struct{ a, b, sum string }{
		{"1", "2", "3"}, {"0.1", "0.2", "0.3"}, {"-5", "5", "0"},
		{"99999999999999999999999999999999999999", "-1", "99999999999999999999999999999999999998"},
		{"1E+100", "-1E+100", "0"}, {"1.5", "-0.25", "1.25"},
	} {
		s, err := MustNumber(tc.a).Add(MustNumber(tc.b))
		if err != nil || s.String() != tc.sum {
			t.Errorf("%s + %s = %v, %v; want %s", tc.a, tc.b, s, err, tc.sum)
		}
	}
	if _, err := MustNumber("99999999999999999999999999999999999999").Add(MustNumber("0.1")); err == nil {
		t.Error("adding past 38 digits succeeded")
	}
}

func randNumber(r *rand.Rand) Number {
	digits := r.Intn(8)
	s := ""
	if r.Intn(2) == 0 {
		s = "-"
	}
	for i := 0; i <= digits; i++ {
		s += string(rune('0' + r.Intn(10)))
	}
	if r.Intn(2) == 0 {
		s += "e" + string(rune('0'+r.Intn(10)))
	}
	if r.Intn(2) == 0 {
		s += "e-" + string(rune('0'+r.Intn(10)))
	}
	n, err := ParseNumber(s)
	if err != nil {
		return Number{}
	}
	return n
}

// TestOrderedEncoding is the property test: encoded key order equals value
// order, and encodings decode back.
func TestOrderedEncoding(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var vals []Value
	for i := 0; i < 2000; i++ {
		vals = append(vals, Num(randNumber(r)))
	}
	check := func(vals []Value) {
		t.Helper()
		for i := 0; i < len(vals); i++ {
			a := vals[i]
			b := vals[r.Intn(len(vals))]
			ea, eb := AppendKey(nil, a), AppendKey(nil, b)
			want, _ := Compare(a, b)
			if got := bytes.Compare(append(ea, 0x7f), append(eb, 0x7f)); got != want {
				t.Fatalf("order(%v, %v) = %d, want %d", a, b, got, want)
			}
			d, n, ok := DecodeKey(a.Type, ea)
			if !ok || n != len(ea) || !Equal(d, a) {
				t.Fatalf("DecodeKey(%v) = %v, %d, %v", a, d, n, ok)
			}
		}
	}
	check(vals)
	vals = vals[:0]
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.Intn(6))
		for j := range b {
			b[j] = []byte{0, 1, 0xFF, 'a', 'z'}[r.Intn(5)]
		}
		vals = append(vals, Str(string(b)))
	}
	check(vals)
	for i := range vals {
		vals[i] = Bin([]byte(vals[i].S))
	}
	check(vals)
}

func TestNumberSortMatchesCmp(t *testing.T) {
	in := []string{"-100", "-1.5", "-1", "-0.001", "0", "1E-129", "0.5", "1", "1.0001", "2", "10", "1E+125"}
	ns := make([]Number, len(in))
	for i, s := range in {
		ns[i] = MustNumber(s)
	}
	shuffled := append([]Number(nil), ns...)
	rand.New(rand.NewSource(2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[i].Cmp(shuffled[j]) < 0 })
	for i := range ns {
		if shuffled[i] != ns[i] {
			t.Fatalf("sorted[%d] = %v, want %v", i, shuffled[i], ns[i])
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	in := `{"s":{"S":"h\u00e9llo \"q\"\n"},"n":{"N":"-01.50"},"b":{"B":"AAEC"},"t":{"BOOL":true},"z":{"NULL":true},` +
		`"m":{"M":{"a":{"L":[{"S":"x"},{"N":"1"},{"M":{}}]}}},"ss":{"SS":["a","b"]},"ns":{"NS":["1","2.5"]},"bs":{"BS":["AA=="]}}`
	it, err := ParseItemJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := it["n"].N.String(); got != "-1.5" {
		t.Errorf("n = %s, want -1.5", got)
	}
	out := AppendItemJSON(nil, it)
	it2, err := ParseItemJSON(out)
	if err != nil {
		t.Fatalf("reparse %s: %v", out, err)
	}
	if !EqualItems(it, it2) {
		t.Errorf("JSON round trip changed the item:\n%s", out)
	}
	bin := EncodeItem(it)
	it3, err := DecodeItem(bin)
	if err != nil || !EqualItems(it, it3) {
		t.Errorf("binary round trip: %v", err)
	}
}

func TestJSONValidation(t *testing.T) {
	for _, bad := range []string{
		`{}`, `{"S":"a","N":"1"}`, `{"NULL":false}`, `{"SS":[]}`, `{"SS":["a","a"]}`, `{"NS":["1","1.0"]}`,
		`{"N":"x"}`, `{"S":1}`, `{"B":"!!"}`, `{"Q":"a"}`, `null`, `{"BOOL":"true"}`,
	} {
		var v Value
		if err := v.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("UnmarshalJSON(%s) succeeded, want error", bad)
		}
	}
}

func TestSize(t *testing.T) {
	it := Item{"pk": Str("abc"), "n": Num(MustNumber("12345")), "m": Map(map[string]Value{"x": BoolV(true)})}
	// pk: 2+3; n: 1+(5+1)/2+1=4; m: 1 + 3 + (1+1+1) = 7
	if got, want := ItemSize(it), 5+5+7; got != want {
		t.Errorf("ItemSize = %d, want %d", got, want)
	}
}

func TestEncodedItemSize(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"pk":{"S":"abc"},"n":{"N":"12345"},"m":{"M":{"x":{"BOOL":true}}}}`,
		`{"s":{"S":"h\u00e9llo"},"n":{"N":"-01.50"},"b":{"B":"AAEC"},"t":{"BOOL":false},"z":{"NULL":true},` +
			`"m":{"M":{"a":{"L":[{"S":"x"},{"N":"1"},{"M":{}},{"L":[]}]}}},"ss":{"SS":["a","bc"]},"ns":{"NS":["1","2.5","-1e-130"]},"bs":{"BS":["AA==","AAE="]}}`,
	} {
		it, err := ParseItemJSON([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		enc := EncodeItem(it)
		got, err := EncodedItemSize(enc)
		if want := ItemSize(it); err != nil || got != want {
			t.Errorf("EncodedItemSize(%s) = %d, %v; want %d", in, got, err, want)
		}
		// Every truncation fails exactly when DecodeItem fails.
		for n := range len(enc) {
			_, derr := DecodeItem(enc[:n])
			if _, err := EncodedItemSize(enc[:n]); (err == nil) != (derr == nil) {
				t.Errorf("%s truncated to %d bytes: EncodedItemSize err %v, DecodeItem err %v", in, n, err, derr)
			}
		}
	}
	if _, err := EncodedItemSize([]byte{1, 1, 'a', 0xEE}); err == nil {
		t.Error("EncodedItemSize accepted an unknown type")
	}
}

func FuzzParseItemJSON(f *testing.F) {
	f.Add([]byte(`{"a":{"S":"x"},"b":{"N":"1.5e3"},"c":{"L":[{"M":{"d":{"SS":["1"]}}}]}}`))
	f.Add([]byte(`{"a":{"NS":["1","2"]},"b":{"B":"AAEC"},"c":{"NULL":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := ParseItemJSON(data)
		if err != nil {
			return
		}
		again, err := ParseItemJSON(AppendItemJSON(nil, it))
		if err != nil || !EqualItems(it, again) {
			t.Fatalf("re-encoding changed %s: %v", data, err)
		}
		dec, err := DecodeItem(EncodeItem(it))
		if err != nil || !EqualItems(it, dec) {
			t.Fatalf("binary round trip failed for %s: %v", data, err)
		}
		if n, err := EncodedItemSize(EncodeItem(it)); err != nil || n != ItemSize(it) {
			t.Fatalf("EncodedItemSize of %s = %d, %v; want %d", data, n, err, ItemSize(it))
		}
	})
}

// TestParseStringAtEveryOffset puts each kind of byte the string fast
// path must stop at (quote escape, backslash escape, control escape,
// multi-byte UTF-8, invalid UTF-8) at every offset of strings longer than
// a word, and checks the parser against encoding/json, alone and with
// trailing input after the value (ParseValuePrefix).
func TestParseStringAtEveryOffset(t *testing.T) {
	specials := []string{`\"`, `\\`, `\n`, `\u0001`, `é`, "\xff", `\/`, `€`}
	for n := 0; n < 20; n++ {
		for _, sp := range specials {
			for at := 0; at <= n; at++ {
				raw := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				doc := `{"S":"` + raw + `"}`
				var want string
				if err := json.Unmarshal([]byte(`"`+raw+`"`), &want); err != nil {
					t.Fatal(err)
				}
				var v Value
				if err := v.UnmarshalJSON([]byte(doc)); err != nil || v.S != want {
					t.Fatalf("UnmarshalJSON(%q) = %q, %v; want %q", doc, v.S, err, want)
				}
				v, used, err := ParseValuePrefix([]byte(" " + doc + `,"next":1}`))
				if err != nil || v.S != want || used != len(doc)+1 {
					t.Fatalf("ParseValuePrefix(%q) = %q, %d, %v; want %q, %d", doc, v.S, used, err, want, len(doc)+1)
				}
			}
		}
	}
	// A raw control character is a syntax error wherever it is.
	for at := 0; at < 12; at++ {
		doc := `{"S":"` + strings.Repeat("a", at) + "\x01" + strings.Repeat("b", 11-at) + `"}`
		var v Value
		if err := v.UnmarshalJSON([]byte(doc)); err == nil {
			t.Fatalf("UnmarshalJSON(%q) accepted a raw control character", doc)
		}
	}
}
