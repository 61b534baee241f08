package expr

import (
	"fmt"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func s(v string) attr.Value        { return attr.Str(v) }
func n(v string) attr.Value        { return attr.Num(attr.MustNumber(v)) }
func ptr(v attr.Value) *attr.Value { return &v }
func bptr(b bool) *bool            { return &b }

func legacyItem() attr.Item {
	return attr.Item{
		"s":  s("hello"),
		"n":  n("5"),
		"ss": {Type: attr.SS, SS: []string{"a", "b"}},
		"l":  attr.List([]attr.Value{s("x"), n("1")}),
		"b":  attr.Bin([]byte{1, 2, 3}),
	}
}

func TestLegacyFilter(t *testing.T) {
	item := legacyItem()
	cases := []struct {
		conds map[string]wire.Condition
		op    string
		str   string
		want  bool
	}{
		{map[string]wire.Condition{"n": {ComparisonOperator: "EQ", AttributeValueList: []attr.Value{n("5")}}}, "", "n = {N:5}", true},
		{map[string]wire.Condition{"n": {ComparisonOperator: "NE", AttributeValueList: []attr.Value{n("5")}}}, "", "n <> {N:5}", false},
		{map[string]wire.Condition{"gone": {ComparisonOperator: "NE", AttributeValueList: []attr.Value{n("5")}}}, "", "gone <> {N:5}", true},
		{map[string]wire.Condition{"n": {ComparisonOperator: "LE", AttributeValueList: []attr.Value{n("5")}}}, "", "n <= {N:5}", true},
		{map[string]wire.Condition{"n": {ComparisonOperator: "LT", AttributeValueList: []attr.Value{n("5")}}}, "", "n < {N:5}", false},
		{map[string]wire.Condition{"n": {ComparisonOperator: "GE", AttributeValueList: []attr.Value{n("5")}}}, "", "n >= {N:5}", true},
		{map[string]wire.Condition{"n": {ComparisonOperator: "GT", AttributeValueList: []attr.Value{n("4")}}}, "", "n > {N:4}", true},
		{map[string]wire.Condition{"n": {ComparisonOperator: "GT", AttributeValueList: []attr.Value{s("4")}}}, "", "n > {S:4}", false},
		{map[string]wire.Condition{"s": {ComparisonOperator: "NOT_NULL"}}, "", "attribute_exists(s)", true},
		{map[string]wire.Condition{"s": {ComparisonOperator: "NULL"}}, "", "attribute_not_exists(s)", false},
		{map[string]wire.Condition{"s": {ComparisonOperator: "CONTAINS", AttributeValueList: []attr.Value{s("ell")}}}, "", "contains(s, {S:ell})", true},
		{map[string]wire.Condition{"ss": {ComparisonOperator: "CONTAINS", AttributeValueList: []attr.Value{s("b")}}}, "", "contains(ss, {S:b})", true},
		{map[string]wire.Condition{"l": {ComparisonOperator: "CONTAINS", AttributeValueList: []attr.Value{n("1")}}}, "", "contains(l, {N:1})", true},
		{map[string]wire.Condition{"ss": {ComparisonOperator: "NOT_CONTAINS", AttributeValueList: []attr.Value{s("c")}}}, "", "(attribute_exists(ss) AND NOT contains(ss, {S:c}))", true},
		{map[string]wire.Condition{"s": {ComparisonOperator: "NOT_CONTAINS", AttributeValueList: []attr.Value{n("1")}}}, "", "(attribute_exists(s) AND NOT contains(s, {N:1}))", true},
		// Unlike NE, NOT_CONTAINS fails on a missing attribute.
		{map[string]wire.Condition{"gone": {ComparisonOperator: "NOT_CONTAINS", AttributeValueList: []attr.Value{n("1")}}}, "", "(attribute_exists(gone) AND NOT contains(gone, {N:1}))", false},
		{map[string]wire.Condition{"s": {ComparisonOperator: "BEGINS_WITH", AttributeValueList: []attr.Value{s("he")}}}, "", "begins_with(s, {S:he})", true},
		{map[string]wire.Condition{"b": {ComparisonOperator: "BEGINS_WITH", AttributeValueList: []attr.Value{attr.Bin([]byte{1})}}}, "", "begins_with(b, {B:AQ==})", true},
		{map[string]wire.Condition{"n": {ComparisonOperator: "IN", AttributeValueList: []attr.Value{n("1"), n("5")}}}, "", "n IN ({N:1}, {N:5})", true},
		{map[string]wire.Condition{"n": {ComparisonOperator: "BETWEEN", AttributeValueList: []attr.Value{n("5"), n("6")}}}, "", "n BETWEEN {N:5} AND {N:6}", true},
		// Several conditions, in name order, with AND (the default) or OR.
		{map[string]wire.Condition{
			"s": {ComparisonOperator: "EQ", AttributeValueList: []attr.Value{s("nope")}},
			"n": {ComparisonOperator: "EQ", AttributeValueList: []attr.Value{n("5")}},
		}, "AND", "(n = {N:5} AND s = {S:nope})", false},
		{map[string]wire.Condition{
			"s": {ComparisonOperator: "EQ", AttributeValueList: []attr.Value{s("nope")}},
			"n": {ComparisonOperator: "EQ", AttributeValueList: []attr.Value{n("5")}},
		}, "OR", "(n = {N:5} OR s = {S:nope})", true},
		{nil, "", "TRUE", true},
	}
	for i, c := range cases {
		cond, err := LegacyFilter(c.conds, c.op)
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if got := fmt.Sprint(cond); got != c.str {
			t.Errorf("case %d: compiled to %s, want %s", i, got, c.str)
		}
		if got, _ := cond.Eval(item); got != c.want {
			t.Errorf("case %d (%s): got %v, want %v", i, c.str, got, c.want)
		}
	}
}

func TestLegacyFilterErrors(t *testing.T) {
	cases := []struct {
		conds map[string]wire.Condition
		op    string
		want  string
	}{
		{map[string]wire.Condition{"a": {ComparisonOperator: "EQ"}}, "", "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "NULL", AttributeValueList: []attr.Value{s("x")}}}, "", "One or more parameter values were invalid: Invalid number of argument(s) for the NULL ComparisonOperator"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "BETWEEN", AttributeValueList: []attr.Value{s("a"), s("b"), s("c")}}}, "", "The attempted filter operation is not supported for the provided filter argument count"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "IN"}}, "", "One or more parameter values were invalid: Invalid number of argument(s) for the IN ComparisonOperator"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "LIKE", AttributeValueList: []attr.Value{s("x")}}}, "", "1 validation error detected: Value 'LIKE' at 'comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: [IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "IN", AttributeValueList: []attr.Value{s("x"), n("1")}}}, "", "One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "LT", AttributeValueList: []attr.Value{attr.BoolV(true)}}}, "", "One or more parameter values were invalid: ComparisonOperator LT is not valid for BOOL AttributeValue type"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "CONTAINS", AttributeValueList: []attr.Value{{Type: attr.SS, SS: []string{"x"}}}}}, "", "One or more parameter values were invalid: ComparisonOperator CONTAINS is not valid for SS AttributeValue type"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "BEGINS_WITH", AttributeValueList: []attr.Value{n("1")}}}, "", "One or more parameter values were invalid: ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "BETWEEN", AttributeValueList: []attr.Value{n("2"), n("1")}}}, "", "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "NULL"}}, "OR", "ConditionalOperator can only be used when Filter or Expected has two or more elements"},
		{nil, "AND", "ConditionalOperator can only be used when Filter or Expected has two or more elements"},
		{map[string]wire.Condition{"a": {ComparisonOperator: "NULL"}, "b": {ComparisonOperator: "NULL"}}, "XOR", "1 validation error detected: Value 'XOR' at 'conditionalOperator' failed to satisfy constraint: Member must satisfy enum value set: [AND, OR]"},
	}
	for i, c := range cases {
		_, err := LegacyFilter(c.conds, c.op)
		wantValidation(t, fmt.Sprint("case ", i), err, c.want)
	}
}

func TestLegacyExpected(t *testing.T) {
	item := legacyItem()
	cases := []struct {
		exp  map[string]wire.ExpectedAttributeValue
		op   string
		str  string
		want bool
		err  string
	}{
		{exp: map[string]wire.ExpectedAttributeValue{"n": {Value: ptr(n("5"))}}, str: "n = {N:5}", want: true},
		{exp: map[string]wire.ExpectedAttributeValue{"n": {Value: ptr(n("5")), Exists: bptr(true)}}, str: "n = {N:5}", want: true},
		{exp: map[string]wire.ExpectedAttributeValue{"gone": {Exists: bptr(false)}}, str: "attribute_not_exists(gone)", want: true},
		{exp: map[string]wire.ExpectedAttributeValue{"n": {Exists: bptr(false)}}, str: "attribute_not_exists(n)", want: false},
		{exp: map[string]wire.ExpectedAttributeValue{"n": {ComparisonOperator: "GT", AttributeValueList: []attr.Value{n("4")}}}, str: "n > {N:4}", want: true},
		{exp: map[string]wire.ExpectedAttributeValue{"n": {ComparisonOperator: "GT", Value: ptr(n("4"))}}, str: "n > {N:4}", want: true},
		{exp: map[string]wire.ExpectedAttributeValue{"n": {ComparisonOperator: "NULL"}}, str: "attribute_not_exists(n)", want: false},
		{exp: map[string]wire.ExpectedAttributeValue{
			"n":    {Value: ptr(n("6"))},
			"gone": {Exists: bptr(false)},
		}, op: "OR", str: "(attribute_not_exists(gone) OR n = {N:6})", want: true},
		{exp: nil, str: "TRUE", want: true},

		{exp: map[string]wire.ExpectedAttributeValue{"a": {}}, err: "One or more parameter values were invalid: Value must be provided when Exists is null for Attribute: a"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {Exists: bptr(true)}}, err: "One or more parameter values were invalid: Value must be provided when Exists is true for Attribute: a"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {Exists: bptr(false), Value: ptr(s("x"))}}, err: "One or more parameter values were invalid: Value cannot be used when Exists is false for Attribute: a"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {Exists: bptr(true), ComparisonOperator: "EQ", Value: ptr(s("x"))}}, err: "One or more parameter values were invalid: Exists and ComparisonOperator cannot be used together for Attribute: a"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {Value: ptr(s("x")), AttributeValueList: []attr.Value{s("x")}, ComparisonOperator: "EQ"}}, err: "One or more parameter values were invalid: Value and AttributeValueList cannot be used together for Attribute: a"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {AttributeValueList: []attr.Value{s("x")}}}, err: "One or more parameter values were invalid: AttributeValueList can only be used with a ComparisonOperator for Attribute: a"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {ComparisonOperator: "EQ"}}, err: "One or more parameter values were invalid: Value or AttributeValueList must be used with ComparisonOperator: EQ for Attribute: a"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {ComparisonOperator: "BETWEEN", AttributeValueList: []attr.Value{s("x")}}}, err: "One or more parameter values were invalid: Invalid number of argument(s) for the BETWEEN ComparisonOperator"},
		{exp: map[string]wire.ExpectedAttributeValue{"a": {ComparisonOperator: "NOT_NULL", AttributeValueList: []attr.Value{s("x")}}}, err: "One or more parameter values were invalid: Invalid number of argument(s) for the NOT_NULL ComparisonOperator"},
	}
	for i, c := range cases {
		cond, err := LegacyExpected(c.exp, c.op)
		if c.err != "" {
			wantValidation(t, fmt.Sprint("case ", i), err, c.err)
			continue
		}
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if got := fmt.Sprint(cond); got != c.str {
			t.Errorf("case %d: compiled to %s, want %s", i, got, c.str)
		}
		if got, _ := cond.Eval(item); got != c.want {
			t.Errorf("case %d (%s): got %v, want %v", i, c.str, got, c.want)
		}
	}
}

