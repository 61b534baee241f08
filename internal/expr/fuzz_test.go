package expr

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// Expressions come straight from clients: the parsers and everything after
// them must never panic, whatever the input. The seed corpora, including
// inputs found by "go test -fuzz", are kept in testdata/fuzz/.

// fuzzParams defines a few placeholders of every type, so that fuzzed
// expressions get past resolution and reach validation and evaluation.
func fuzzParams() *Params {
	return NewParams(
		map[string]string{"#a": "a", "#b": "b", "#n": "n", "#l": "l", "#m": "m", "#dot": "a.b", "#e": ""},
		map[string]attr.Value{
			":s":  attr.Str("x"),
			":n":  attr.Num(attr.MustNumber("1")),
			":b":  attr.Bin([]byte{1}),
			":t":  attr.BoolV(true),
			":nu": attr.Null(),
			":l":  attr.List([]attr.Value{attr.Str("x")}),
			":m":  attr.Map(map[string]attr.Value{"k": attr.Str("v")}),
			":ss": {Type: attr.SS, SS: []string{"x"}},
			":ns": {Type: attr.NS, NS: []attr.Number{attr.MustNumber("1")}},
			":bs": {Type: attr.BS, BS: [][]byte{{1}}},
			":S":  attr.Str("S"),
		})
}

func fuzzItem() attr.Item {
	return attr.Item{
		"a":  attr.Str("xyz"),
		"b":  attr.Bin([]byte{1, 2}),
		"n":  attr.Num(attr.MustNumber("5")),
		"l":  attr.List([]attr.Value{attr.Str("x"), attr.Num(attr.MustNumber("1")), attr.Map(map[string]attr.Value{"k": attr.Str("v")})}),
		"m":  attr.Map(map[string]attr.Value{"k": attr.Str("v"), "l": attr.List([]attr.Value{attr.Str("y")})}),
		"ss": {Type: attr.SS, SS: []string{"x", "y"}},
		"ns": {Type: attr.NS, NS: []attr.Number{attr.MustNumber("1"), attr.MustNumber("2")}},
	}
}

// checkErr fails unless err is nil or a Validation *apierr.Error.
func checkErr(t *testing.T, what, src string, err error) {
	if err != nil && apierr.KindOf(err) != apierr.Validation {
		t.Fatalf("%s %q: error %v is not a Validation error", what, src, err)
	}
}

var conditionSeeds = []string{
	"a = :s",
	"#a.#b[3] <> :n AND NOT (b < :b OR n BETWEEN :n AND :n)",
	"attribute_exists(a) AND attribute_not_exists(#m.k) OR attribute_type(n, :S)",
	"begins_with(a, :s) AND contains(l, :m) AND size(l[2]) > :n",
	"a IN (:s, :n, b, size(m))",
	"((a = :s))",
	"(a) = (:s) AND ((b = :s) OR n = :n)",
	"NOT NOT NOT a = :s",
	"a == :s",
	"foo(a, b)",
	"size(a)",
	"a.b( = :s",
	"a[99999999999] = :s",
	"status = :s",
	"#undefined = :undefined",
	"pk = :s AND begins_with(sk, :s)",
	"n BETWEEN :s AND :n",
	"",
	"(",
	"a = :s \x00 ♥",
}

func FuzzParseCondition(f *testing.F) {
	for _, s := range conditionSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		n, err := parseCondition(src)
		if err == nil {
			// Printing gives source that parses to the same tree.
			printed := nodeString(n)
			m, err := parseCondition(printed)
			if err != nil {
				t.Fatalf("%q printed as %q, which does not parse: %v", src, printed, err)
			}
			if a, b := dumpString(n), dumpString(m); a != b {
				t.Fatalf("%q printed as %q, which parses to\n%s\nnot\n%s", src, printed, b, a)
			}
		}
		p := fuzzParams()
		c, err := p.Condition(src)
		checkErr(t, "Condition", src, err)
		if err == nil {
			for _, item := range []attr.Item{fuzzItem(), nil} {
				_, err := c.Eval(item)
				checkErr(t, "Eval", src, err)
			}
			checkErr(t, "CheckUnused", src, p.CheckUnused())
		}
		kc, err := fuzzParams().KeyCondition(src, "a", "n")
		checkErr(t, "KeyCondition", src, err)
		if err == nil && (kc.HashName != "a" || kc.RangeName != "" && kc.RangeName != "n") {
			t.Fatalf("KeyCondition %q: %+v", src, kc)
		}
	})
}

var updateSeeds = []string{
	"SET a = :s",
	"SET n = n + :n, #m.k = if_not_exists(#m.k, :s) REMOVE l[1], l[0] ADD ns :ns DELETE ss :ss",
	"SET l = list_append(if_not_exists(l, :l), :l), m.l[5] = :m",
	"set a=:s,b=(n)-(:n)",
	"REMOVE m.k, m.l[0], gone",
	"ADD n :n, fresh :ss",
	"DELETE ss :ss, ns :ns",
	"SET a = :s SET b = :s",
	"SET a = b + c + d",
	"SET m = :m, m.k = :s",
	"SET a[1] = :s REMOVE a.b",
	"SET a = ((b))",
	"SET path = VALUE 1",
	"SET a = size(b)",
	"whatever",
	"",
	"SET #undefined = :undefined",
	"SET a.b.c.d.e[1][2][3] = :s",
}

func FuzzParseUpdate(f *testing.F) {
	for _, s := range updateSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		n, err := parseUpdate(src)
		if err == nil {
			printed := nodeString(n)
			m, err := parseUpdate(printed)
			if err != nil {
				t.Fatalf("%q printed as %q, which does not parse: %v", src, printed, err)
			}
			if a, b := dumpString(n), dumpString(m); a != b {
				t.Fatalf("%q printed as %q, which parses to\n%s\nnot\n%s", src, printed, b, a)
			}
		}
		u, err := fuzzParams().Update(src)
		checkErr(t, "Update", src, err)
		if err != nil {
			return
		}
		for _, item := range []attr.Item{fuzzItem(), nil} {
			before := formatItem(item)
			out, paths, err := u.Apply(item)
			checkErr(t, "Apply", src, err)
			if formatItem(item) != before {
				t.Fatalf("Apply %q changed its input", src)
			}
			if err == nil {
				if len(paths) != len(u.Paths()) {
					t.Fatalf("Apply %q: %d paths, Paths() has %d", src, len(paths), len(u.Paths()))
				}
				for _, v := range out {
					if err := attr.ValidateSet(v); err != nil {
						t.Fatalf("Apply %q produced an invalid set: %v", src, err)
					}
				}
				_ = ProjectPaths(out, paths)
			}
		}
	})
}

// FuzzParseProjection covers the third parser.
func FuzzParseProjection(f *testing.F) {
	for _, s := range []string{"a", "a, #m.k, l[2], #dot", "a, a", "a.b, a[0]", "status", "a,", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		n, err := parseProjection(src)
		if err == nil {
			if m, err := parseProjection(nodeString(n)); err != nil || dumpString(m) != dumpString(n) {
				t.Fatalf("%q does not round-trip: %v", src, err)
			}
		}
		pr, err := fuzzParams().Projection(src)
		checkErr(t, "Projection", src, err)
		if err == nil {
			_ = pr.Apply(fuzzItem())
			_ = pr.TopNames()
		}
	})
}
