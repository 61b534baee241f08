package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// testValues are the ExpressionAttributeValues of the error tests.
func testValues() map[string]attr.Value {
	return map[string]attr.Value{
		":s":   attr.Str("x"),
		":s2":  attr.Str("y"),
		":n":   attr.Num(attr.MustNumber("1")),
		":n9":  attr.Num(attr.MustNumber("9")),
		":t":   attr.BoolV(true),
		":m":   attr.Map(map[string]attr.Value{"k": attr.Str("v")}),
		":l":   attr.List([]attr.Value{attr.Str("v")}),
		":nul": attr.Null(),
		":ss":  {Type: attr.SS, SS: []string{"a"}},
		":S":   attr.Str("S"),
		":X":   attr.Str("X"),
	}
}

func testNames() map[string]string { return map[string]string{"#n": "n", "#s": "status"} }

// wantValidation checks that err is a Validation *apierr.Error with
// exactly the message want.
func wantValidation(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want %q", what, want)
		return
	}
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind != apierr.Validation {
		t.Errorf("%s: got %#v, want a Validation *apierr.Error", what, err)
		return
	}
	if e.Message != want {
		t.Errorf("%s:\ngot  %q\nwant %q", what, e.Message, want)
	}
}

func TestConditionErrors(t *testing.T) {
	const p = "Invalid ConditionExpression: "
	cases := []struct{ expr, want string }{
		{"", p + "The expression can not be empty;"},
		{"a ==:s", p + `Syntax error; token: "=", near: "==:s"`},
		{"status = :s", p + "Attribute name is a reserved keyword; reserved keyword: status"},
		{"a.Status = :s", p + "Attribute name is a reserved keyword; reserved keyword: Status"},
		{"#s = :s", ""},
		{"#x = :s", p + "An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"a = :x", p + "An expression attribute value used in expression is not defined; attribute value: :x"},
		{"a = :x AND #x = :s", p + "An expression attribute value used in expression is not defined; attribute value: :x"},
		{"foo(a)", p + "Invalid function name; function: foo"},
		{"ATTRIBUTE_EXISTS(a)", p + "Invalid function name; function: ATTRIBUTE_EXISTS"},
		{"if_not_exists(a, :s)", p + "The function is not allowed in a condition expression; function: if_not_exists"},
		{"list_append(a, :l) = :l", p + "The function is not allowed in a condition expression; function: list_append"},
		{"size(a)", p + "The function is not allowed to be used this way in an expression; function: size"},
		{"contains(a, :s) = :t", p + "The function is not allowed to be used this way in an expression; function: contains"},
		{"a IN (attribute_exists(b))", p + "The function is not allowed to be used this way in an expression; function: attribute_exists"},
		{"attribute_exists(a, b)", p + "Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 2"},
		{"begins_with(a)", p + "Incorrect number of operands for operator or function; operator or function: begins_with, number of operands: 1"},
		{"size(a, b) > :n", p + "Incorrect number of operands for operator or function; operator or function: size, number of operands: 2"},
		{"attribute_exists(:s)", p + "Operator or function requires a document path; operator or function: attribute_exists"},
		{"attribute_not_exists(size(a))", p + "Operator or function requires a document path; operator or function: attribute_not_exists"},
		{"a = a", p + "The first operand must be distinct from the remaining operands for this operator or function; operator: =, first operand: [a]"},
		{"#n.b[1] < n.b[1]", p + "The first operand must be distinct from the remaining operands for this operator or function; operator: <, first operand: [n, b, [1]]"},
		{"contains(a, a)", p + "The first operand must be distinct from the remaining operands for this operator or function; operator: contains, first operand: [a]"},
		{"a < :t", p + "Incorrect operand type for operator or function; operator or function: <, operand type: BOOL"},
		{"a >= :m", p + "Incorrect operand type for operator or function; operator or function: >=, operand type: M"},
		{"a = :m", ""},
		{"a BETWEEN :n AND :s", p + "The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:x}"},
		{"a BETWEEN :n9 AND :n", p + "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {N:9}, upper bound operand: AttributeValue: {N:1}"},
		{"a BETWEEN :n AND :n9", ""},
		{"a BETWEEN :l AND :l", p + "Incorrect operand type for operator or function; operator or function: BETWEEN, operand type: L"},
		{"begins_with(a, :n)", p + "Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"},
		{"attribute_type(a, :n)", p + "Incorrect operand type for operator or function; operator or function: attribute_type, operand type: N"},
		{"attribute_type(a, :X)", p + "Invalid attribute type name found; type: X, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"},
		{"attribute_type(a, :S)", ""},
		{"attribute_type(:S, :S)", ""},
		{"attribute_type(a, b)", p + "Incorrect operand type for operator or function; operator or function: attribute_type, operand type: {NS,SS,L,BS,N,M,B,BOOL,NULL,S}"},
		{"size(:n) > :n", p + "Incorrect operand type for operator or function; operator or function: size, operand type: N"},
		{"size(:s) > :n", ""},
		{"size(a) > :s", ""},
		{"((a = :s))", p + "The expression has redundant parentheses;"},
		{"((a)) = :s", p + "The expression has redundant parentheses;"},
		{"(a) = (:s) AND ((b = :s) OR c = :s)", ""},
		// Several errors: DynamoDB picks by kind, not position.
		{"a = :x AND status = :s", p + "Attribute name is a reserved keyword; reserved keyword: status"},
		{"status = :s AND foo(a)", p + "Invalid function name; function: foo"},
		{"a = a AND b = :x", p + "An expression attribute value used in expression is not defined; attribute value: :x"},
		{"((status = :s))", p + "The expression has redundant parentheses;"},
		{"status = :s AND size(a)", p + "The function is not allowed to be used this way in an expression; function: size"},
	}
	for _, c := range cases {
		params := NewParams(testNames(), testValues())
		_, err := params.Condition(c.expr)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: unexpected error %v", c.expr, err)
			}
			continue
		}
		wantValidation(t, c.expr, err, c.want)
	}
}

