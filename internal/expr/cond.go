package expr

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// The evaluable form of conditions. Compile (compile.go) and the legacy
// translations (legacy.go) both produce it; it holds resolved attribute
// names and values and never fails at run time: DynamoDB treats a
// comparison between mismatched types, or with a missing attribute, as
// false rather than an error.

// operand yields a value from an item, or false when there is none (a
// missing attribute, or size() of a type that has no size).
type operand interface {
	get(item attr.Item) (attr.Value, bool)
	format(b *strings.Builder)
}

// pathOperand reads a document path.
type pathOperand struct{ path Path }

func (o pathOperand) get(item attr.Item) (attr.Value, bool) { return o.path.Get(item) }
func (o pathOperand) format(b *strings.Builder)             { b.WriteString(o.path.String()) }

// constOperand is a value from ExpressionAttributeValues or a legacy
// AttributeValueList.
type constOperand struct{ v attr.Value }

func (o constOperand) get(attr.Item) (attr.Value, bool) { return o.v, true }
func (o constOperand) format(b *strings.Builder)        { formatValue(b, o.v) }

// sizeOperand is size(x).
type sizeOperand struct{ x operand }

func (o sizeOperand) get(item attr.Item) (attr.Value, bool) {
	v, ok := o.x.get(item)
	if !ok {
		return attr.Value{}, false
	}
	n, ok := sizeOf(v)
	if !ok {
		return attr.Value{}, false
	}
	return attr.Num(attr.MustNumber(strconv.Itoa(n))), true
}

func (o sizeOperand) format(b *strings.Builder) {
	b.WriteString("size(")
	o.x.format(b)
	b.WriteByte(')')
}

// sizeOf is DynamoDB's size(): bytes of a string or binary, elements of a
// set, list or map. Numbers, booleans and nulls have no size.
func sizeOf(v attr.Value) (int, bool) {
	switch v.Type {
	case attr.S:
		return len(v.S), true
	case attr.B:
		return len(v.B), true
	case attr.SS:
		return len(v.SS), true
	case attr.NS:
		return len(v.NS), true
	case attr.BS:
		return len(v.BS), true
	case attr.L:
		return len(v.L), true
	case attr.M:
		return len(v.M), true
	}
	return 0, false
}

