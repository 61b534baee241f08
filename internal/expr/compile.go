package expr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Compiling is resolve + validate in one walk over the syntax tree: each
// placeholder is looked up in Params (and marked used), each unescaped name
// is checked against the reserved words, and each operator's operands are
// checked where their types are known before any item is read (values from
// ExpressionAttributeValues, and size(), which is always a number).
//
// DynamoDB reports one error, and when an expression has several it picks
// by kind, not by position: a reserved word is reported before an undefined
// placeholder that comes earlier in the string, for instance. So the walk
// records the first message of each category and the caller picks the
// first non-empty one in its language's order.

// category is a class of validation error.
type category int

const (
	catParens      category = iota // redundant parentheses
	catUnknownFunc                 // unknown function, or one from the other language
	catMisusedFunc                 // function used as operand or condition where it cannot be
	catReserved                    // reserved word as attribute name
	catNesting                     // document path deeper than a document can be
	catSection                     // update clause used twice
	catUndefined                   // undefined #name or :value, whichever came first
	catUndefName                   // undefined #name
	catUndefValue                  // undefined :value
	catOverlap                     // overlapping document paths
	catConflict                    // conflicting document paths
	catOperands                    // wrong number of operands
	catDistinct                    // a op a
	catOperandType                 // ADD/DELETE operand of the wrong type
	catFunction                    // operand types, BETWEEN bounds, IN size, ...
	numCategories
)

// Error orders, per language.
var (
	conditionOrder  = []category{catParens, catUnknownFunc, catMisusedFunc, catReserved, catNesting, catUndefined, catOperands, catDistinct, catFunction}
	updateOrder     = []category{catParens, catReserved, catNesting, catUnknownFunc, catMisusedFunc, catSection, catUndefName, catUndefValue, catOverlap, catConflict, catOperandType, catOperands, catFunction}
	projectionOrder = []category{catReserved, catNesting, catUndefName, catOverlap, catConflict}
)

// compiler carries one expression's resolution state.
type compiler struct {
	params *Params
	msgs   [numCategories]string

	collectTop bool     // record top-level names in top
	top        []string // distinct top-level names of resolved paths
}

func (c *compiler) errorf(cat category, format string, args ...any) {
	if c.msgs[cat] == "" {
		c.msgs[cat] = fmt.Sprintf(format, args...)
	}
}

// first returns the message of the first category in order that has one.
func (c *compiler) first(order []category) string {
	for _, cat := range order {
		if c.msgs[cat] != "" {
			return c.msgs[cat]
		}
	}
	return ""
}

// path resolves a path node. ok is false when a placeholder is undefined.
//
// NB: a path of n elements addresses a value at depth n-1 (see
// attr.MaxDepth), so a path deeper than any stored value can be is
// refused: its depth is reported as its nesting levels. Where DynamoDB
// draws this line is not documented; ours follows from attr.MaxDepth.
func (c *compiler) path(n *pathNode) (Path, bool) {
	if d := len(n.elems) - 1; d > attr.MaxDepth {
		c.errorf(catNesting, "The document path has too many nesting levels; nesting levels: %d", d)
	}
	p := make(Path, len(n.elems))
	ok := true
	for i, e := range n.elems {
		switch {
		case e.isIndex():
			p[i] = PathElem{Index: e.index}
		case e.isPlaceholder():
			name, found := c.params.name(e.name)
			if !found {
				msg := "An expression attribute name used in the document path is not defined; attribute name: " + e.name
				c.errorf(catUndefName, "%s", msg)
				c.errorf(catUndefined, "%s", msg)
				ok = false
			}
			p[i] = PathElem{Name: name, Index: -1}
		default:
			if isReserved(e.name) {
				c.errorf(catReserved, "Attribute name is a reserved keyword; reserved keyword: %s", e.name)
			}
			p[i] = PathElem{Name: e.name, Index: -1}
		}
	}
	if c.collectTop && ok && !slices.Contains(c.top, p[0].Name) {
		c.top = append(c.top, p[0].Name)
	}
	return p, ok
}