func TestLegacyKeyConditions(t *testing.T) {
	eq := func(v attr.Value) wire.Condition {
		return wire.Condition{ComparisonOperator: "EQ", AttributeValueList: []attr.Value{v}}
	}
	cases := []struct {
		conds       map[string]wire.Condition
		hash, rng   string
		want, error string
	}{
		{map[string]wire.Condition{"pk": eq(s("p"))}, "pk", "sk", "hash: pk = {S:p}", ""},
		{map[string]wire.Condition{"pk": eq(s("p")), "sk": {ComparisonOperator: "BETWEEN", AttributeValueList: []attr.Value{s("a"), s("b")}}}, "pk", "sk", "hash: pk = {S:p}\nrange: sk BETWEEN {S:a} {S:b}", ""},
		{map[string]wire.Condition{"pk": eq(s("p")), "sk": {ComparisonOperator: "BEGINS_WITH", AttributeValueList: []attr.Value{s("a")}}}, "pk", "sk", "hash: pk = {S:p}\nrange: sk begins_with {S:a}", ""},
		{map[string]wire.Condition{"pk": eq(s("p")), "sk": {ComparisonOperator: "GE", AttributeValueList: []attr.Value{n("1")}}}, "pk", "sk", "hash: pk = {S:p}\nrange: sk >= {N:1}", ""},
		{map[string]wire.Condition{}, "pk", "sk", "", "Conditions can be of length 1 or 2 only"},
		{map[string]wire.Condition{"pk": eq(s("p")), "sk": eq(s("a")), "x": eq(s("a"))}, "pk", "sk", "", "Conditions can be of length 1 or 2 only"},
		{map[string]wire.Condition{"sk": eq(s("a"))}, "pk", "sk", "", "Query condition missed key schema element: pk"},
		{map[string]wire.Condition{"pk": eq(s("p")), "x": eq(s("a"))}, "pk", "sk", "", "Query condition missed key schema element: sk"},
		{map[string]wire.Condition{"pk": eq(s("p")), "sk": eq(s("a"))}, "pk", "", "", "Query key condition not supported"},
		{map[string]wire.Condition{"pk": {ComparisonOperator: "GT", AttributeValueList: []attr.Value{s("p")}}}, "pk", "sk", "", "Query key condition not supported"},
		{map[string]wire.Condition{"pk": eq(s("p")), "sk": {ComparisonOperator: "NE", AttributeValueList: []attr.Value{s("a")}}}, "pk", "sk", "", "Attempted conditional constraint is not an indexable operation"},
		{map[string]wire.Condition{"pk": {ComparisonOperator: "BETWEEN", AttributeValueList: []attr.Value{s("a")}}}, "pk", "sk", "", "The attempted filter operation is not supported for the provided filter argument count"},
		{map[string]wire.Condition{"pk": {ComparisonOperator: "EQ", AttributeValueList: []attr.Value{s("a"), s("b")}}}, "pk", "sk", "", "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator"},
		{map[string]wire.Condition{"pk": eq(s("p")), "sk": {ComparisonOperator: "BEGINS_WITH", AttributeValueList: []attr.Value{n("3")}}}, "pk", "sk", "", "One or more parameter values were invalid: ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type"},
		{map[string]wire.Condition{"pk": {ComparisonOperator: "eq", AttributeValueList: []attr.Value{s("a")}}}, "pk", "sk", "", "1 validation error detected: Value 'eq' at 'comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: [IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"},
	}
	for i, c := range cases {
		kc, err := LegacyKeyConditions(c.conds, c.hash, c.rng)
		if c.error != "" {
			wantValidation(t, fmt.Sprint("case ", i), err, c.error)
			continue
		}
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if got := formatKeyCondition(kc); got != c.want {
			t.Errorf("case %d: got\n%s\nwant\n%s", i, got, c.want)
		}
	}
}

