package aggregate

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// FuzzDecimal: sums and differences of DynamoDB numbers are exact (equal
// to big.Rat's), and String/ParseDecimal round-trip.
func FuzzDecimal(f *testing.F) {
	for _, s := range [][3]string{
		{"1.5", "2.25", "-0.001"},
		{"99999999999999999999999999999999999999", "1", "1e-130"},
		{"-9.9999999999999999999999999999999999999e125", "0", "0.1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var d Decimal
		want := new(big.Rat)
		for i, s := range []string{a, b, c} {
			n, err := attr.ParseNumber(s)
			if err != nil {
				continue
			}
			r, ok := new(big.Rat).SetString(n.String())
			if !ok {
				t.Fatalf("big.Rat cannot read %q", n.String())
			}
			if i == 1 {
				d.Sub(DecimalOf(n))
				want.Sub(want, r)
			} else {
				d.Add(DecimalOf(n))
				want.Add(want, r)
			}
		}
		got, ok := new(big.Rat).SetString(d.String())
		if !ok || got.Cmp(want) != 0 {
			t.Fatalf("%s - %s + %s = %s, want %s", a, b, c, d.String(), want.FloatString(140))
		}
		back, err := ParseDecimal(d.String())
		if err != nil || back.String() != d.String() {
			t.Fatalf("ParseDecimal(%s) = %s, %v", d.String(), back.String(), err)
		}
	})
}

// FuzzDefinition: any definition a client sends is validated without
// panicking, and one that validates folds any item without panicking.
func FuzzDefinition(f *testing.F) {
	f.Add(`{"name":"a","table":"t","group_by":"s","count":true,"sum":["n"],"where":"n > :v","values":{":v":{"N":"1"}}}`, `{"s":{"S":"x"},"n":{"N":"2"}}`)
	f.Add(`{"name":"a","table":"t","group_by":"s","count":true,"group_after":"|","item":{"pk":"A#{group}"}}`, `{"s":{"S":"T|x"}}`)
	f.Fuzz(func(t *testing.T, def, item string) {
		var d Definition
		if json.Unmarshal([]byte(def), &d) != nil || d.Validate() != nil {
			return
		}
		c, err := d.compile()
		if err != nil {
			t.Fatalf("a valid definition does not compile: %v", err)
		}
		it, err := attr.ParseItemJSON([]byte(item))
		if err != nil {
			return
		}
		f := newFold(c, "t", func(string) (*groupState, error) { return nil, nil })
		if err := f.change(nil, it); err != nil {
			return
		}
		if err := f.change(it, nil); err != nil {
			t.Fatalf("removing an item that was added: %v", err)
		}
		for k, g := range f.touched {
			if !g.empty() {
				t.Fatalf("group %q not empty after adding and removing one item: %+v", k, g)
			}
		}
	})
}