// value resolves a :value node.
func (c *compiler) value(n *valueNode) (attr.Value, bool) {
	v, found := c.params.value(n.name)
	if !found {
		msg := "An expression attribute value used in expression is not defined; attribute value: " + n.name
		c.errorf(catUndefValue, "%s", msg)
		c.errorf(catUndefined, "%s", msg)
	}
	return v, found
}

// unparen strips parentheses, reporting doubled ones.
func (c *compiler) unparen(n node) node {
	for {
		p, ok := n.(*parenNode)
		if !ok {
			return n
		}
		if _, ok := p.x.(*parenNode); ok {
			c.errorf(catParens, "The expression has redundant parentheses;")
		}
		n = p.x
	}
}

// Functions of the condition language, with their operand counts.
var conditionFuncs = map[string]int{
	"attribute_exists":     1,
	"attribute_not_exists": 1,
	"attribute_type":       2,
	"begins_with":          2,
	"contains":             2,
	"size":                 1,
}

// Functions of the update language.
var updateFuncs = map[string]int{
	"if_not_exists": 2,
	"list_append":   2,
}

// staticType is the type of an operand known without an item: a value's
// type, N for size(), Invalid for a path.
func staticType(o operand) attr.Type {
	switch o := o.(type) {
	case constOperand:
		return o.v.Type
	case sizeOperand:
		return attr.N
	}
	return attr.Invalid
}

func (c *compiler) operandCount(name string, got int) bool {
	if want, ok := conditionFuncs[name]; ok && want != got {
		c.errorf(catOperands, "Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", name, got)
		return false
	}
	if want, ok := updateFuncs[name]; ok && want != got {
		c.errorf(catOperands, "Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", name, got)
		return false
	}
	return true
}

// ---- conditions ----

// cond compiles a condition node (the parser guarantees isCondLike).
func (c *compiler) cond(n node) cond {
	switch n := c.unparen(n).(type) {
	case *logicNode:
		l, r := c.cond(n.l), c.cond(n.r)
		if n.op == "AND" {
			return andCond{l, r}
		}
		return orCond{l, r}
	case *notNode:
		return notCond{c.cond(n.x)}
	case *compareNode:
		l, r := c.operand(n.l), c.operand(n.r)
		c.distinct(n.op, l, r)
		if n.op != "=" && n.op != "<>" {
			c.scalarOperands(n.op, l, r)
		}
		return cmpCond{op: n.op, l: l, r: r}
	case *betweenNode:
		x, lo, hi := c.operand(n.x), c.operand(n.lo), c.operand(n.hi)
		c.scalarOperands("BETWEEN", x, lo, hi)
		c.betweenBounds(lo, hi)
		return betweenCond{x, lo, hi}
	case *inNode:
		x := c.operand(n.x)
		// NB: DynamoDB's limit of 100 operands counts the left-hand one.
		if len(n.list)+1 > 100 {
			c.errorf(catFunction, "The IN operator is provided with too many operands; number of operands: %d", len(n.list)+1)
		}
		list := make([]operand, len(n.list))
		for i, e := range n.list {
			list[i] = c.operand(e)
		}
		return inCond{x: x, list: list}
	case *callNode:
		return c.condCall(n)
	}
	// Unreachable for parser output; compile to false rather than panic.
	return notCond{trueCond{}}
}