func TestLegacyAttributesToGet(t *testing.T) {
	pr, err := LegacyAttributesToGet([]string{"s", "gone", "status", "l"})
	if err != nil {
		t.Fatal(err)
	}
	got := formatItem(pr.Apply(legacyItem()))
	if want := `{"l": {"L": [{"S":"x"}, {"N":"1"}]}, "s": {"S":"hello"}}`; got != want {
		t.Errorf("Apply: got %s, want %s", got, want)
	}
	if got := fmt.Sprint(pr.TopNames()); got != "[s gone status l]" {
		t.Errorf("TopNames: got %s", got)
	}
	_, err = LegacyAttributesToGet([]string{"a", "b", "a"})
	wantValidation(t, "duplicate", err, "One or more parameter values were invalid: Duplicate value in attribute name: a")
	_, err = LegacyAttributesToGet(nil)
	wantValidation(t, "empty", err, "1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1")
}

func TestLegacyAttributeUpdates(t *testing.T) {
	cases := []struct {
		upd  map[string]wire.AttributeValueUpdate
		diff string
		err  string
	}{
		{upd: map[string]wire.AttributeValueUpdate{"s": {Value: ptr(s("new"))}}, diff: `~ s: {"S":"new"}`},
		{upd: map[string]wire.AttributeValueUpdate{"x": {Action: "PUT", Value: ptr(n("1"))}}, diff: `+ x: {"N":"1"}`},
		{upd: map[string]wire.AttributeValueUpdate{"s": {Action: "DELETE"}}, diff: `- s`},
		{upd: map[string]wire.AttributeValueUpdate{"gone": {Action: "DELETE"}}, diff: `(no change)`},
		{upd: map[string]wire.AttributeValueUpdate{"ss": {Action: "DELETE", Value: ptr(attr.Value{Type: attr.SS, SS: []string{"a"}})}}, diff: `~ ss: {"SS": ["b"]}`},
		{upd: map[string]wire.AttributeValueUpdate{"ss": {Action: "DELETE", Value: ptr(attr.Value{Type: attr.SS, SS: []string{"a", "b"}})}}, diff: `- ss`},
		{upd: map[string]wire.AttributeValueUpdate{"n": {Action: "ADD", Value: ptr(n("-7.5"))}}, diff: `~ n: {"N":"-2.5"}`},
		{upd: map[string]wire.AttributeValueUpdate{"c": {Action: "ADD", Value: ptr(n("1"))}}, diff: `+ c: {"N":"1"}`},
		{upd: map[string]wire.AttributeValueUpdate{"ss": {Action: "ADD", Value: ptr(attr.Value{Type: attr.SS, SS: []string{"c"}})}}, diff: `~ ss: {"SS": ["a","b","c"]}`},
		{upd: map[string]wire.AttributeValueUpdate{"l": {Action: "ADD", Value: ptr(attr.List([]attr.Value{s("y")}))}}, diff: `~ l: {"L": [{"S":"x"}, {"N":"1"}, {"S":"y"}]}`},
		{upd: map[string]wire.AttributeValueUpdate{
			"a": {Value: ptr(s("1"))},
			"s": {Action: "DELETE"},
			"n": {Action: "ADD", Value: ptr(n("1"))},
		}, diff: "+ a: {\"S\":\"1\"}\n~ n: {\"N\":\"6\"}\n- s"},

		{upd: map[string]wire.AttributeValueUpdate{"s": {Action: "ADD", Value: ptr(n("1"))}}, err: "Type mismatch for attribute to update"},
		{upd: map[string]wire.AttributeValueUpdate{"n": {Action: "DELETE", Value: ptr(attr.Value{Type: attr.NS, NS: []attr.Number{attr.MustNumber("5")}})}}, err: "Type mismatch for attribute to update"},
		{upd: map[string]wire.AttributeValueUpdate{"s": {Action: "PUT"}}, err: "One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified"},
		{upd: map[string]wire.AttributeValueUpdate{"s": {Action: "ADD"}}, err: "One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified"},
		{upd: map[string]wire.AttributeValueUpdate{"s": {Action: "ADD", Value: ptr(s("x"))}}, err: "One or more parameter values were invalid: ADD action is not supported for the type S"},
		{upd: map[string]wire.AttributeValueUpdate{"s": {Action: "DELETE", Value: ptr(s("x"))}}, err: "One or more parameter values were invalid: DELETE action with value is not supported for the type S"},
		{upd: map[string]wire.AttributeValueUpdate{"s": {Action: "MERGE", Value: ptr(s("x"))}}, err: "1 validation error detected: Value 'MERGE' at 'attributeUpdates.s.member.action' failed to satisfy constraint: Member must satisfy enum value set: [ADD, PUT, DELETE]"},
	}
	for i, c := range cases {
		u, err := LegacyAttributeUpdates(c.upd)
		if err == nil {
			var out attr.Item
			out, _, err = u.Apply(legacyItem())
			if err == nil {
				if c.err != "" {
					t.Errorf("case %d: no error, want %q", i, c.err)
				} else if got := itemDiff(legacyItem(), out); got != c.diff {
					t.Errorf("case %d: got\n%s\nwant\n%s", i, got, c.diff)
				}
				continue
			}
		}
		if c.err == "" {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		wantValidation(t, fmt.Sprint("case ", i), err, c.err)
	}
}
