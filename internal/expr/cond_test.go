package expr

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
)

func TestConditionEvalBasics(t *testing.T) {
	item := attr.Item{
		"a": attr.Str("hello"),
		"n": attr.Num(attr.MustNumber("10")),
		"m": attr.Map(map[string]attr.Value{"l": attr.List([]attr.Value{attr.Str("x"), attr.Str("y")})}),
	}
	vals := map[string]attr.Value{":h": attr.Str("he"), ":n": attr.Num(attr.MustNumber("9")), ":y": attr.Str("y")}
	cases := []struct {
		expr string
		want bool
	}{
		{"begins_with(a, :h)", true},
		{"n > :n AND m.l[1] = :y", true},
		{"n < :n OR attribute_not_exists(zz)", true},
		{"NOT contains(m.l, :y)", false},
		{"gone <> :n", true},
		{"gone = :n", false},
		{"a > :n", false},
	}
	for _, c := range cases {
		p := NewParams(nil, vals)
		cond, err := p.Condition(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, err := cond.Eval(item)
		if err != nil || got != c.want {
			t.Errorf("%s: got %v, %v; want %v", c.expr, got, err, c.want)
		}
	}
}
