package expr

import (
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Arithmetic in SET and ADD must be exact to DynamoDB's 38 digits: never
// a float64 on the way.

func applyUpdate(t *testing.T, expr string, item attr.Item, values map[string]attr.Value) (attr.Item, error) {
	t.Helper()
	u, err := NewParams(nil, values).Update(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	out, _, err := u.Apply(item)
	return out, err
}

func TestExactArithmetic(t *testing.T) {
	cases := []struct {
		n, v, op, want string
	}{
		{"12345678901234567890123456789012345678", "1", "+", "12345678901234567890123456789012345679"},
		{"99999999999999999999999999999999999998", "1", "+", "99999999999999999999999999999999999999"},
		{"99999999999999999999999999999999999999", "1", "+", "100000000000000000000000000000000000000"},
		{"0.1", "0.2", "+", "0.3"},
		{"1", "0.00000000000000000000000000000000000001", "-", "0.99999999999999999999999999999999999999"},
		{"-5", "5", "+", "0"},
		{"1E+125", "1E+125", "+", "2" + strings.Repeat("0", 125)},
		{"1E-129", "1E-129", "+", "0." + strings.Repeat("0", 128) + "2"},
		{"3.14159265358979323846264338327950288", "-3.14159265358979323846264338327950288", "+", "0"},
	}
	for _, c := range cases {
		item := attr.Item{"n": attr.Num(attr.MustNumber(c.n))}
		values := map[string]attr.Value{":v": attr.Num(attr.MustNumber(c.v))}
		out, err := applyUpdate(t, "SET n = n "+c.op+" :v", item, values)
		if err != nil {
			t.Errorf("%s %s %s: %v", c.n, c.op, c.v, err)
			continue
		}
		if got := out["n"].N.String(); got != c.want {
			t.Errorf("SET: %s %s %s = %s, want %s", c.n, c.op, c.v, got, c.want)
		}
		if c.op == "+" {
			out, err = applyUpdate(t, "ADD n :v", item, values)
			if err != nil || out["n"].N.String() != c.want {
				t.Errorf("ADD: %s + %s = %v (%v), want %s", c.n, c.v, out["n"].N, err, c.want)
			}
		}
	}
}

func TestArithmeticLimits(t *testing.T) {
	cases := []struct{ n, v, want string }{
		// 39 significant digits.
		{"99999999999999999999999999999999999999", "0.1", "Attempting to store more than 38 significant digits in a Number"},
		{"1", "0.000000000000000000000000000000000000001", "Attempting to store more than 38 significant digits in a Number"},
		{"9.9999999999999999999999999999999999999E+125", "9.9999999999999999999999999999999999999E+125", "Attempting to store more than 38 significant digits in a Number"},
		{"9E+125", "9E+125", "Number overflow. Attempting to store a number with magnitude larger than supported range"},
	}
	for _, c := range cases {
		item := attr.Item{"n": attr.Num(attr.MustNumber(c.n))}
		values := map[string]attr.Value{":v": attr.Num(attr.MustNumber(c.v))}
		for _, expr := range []string{"SET n = n + :v", "ADD n :v"} {
			_, err := applyUpdate(t, expr, item, values)
			wantValidation(t, expr+" "+c.n+" + "+c.v, err, c.want)
		}
	}
}

// TestArithmeticMatchesBigRat checks SET n = n + :v and n - :v against
// math/big on random numbers that fit in 38 digits.
func TestArithmeticMatchesBigRat(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	digits := func() string {
		n := 1 + r.Intn(18)
		var b strings.Builder
		if r.Intn(2) == 0 {
			b.WriteByte('-')
		}
		for i := 0; i < n; i++ {
			b.WriteByte(byte('0' + r.Intn(10)))
		}
		if r.Intn(2) == 0 {
			b.WriteString("E")
			b.WriteString(strings.TrimPrefix(big.NewInt(int64(r.Intn(20)-10)).String(), "+"))
		}
		return b.String()
	}
	for i := 0; i < 2000; i++ {
		a, b := digits(), digits()
		item := attr.Item{"n": attr.Num(attr.MustNumber(a))}
		values := map[string]attr.Value{":v": attr.Num(attr.MustNumber(b))}
		for _, op := range []string{"+", "-"} {
			out, err := applyUpdate(t, "SET n = n "+op+" :v", item, values)
			if err != nil {
				t.Fatalf("%s %s %s: %v", a, op, b, err)
			}
			x, _ := new(big.Rat).SetString(a)
			y, _ := new(big.Rat).SetString(b)
			want := new(big.Rat)
			if op == "+" {
				want.Add(x, y)
			} else {
				want.Sub(x, y)
			}
			got, _ := new(big.Rat).SetString(out["n"].N.String())
			if got.Cmp(want) != 0 {
				t.Fatalf("%s %s %s = %s, want %s", a, op, b, out["n"].N, want.FloatString(40))
			}
		}
	}
}

func TestNumberComparisonsExact(t *testing.T) {
	item := attr.Item{"n": attr.Num(attr.MustNumber("12345678901234567890123456789012345678"))}
	values := map[string]attr.Value{
		":lo":  attr.Num(attr.MustNumber("12345678901234567890123456789012345677")),
		":eq":  attr.Num(attr.MustNumber("1.2345678901234567890123456789012345678E+37")),
		":hi":  attr.Num(attr.MustNumber("12345678901234567890123456789012345679")),
		":flo": attr.Num(attr.MustNumber("12345678901234567000000000000000000000")), // what a float64 would see
	}
	for expr, want := range map[string]bool{
		"n > :lo":               true,
		"n = :eq":               true,
		"n < :hi":               true,
		"n <> :flo":             true,
		"n BETWEEN :lo AND :hi": true,
		"n BETWEEN :hi AND :hi": false,
		"n IN (:lo, :eq)":       true,
	} {
		c, err := NewParams(nil, values).Condition(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Eval(item); got != want {
			t.Errorf("%s: got %v, want %v", expr, got, want)
		}
	}
}

func TestProjectPaths(t *testing.T) {
	item := attr.Item{
		"a": attr.Str("x"),
		"m": attr.Map(map[string]attr.Value{"b": attr.Str("y"), "c": attr.Str("z")}),
		"l": attr.List([]attr.Value{attr.Str("0"), attr.Str("1"), attr.Str("2")}),
	}
	paths := []Path{
		NamePath("a"),
		{{Name: "m", Index: -1}, {Name: "c", Index: -1}},
		{{Name: "l", Index: -1}, {Index: 2}},
		{{Name: "l", Index: -1}, {Index: 0}},
		{{Name: "gone", Index: -1}},
		{{Name: "m", Index: -1}}, // overlaps m.c: the whole map wins
	}
	got := formatItem(ProjectPaths(item, paths))
	want := `{"a": {"S":"x"}, "l": {"L": [{"S":"0"}, {"S":"2"}]}, "m": {"M": {"b": {"S":"y"}, "c": {"S":"z"}}}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := formatItem(ProjectPaths(nil, paths)); got != "{}" {
		t.Errorf("nil item: %s", got)
	}
}

// TestApplyDoesNotShareMutations checks that an update never changes
// the values of the item it was given, nested ones included.
func TestApplyDoesNotShareMutations(t *testing.T) {
	item := attr.Item{
		"m": attr.Map(map[string]attr.Value{"l": attr.List([]attr.Value{attr.Str("a"), attr.Str("b")}), "k": attr.Str("v")}),
	}
	before := formatItem(item)
	values := map[string]attr.Value{":v": attr.Str("new"), ":s": {Type: attr.SS, SS: []string{"x"}}}
	for _, expr := range []string{
		"SET m.l[0] = :v", "SET m.l[5] = :v", "REMOVE m.l[0]", "REMOVE m.k", "SET m.k = :v", "ADD m.s :s", "SET m.l = list_append(m.l, m.l)",
	} {
		out, err := applyUpdate(t, expr, item, values)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if after := formatItem(item); after != before {
			t.Fatalf("%s changed its input:\n%s\n%s", expr, before, after)
		}
		if formatItem(out) == before {
			t.Errorf("%s: output equals input", expr)
		}
	}
}