// formatValue writes v as DynamoDB prints values in messages: {S:x}.
func formatValue(b *strings.Builder, v attr.Value) {
	b.WriteByte('{')
	b.WriteString(v.Type.String())
	b.WriteByte(':')
	switch v.Type {
	case attr.S:
		b.WriteString(v.S)
	case attr.N:
		b.WriteString(v.N.String())
	case attr.B:
		b.WriteString(base64.StdEncoding.EncodeToString(v.B))
	case attr.BOOL:
		if v.Bool {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case attr.NULL:
		b.WriteString("true")
	default:
		b.Write(attr.AppendJSON(nil, v))
	}
	b.WriteByte('}')
}

// cond is one node of an evaluable condition.
type cond interface {
	eval(item attr.Item) bool
	format(b *strings.Builder)
}

// compiledCondition implements Condition.
type compiledCondition struct {
	root cond
	top  []string // top-level names read, when compiled to record them
}

// filterCondition is a compiled FilterExpression: it tells the names it
// reads.
type filterCondition struct{ *compiledCondition }

// TopNames returns the distinct top-level attribute names the filter's
// paths start with, in order of appearance.
func (c *filterCondition) TopNames() []string { return c.top }

var _ Condition = (*compiledCondition)(nil)

func (c *compiledCondition) Eval(item attr.Item) (bool, error) { return c.root.eval(item), nil }

// String returns the condition in expression syntax with names and values
// substituted, for logs and tests.
func (c *compiledCondition) String() string {
	var b strings.Builder
	c.root.format(&b)
	return b.String()
}

type trueCond struct{}

func (trueCond) eval(attr.Item) bool       { return true }
func (trueCond) format(b *strings.Builder) { b.WriteString("TRUE") }

type andCond struct{ l, r cond }

func (c andCond) eval(item attr.Item) bool { return c.l.eval(item) && c.r.eval(item) }
func (c andCond) format(b *strings.Builder) {
	b.WriteByte('(')
	c.l.format(b)
	b.WriteString(" AND ")
	c.r.format(b)
	b.WriteByte(')')
}

type orCond struct{ l, r cond }

func (c orCond) eval(item attr.Item) bool { return c.l.eval(item) || c.r.eval(item) }
func (c orCond) format(b *strings.Builder) {
	b.WriteByte('(')
	c.l.format(b)
	b.WriteString(" OR ")
	c.r.format(b)
	b.WriteByte(')')
}

type notCond struct{ x cond }

func (c notCond) eval(item attr.Item) bool { return !c.x.eval(item) }
func (c notCond) format(b *strings.Builder) {
	b.WriteString("NOT ")
	c.x.format(b)
}

// cmpCond is a comparison.
type cmpCond struct {
	op   string // = <> < <= > >=
	l, r operand
}

func (c cmpCond) eval(item attr.Item) bool {
	a, aok := c.l.get(item)
	b, bok := c.r.get(item)
	return compareValues(c.op, a, aok, b, bok)
}

func (c cmpCond) format(b *strings.Builder) {
	c.l.format(b)
	b.WriteByte(' ')
	b.WriteString(c.op)
	b.WriteByte(' ')
	c.r.format(b)
}

// compareValues applies op with DynamoDB's rules: values of different
// types are unequal and unordered; only S, N and B are ordered; a missing
// operand makes every comparison false except <>, which is then true.
func compareValues(op string, a attr.Value, aok bool, b attr.Value, bok bool) bool {
	switch op {
	case "=":
		return aok && bok && attr.Equal(a, b)
	case "<>":
		return !(aok && bok && attr.Equal(a, b))
	}
	if !aok || !bok {
		return false
	}
	c, ok := attr.Compare(a, b)
	if !ok {
		return false
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

type betweenCond struct{ x, lo, hi operand }

func (c betweenCond) eval(item attr.Item) bool {
	x, ok := c.x.get(item)
	if !ok {
		return false
	}
	lo, lok := c.lo.get(item)
	hi, hok := c.hi.get(item)
	return compareValues(">=", x, true, lo, lok) && compareValues("<=", x, true, hi, hok)
}

func (c betweenCond) format(b *strings.Builder) {
	c.x.format(b)
	b.WriteString(" BETWEEN ")
	c.lo.format(b)
	b.WriteString(" AND ")
	c.hi.format(b)
}

type inCond struct {
	x    operand
	list []operand
}

func (c inCond) eval(item attr.Item) bool {
	x, ok := c.x.get(item)
	if !ok {
		return false
	}
	for _, o := range c.list {
		if v, ok := o.get(item); ok && attr.Equal(x, v) {
			return true
		}
	}
	return false
}

func (c inCond) format(b *strings.Builder) {
	c.x.format(b)
	b.WriteString(" IN (")
	for i, o := range c.list {
		if i > 0 {
			b.WriteString(", ")
		}
		o.format(b)
	}
	b.WriteByte(')')
}

// existsCond is attribute_exists (not false) or attribute_not_exists.
type existsCond struct {
	path Path
	not  bool
}

func (c existsCond) eval(item attr.Item) bool {
	_, ok := c.path.Get(item)
	return ok != c.not
}

func (c existsCond) format(b *strings.Builder) {
	if c.not {
		b.WriteString("attribute_not_exists(")
	} else {
		b.WriteString("attribute_exists(")
	}
	b.WriteString(c.path.String())
	b.WriteByte(')')
}

// typeCond is attribute_type(x, t).
type typeCond struct{ x, t operand }

func (c typeCond) eval(item attr.Item) bool {
	x, ok := c.x.get(item)
	if !ok {
		return false
	}
	t, ok := c.t.get(item)
	return ok && t.Type == attr.S && x.Type.String() == t.S
}

func (c typeCond) format(b *strings.Builder) {
	b.WriteString("attribute_type(")
	c.x.format(b)
	b.WriteString(", ")
	c.t.format(b)
	b.WriteByte(')')
}

// beginsCond is begins_with(x, prefix), on strings or binaries.
type beginsCond struct{ x, prefix operand }

func (c beginsCond) eval(item attr.Item) bool {
	x, ok := c.x.get(item)
	if !ok {
		return false
	}
	p, ok := c.prefix.get(item)
	if !ok || p.Type != x.Type {
		return false
	}
	switch x.Type {
	case attr.S:
		return strings.HasPrefix(x.S, p.S)
	case attr.B:
		return bytes.HasPrefix(x.B, p.B)
	}
	return false
}

func (c beginsCond) format(b *strings.Builder) {
	b.WriteString("begins_with(")
	c.x.format(b)
	b.WriteString(", ")
	c.prefix.format(b)
	b.WriteByte(')')
}

// containsCond is contains(x, v): substring of a string, subsequence of a
// binary, member of a set, or element of a list.
type containsCond struct{ x, v operand }

func (c containsCond) eval(item attr.Item) bool {
	x, ok := c.x.get(item)
	if !ok {
		return false
	}
	v, ok := c.v.get(item)
	if !ok {
		return false
	}
	return containsValue(x, v)
}

func containsValue(x, v attr.Value) bool {
	switch x.Type {
	case attr.S:
		return v.Type == attr.S && strings.Contains(x.S, v.S)
	case attr.B:
		return v.Type == attr.B && bytes.Contains(x.B, v.B)
	case attr.SS:
		if v.Type == attr.S {
			for _, s := range x.SS {
				if s == v.S {
					return true
				}
			}
		}
	case attr.NS:
		if v.Type == attr.N {
			for _, n := range x.NS {
				if n == v.N {
					return true
				}
			}
		}
	case attr.BS:
		if v.Type == attr.B {
			for _, e := range x.BS {
				if bytes.Equal(e, v.B) {
					return true
				}
			}
		}
	case attr.L:
		for _, e := range x.L {
			if attr.Equal(e, v) {
				return true
			}
		}
	}
	return false
}

func (c containsCond) format(b *strings.Builder) {
	b.WriteString("contains(")
	c.x.format(b)
	b.WriteString(", ")
	c.v.format(b)
	b.WriteByte(')')
}