func TestInOperandLimit(t *testing.T) {
	list := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = ":s"
		}
		return "a IN (" + strings.Join(s, ", ") + ")"
	}
	// 100 operands in all, the left-hand one included.
	if _, err := NewParams(nil, testValues()).Condition(list(99)); err != nil {
		t.Errorf("IN with 99 values: %v", err)
	}
	_, err := NewParams(nil, testValues()).Condition(list(100))
	wantValidation(t, "IN with 100 values", err, "Invalid ConditionExpression: The IN operator is provided with too many operands; number of operands: 101")
}

func TestErrorLabels(t *testing.T) {
	p := NewParams(nil, testValues())
	_, err := p.Condition("status = :s")
	wantValidation(t, "Condition", err, "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: status")
	_, err = p.Filter("status = :s")
	wantValidation(t, "Filter", err, "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: status")
	_, err = p.KeyCondition("status = :s", "pk", "")
	wantValidation(t, "KeyCondition", err, "Invalid KeyConditionExpression: Attribute name is a reserved keyword; reserved keyword: status")
	_, err = p.Update("SET status = :s")
	wantValidation(t, "Update", err, "Invalid UpdateExpression: Attribute name is a reserved keyword; reserved keyword: status")
	_, err = p.Projection("status")
	wantValidation(t, "Projection", err, "Invalid ProjectionExpression: Attribute name is a reserved keyword; reserved keyword: status")

	for name, f := range map[string]func(string) error{
		"ConditionExpression":    func(s string) error { _, err := p.Condition(s); return err },
		"FilterExpression":       func(s string) error { _, err := p.Filter(s); return err },
		"KeyConditionExpression": func(s string) error { _, err := p.KeyCondition(s, "pk", "sk"); return err },
		"UpdateExpression":       func(s string) error { _, err := p.Update(s); return err },
		"ProjectionExpression":   func(s string) error { _, err := p.Projection(s); return err },
	} {
		wantValidation(t, name+" empty", f(""), "Invalid "+name+": The expression can not be empty;")
		wantValidation(t, name+" too long", f(strings.Repeat("a", MaxExpressionLength+1)),
			"Invalid "+name+": Expression size has exceeded the maximum allowed size; expression size: 4097")
		wantValidation(t, name+" syntax", f("!"), "Invalid "+name+`: Syntax error; token: "!", near: "!"`)
	}
}

