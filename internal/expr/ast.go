package expr

import (
	"strconv"
	"strings"
)

// The syntax tree. Parsing produces it without consulting Params, so it
// still holds placeholders (#n, :v) and unchecked names; compile (resolve +
// validate) turns it into the evaluable form in cond.go, update.go and
// projection.go. Every node prints back to source (String) and to an
// S-expression for golden files (dump).

// node is any syntax tree node.
type node interface {
	// format appends the node's source form.
	format(b *strings.Builder)
	// dump appends the node's S-expression form.
	dump(b *strings.Builder)
}

// pathNode is a document path: a.#b[3].c
type pathNode struct {
	elems []pathElemNode
}

// pathElemNode is one element of a path: a name, a #placeholder, or a list
// index.
type pathElemNode struct {
	name  string // identifier or "#placeholder"; "" for an index
	index int    // list index when name == ""
}

func (e pathElemNode) isIndex() bool       { return e.name == "" }
func (e pathElemNode) isPlaceholder() bool { return strings.HasPrefix(e.name, "#") }

// valueNode is an expression attribute value placeholder, :v.
type valueNode struct {
	name string
}

// callNode is a function call: size(a), if_not_exists(a, :v), ...
type callNode struct {
	name string
	args []node
}

// parenNode is a parenthesised condition or operand. It is kept because
// DynamoDB rejects redundant parentheses, and printing it keeps the tree
// stable under print → parse.
type parenNode struct {
	x node
}

// arithNode is SET's a + b or a - b.
type arithNode struct {
	op   byte // '+' or '-'
	l, r node
}

// compareNode is a comparison: = <> < <= > >=.
type compareNode struct {
	op   string
	l, r node
}

// betweenNode is x BETWEEN lo AND hi.
type betweenNode struct {
	x, lo, hi node
}

// inNode is x IN (a, b, ...).
type inNode struct {
	x    node
	list []node
}

// logicNode is a AND b or a OR b (left-associative).
type logicNode struct {
	op   string // "AND" or "OR"
	l, r node
}

// notNode is NOT x.
type notNode struct {
	x node
}

// updateNode is a whole update expression.
type updateNode struct {
	clauses []clauseNode
}

// clauseNode is one SET/REMOVE/ADD/DELETE section.
type clauseNode struct {
	kind    string // "SET", "REMOVE", "ADD", "DELETE"
	actions []actionNode
}

// actionNode is one action of a clause: SET path = value, REMOVE path,
// ADD path :v, DELETE path :v.
type actionNode struct {
	path  *pathNode
	value node // nil for REMOVE
}

// projectionNode is a projection expression.
type projectionNode struct {
	paths []*pathNode
}

// nodeString returns the source form of n.
func nodeString(n node) string {
	var b strings.Builder
	n.format(&b)
	return b.String()
}

// dumpString returns the S-expression form of n.
func dumpString(n node) string {
	var b strings.Builder
	n.dump(&b)
	return b.String()
}

func (n *pathNode) format(b *strings.Builder) {
	for i, e := range n.elems {
		switch {
		case e.isIndex():
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.name)
		}
	}
}

func (n *pathNode) dump(b *strings.Builder) { n.format(b) }

func (n *valueNode) format(b *strings.Builder) { b.WriteString(n.name) }
func (n *valueNode) dump(b *strings.Builder)   { b.WriteString(n.name) }

func (n *callNode) format(b *strings.Builder) {
	b.WriteString(n.name)
	b.WriteByte('(')
	for i, a := range n.args {
		if i > 0 {
			b.WriteString(", ")
		}
		a.format(b)
	}
	b.WriteByte(')')
}

func (n *callNode) dump(b *strings.Builder) {
	b.WriteByte('(')
	b.WriteString(n.name)
	for _, a := range n.args {
		b.WriteByte(' ')
		a.dump(b)
	}
	b.WriteByte(')')
}

func (n *parenNode) format(b *strings.Builder) {
	b.WriteByte('(')
	n.x.format(b)
	b.WriteByte(')')
}