// condCall compiles a function used as a condition.
func (c *compiler) condCall(n *callNode) cond {
	args := make([]operand, len(n.args))
	for i, a := range n.args {
		args[i] = c.operand(a)
	}
	if !c.knownConditionFunc(n.name) {
		return trueCond{}
	}
	if n.name == "size" {
		c.errorf(catMisusedFunc, "The function is not allowed to be used this way in an expression; function: size")
		return trueCond{}
	}
	if !c.operandCount(n.name, len(args)) {
		return trueCond{}
	}
	switch n.name {
	case "attribute_exists", "attribute_not_exists":
		p, ok := args[0].(pathOperand)
		if !ok {
			c.errorf(catFunction, "Operator or function requires a document path; operator or function: %s", n.name)
			return trueCond{}
		}
		return existsCond{path: p.path, not: n.name == "attribute_not_exists"}
	case "attribute_type":
		c.distinct(n.name, args[0], args[1])
		if _, ok := args[1].(pathOperand); ok {
			// The type must be given as a value, not read from the item.
			c.errorf(catFunction, "Incorrect operand type for operator or function; operator or function: %s, operand type: {NS,SS,L,BS,N,M,B,BOOL,NULL,S}", n.name)
		} else if t := staticType(args[1]); t != attr.Invalid {
			if t != attr.S {
				c.errorf(catFunction, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s", n.name, t)
			} else if name := args[1].(constOperand).v.S; !validTypeName(name) {
				c.errorf(catFunction, "Invalid attribute type name found; type: %s, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}", name)
			}
		}
		return typeCond{args[0], args[1]}
	case "begins_with":
		c.distinct(n.name, args[0], args[1])
		for _, a := range args {
			if t := staticType(a); t != attr.Invalid && t != attr.S && t != attr.B {
				c.errorf(catFunction, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s", n.name, t)
			}
		}
		return beginsCond{args[0], args[1]}
	default: // contains
		c.distinct(n.name, args[0], args[1])
		return containsCond{args[0], args[1]}
	}
}

func validTypeName(s string) bool {
	t, ok := attr.ParseType(s)
	return ok && t != attr.Invalid
}

// knownConditionFunc reports (and records) functions that do not belong
// in a condition.
func (c *compiler) knownConditionFunc(name string) bool {
	if _, ok := conditionFuncs[name]; ok {
		return true
	}
	if _, ok := updateFuncs[name]; ok {
		c.errorf(catUnknownFunc, "The function is not allowed in a condition expression; function: %s", name)
	} else {
		c.errorf(catUnknownFunc, "Invalid function name; function: %s", name)
	}
	return false
}

// operand compiles an operand of a condition.
func (c *compiler) operand(n node) operand {
	switch n := c.unparen(n).(type) {
	case *pathNode:
		p, _ := c.path(n)
		return pathOperand{p}
	case *valueNode:
		v, _ := c.value(n)
		return constOperand{v}
	case *callNode:
		args := make([]operand, len(n.args))
		for i, a := range n.args {
			args[i] = c.operand(a)
		}
		if !c.knownConditionFunc(n.name) {
			return constOperand{}
		}
		if n.name != "size" {
			c.errorf(catMisusedFunc, "The function is not allowed to be used this way in an expression; function: %s", n.name)
			return constOperand{}
		}
		if !c.operandCount(n.name, len(args)) {
			return constOperand{}
		}
		if t := staticType(args[0]); t == attr.N || t == attr.BOOL || t == attr.NULL {
			c.errorf(catFunction, "Incorrect operand type for operator or function; operator or function: size, operand type: %s", t)
		}
		return sizeOperand{args[0]}
	}
	// Conditions in operand position are syntax errors; unreachable.
	return constOperand{}
}

// distinct rejects "a op a" for two identical paths.
func (c *compiler) distinct(op string, l, r operand) {
	lp, ok1 := l.(pathOperand)
	rp, ok2 := r.(pathOperand)
	if ok1 && ok2 && lp.path.Equal(rp.path) {
		c.errorf(catDistinct, "The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s", op, lp.path.listString())
	}
}

// scalarOperands rejects values of types that cannot be ordered.
func (c *compiler) scalarOperands(op string, ops ...operand) {
	for _, o := range ops {
		if t := staticType(o); t != attr.Invalid && !t.IsScalarKey() {
			c.errorf(catFunction, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s", op, t)
		}
	}
}

// betweenBounds checks constant BETWEEN bounds: same type, lo <= hi.
func (c *compiler) betweenBounds(lo, hi operand) {
	l, ok1 := lo.(constOperand)
	h, ok2 := hi.(constOperand)
	if !ok1 || !ok2 || l.v.Type == attr.Invalid || h.v.Type == attr.Invalid {
		return
	}
	var b strings.Builder
	b.WriteString("lower bound operand: AttributeValue: ")
	formatValue(&b, l.v)
	b.WriteString(", upper bound operand: AttributeValue: ")
	formatValue(&b, h.v)
	if l.v.Type != h.v.Type {
		c.errorf(catFunction, "The BETWEEN operator requires same data type for lower and upper bounds; %s", b.String())
		return
	}
	if cmp, ok := attr.Compare(l.v, h.v); ok && cmp > 0 {
		c.errorf(catFunction, "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; %s", b.String())
	}
}