func TestUpdateErrors(t *testing.T) {
	const p = "Invalid UpdateExpression: "
	cases := []struct{ expr, want string }{
		{"REMOVE a SET b = :s REMOVE c", p + `The "REMOVE" section can only be used once in an update expression;`},
		{"ADD a :n ADD b :n", p + `The "ADD" section can only be used once in an update expression;`},
		{"DELETE a :ss DELETE b :ss", p + `The "DELETE" section can only be used once in an update expression;`},
		{"SET a = :s, a = :s2", p + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"},
		{"SET a = :s REMOVE a.b", p + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]"},
		{"REMOVE a.b[2].c ADD a.b :n", p + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a, b, [2], c], path two: [a, b]"},
		{"SET #n = :s ADD n :n", p + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [n], path two: [n]"},
		{"SET a[1] = :s, a.b = :s", p + "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, [1]], path two: [a, b]"},
		{"SET a[1] = :s, a[2] = :s REMOVE a[3]", ""},
		{"SET a.b = :s, a.c = :s", ""},
		{"ADD a :s", p + "Incorrect operand type for operator or function; operator: ADD, operand type: STRING"},
		{"ADD a :t", p + "Incorrect operand type for operator or function; operator: ADD, operand type: BOOLEAN"},
		{"ADD a :m", p + "Incorrect operand type for operator or function; operator: ADD, operand type: MAP"},
		{"ADD a :l", p + "Incorrect operand type for operator or function; operator: ADD, operand type: LIST"},
		{"ADD a :nul", p + "Incorrect operand type for operator or function; operator: ADD, operand type: NULL"},
		{"DELETE a :n", p + "Incorrect operand type for operator or function; operator: DELETE, operand type: NUMBER"},
		{"ADD a :n, b :ss DELETE c :ss", ""},
		{"SET a = :s + :n", p + "Incorrect operand type for operator or function; operator or function: +, operand type: S"},
		{"SET a = list_append(:n, b)", p + "Incorrect operand type for operator or function; operator or function: list_append, operand type: N"},
		{"SET a = if_not_exists(b)", p + "Incorrect number of operands for operator or function; operator or function: if_not_exists, number of operands: 1"},
		{"SET a = if_not_exists(:s, b)", p + "Operator or function requires a document path; operator or function: if_not_exists"},
		{"SET a = attribute_exists(b)", p + "The function is not allowed in an update expression; function: attribute_exists"},
		{"SET a = nope(b)", p + "Invalid function name; function: nope"},
		{"SET a = ((b))", p + "The expression has redundant parentheses;"},
		{"SET a = list_append(if_not_exists(a, :l), :l)", ""},
		{"SET a = list_append(list_append(:l, :l), :l)", p + "The function is not allowed to be used this way in an expression; function: list_append"},
		{"SET a = if_not_exists(a, list_append(:l, :l))", p + "The function is not allowed to be used this way in an expression; function: list_append"},
		{"SET a = list_append(:l, :l) + :n", p + "Incorrect operand type for operator or function; operator or function: +, operand type: L"},
		{"SET a = if_not_exists(if_not_exists(a, :n), :n)", p + "Operator or function requires a document path; operator or function: if_not_exists"},
		{"SET a = if_not_exists(b, :n) + :n", ""},
		{"SET a = (b)", ""},
		{"SET #x = :s", p + "An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"SET a = :x", p + "An expression attribute value used in expression is not defined; attribute value: :x"},
		{"ADD a :x", p + "An expression attribute value used in expression is not defined; attribute value: :x"},
		// Order: reserved words, functions, sections, names, values, paths, operand types.
		{"SET a = :x, #x = :s", p + "An expression attribute name used in the document path is not defined; attribute name: #x"},
		{"SET a = :x, status = :s", p + "Attribute name is a reserved keyword; reserved keyword: status"},
		{"SET a = foo(b) SET status = :s", p + "Attribute name is a reserved keyword; reserved keyword: status"},
		{"SET a = foo(b) SET c = :s", p + "Invalid function name; function: foo"},
		{"SET a = :s, a = :x SET b = :s", p + `The "SET" section can only be used once in an update expression;`},
		{"SET a = :x, a = :s", p + "An expression attribute value used in expression is not defined; attribute value: :x"},
		{"SET a = :s, a = :s ADD b :s", p + "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"},
	}
	for _, c := range cases {
		params := NewParams(testNames(), testValues())
		_, err := params.Update(c.expr)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: unexpected error %v", c.expr, err)
			}
			continue
		}
		wantValidation(t, c.expr, err, c.want)
	}
}

func TestPlaceholderUsage(t *testing.T) {
	names := map[string]string{"#a": "a", "#b": "b", "#c": "c"}
	values := map[string]attr.Value{":a": attr.Str("a"), ":b": attr.Str("b"), ":c": attr.Str("c")}

	// Used across several expressions of one request.
	p := NewParams(names, values)
	if _, err := p.Condition("#a = :a"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Update("SET #b = :b"); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckUnused(); err == nil {
		t.Fatal("CheckUnused: want an error for #c and :c")
	} else {
		wantValidation(t, "CheckUnused", err, "Value provided in ExpressionAttributeNames unused in expressions: keys: {#c}")
	}
	if _, err := p.Projection("#c"); err != nil {
		t.Fatal(err)
	}
	wantValidation(t, "CheckUnused", p.CheckUnused(), "Value provided in ExpressionAttributeValues unused in expressions: keys: {:c}")
	if _, err := p.Filter("c = :c"); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckUnused(); err != nil {
		t.Errorf("CheckUnused after using everything: %v", err)
	}

	// Several unused keys are listed, sorted.
	p = NewParams(names, values)
	wantValidation(t, "all unused", p.CheckUnused(), "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a, #b, #c}")

	// A zero Params (no maps) has nothing unused.
	var zero Params
	if err := zero.CheckUnused(); err != nil {
		t.Errorf("zero Params: %v", err)
	}
	if _, err := zero.Condition("a = b"); err != nil {
		t.Errorf("zero Params: %v", err)
	}
}

func TestParamsValidate(t *testing.T) {
	cases := []struct {
		names  map[string]string
		values map[string]attr.Value
		want   string
	}{
		{map[string]string{}, nil, "ExpressionAttributeNames must not be empty"},
		{nil, map[string]attr.Value{}, "ExpressionAttributeValues must not be empty"},
		{map[string]string{"n": "x"}, nil, `ExpressionAttributeNames contains invalid key: Syntax error; key: "n"`},
		{map[string]string{"#": "x"}, nil, `ExpressionAttributeNames contains invalid key: Syntax error; key: "#"`},
		{map[string]string{"#a-b": "x"}, nil, `ExpressionAttributeNames contains invalid key: Syntax error; key: "#a-b"`},
		{nil, map[string]attr.Value{"v": attr.Str("x")}, `ExpressionAttributeValues contains invalid key: Syntax error; key: "v"`},
		{nil, map[string]attr.Value{":v": {}}, "ExpressionAttributeValues contains invalid value: Supplied AttributeValue is empty, must contain exactly one of the supported datatypes for key :v"},
		{map[string]string{"#a_1": "x"}, map[string]attr.Value{":V_2": attr.Str("x")}, ""},
	}
	for i, c := range cases {
		p := NewParams(c.names, c.values)
		err := p.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("case %d: %v", i, err)
			}
			continue
		}
		wantValidation(t, "Validate", err, c.want)
		// Every expression method reports it first.
		_, err = p.Condition("a = b")
		wantValidation(t, "Condition", err, c.want)
	}
}

func TestReservedWords(t *testing.T) {
	if len(reservedWords) != 573 {
		t.Errorf("got %d reserved words, want DynamoDB's 573", len(reservedWords))
	}
	for w := range reservedWords {
		if w != strings.ToUpper(w) || len(w) > len("LOCALTIMESTAMP") {
			t.Errorf("reserved word %q: not upper case or longer than isReserved allows", w)
		}
	}
	for _, w := range []string{"status", "Name", "DATA", "size", "list", "value", "timestamp", "flattern"} {
		if !isReserved(w) {
			t.Errorf("%q should be reserved", w)
		}
	}
	for _, w := range []string{"pk", "sk", "id", "title", "contains", "begins_with", "attribute_exists", "email", "_status"} {
		if isReserved(w) {
			t.Errorf("%q should not be reserved", w)
		}
	}
}