func (n *parenNode) dump(b *strings.Builder) {
	b.WriteString("(paren ")
	n.x.dump(b)
	b.WriteByte(')')
}

func (n *arithNode) format(b *strings.Builder) {
	n.l.format(b)
	b.WriteByte(' ')
	b.WriteByte(n.op)
	b.WriteByte(' ')
	n.r.format(b)
}

func (n *arithNode) dump(b *strings.Builder) {
	b.WriteByte('(')
	b.WriteByte(n.op)
	b.WriteByte(' ')
	n.l.dump(b)
	b.WriteByte(' ')
	n.r.dump(b)
	b.WriteByte(')')
}

func (n *compareNode) format(b *strings.Builder) {
	n.l.format(b)
	b.WriteByte(' ')
	b.WriteString(n.op)
	b.WriteByte(' ')
	n.r.format(b)
}

func (n *compareNode) dump(b *strings.Builder) {
	b.WriteByte('(')
	b.WriteString(n.op)
	b.WriteByte(' ')
	n.l.dump(b)
	b.WriteByte(' ')
	n.r.dump(b)
	b.WriteByte(')')
}

func (n *betweenNode) format(b *strings.Builder) {
	n.x.format(b)
	b.WriteString(" BETWEEN ")
	n.lo.format(b)
	b.WriteString(" AND ")
	n.hi.format(b)
}

func (n *betweenNode) dump(b *strings.Builder) {
	b.WriteString("(BETWEEN ")
	n.x.dump(b)
	b.WriteByte(' ')
	n.lo.dump(b)
	b.WriteByte(' ')
	n.hi.dump(b)
	b.WriteByte(')')
}

func (n *inNode) format(b *strings.Builder) {
	n.x.format(b)
	b.WriteString(" IN (")
	for i, e := range n.list {
		if i > 0 {
			b.WriteString(", ")
		}
		e.format(b)
	}
	b.WriteByte(')')
}

func (n *inNode) dump(b *strings.Builder) {
	b.WriteString("(IN ")
	n.x.dump(b)
	for _, e := range n.list {
		b.WriteByte(' ')
		e.dump(b)
	}
	b.WriteByte(')')
}

func (n *logicNode) format(b *strings.Builder) {
	n.l.format(b)
	b.WriteByte(' ')
	b.WriteString(n.op)
	b.WriteByte(' ')
	n.r.format(b)
}

func (n *logicNode) dump(b *strings.Builder) {
	b.WriteByte('(')
	b.WriteString(n.op)
	b.WriteByte(' ')
	n.l.dump(b)
	b.WriteByte(' ')
	n.r.dump(b)
	b.WriteByte(')')
}

func (n *notNode) format(b *strings.Builder) {
	b.WriteString("NOT ")
	n.x.format(b)
}

func (n *notNode) dump(b *strings.Builder) {
	b.WriteString("(NOT ")
	n.x.dump(b)
	b.WriteByte(')')
}

func (n *updateNode) format(b *strings.Builder) {
	for i, c := range n.clauses {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.kind)
		for j, a := range c.actions {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteByte(' ')
			a.path.format(b)
			switch {
			case a.value == nil:
			case c.kind == "SET":
				b.WriteString(" = ")
				a.value.format(b)
			default:
				b.WriteByte(' ')
				a.value.format(b)
			}
		}
	}
}

func (n *updateNode) dump(b *strings.Builder) {
	for i, c := range n.clauses {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteByte('(')
		b.WriteString(c.kind)
		for _, a := range c.actions {
			b.WriteString(" (")
			a.path.dump(b)
			if a.value != nil {
				b.WriteByte(' ')
				a.value.dump(b)
			}
			b.WriteByte(')')
		}
		b.WriteByte(')')
	}
}

func (n *projectionNode) format(b *strings.Builder) {
	for i, p := range n.paths {
		if i > 0 {
			b.WriteString(", ")
		}
		p.format(b)
	}
}

func (n *projectionNode) dump(b *strings.Builder) {
	b.WriteString("(project")
	for _, p := range n.paths {
		b.WriteByte(' ')
		p.dump(b)
	}
	b.WriteByte(')')
}
