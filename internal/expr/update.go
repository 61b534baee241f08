package expr

import (
	"bytes"
	"sort"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// Run-time update errors. DynamoDB gives them without an expression label.
var (
	errInvalidPath = apierr.Validationf("The document path provided in the update expression is invalid for update")
	errMissingAttr = apierr.Validationf("The provided expression refers to an attribute that does not exist in the item")
	errOperandType = apierr.Validationf("An operand in the update expression has an incorrect data type")
)

type actionKind uint8

const (
	actSet actionKind = iota
	actRemove
	actAdd
	actDelete
)

// action is one compiled update action.
type action struct {
	kind  actionKind
	path  Path
	value valueExpr  // SET
	arg   attr.Value // ADD, DELETE
}

// valueExpr is the right-hand side of a SET.
type valueExpr interface {
	eval(item attr.Item) (attr.Value, error)
	format(b *strings.Builder)
}

type pathValue struct{ path Path }

func (v pathValue) eval(item attr.Item) (attr.Value, error) {
	if x, ok := v.path.Get(item); ok {
		return x, nil
	}
	return attr.Value{}, errMissingAttr
}

func (v pathValue) format(b *strings.Builder) { b.WriteString(v.path.String()) }

type constValue struct{ v attr.Value }

func (v constValue) eval(attr.Item) (attr.Value, error) { return v.v, nil }
func (v constValue) format(b *strings.Builder)          { formatValue(b, v.v) }

// arithValue is a + b or a - b, exact (attr.Number).
type arithValue struct {
	op   byte
	l, r valueExpr
}

func (v arithValue) eval(item attr.Item) (attr.Value, error) {
	a, err := v.l.eval(item)
	if err != nil {
		return attr.Value{}, err
	}
	b, err := v.r.eval(item)
	if err != nil {
		return attr.Value{}, err
	}
	if a.Type != attr.N || b.Type != attr.N {
		return attr.Value{}, errOperandType
	}
	var n attr.Number
	if v.op == '+' {
		n, err = a.N.Add(b.N)
	} else {
		n, err = a.N.Sub(b.N)
	}
	if err != nil {
		return attr.Value{}, err
	}
	return attr.Num(n), nil
}

func (v arithValue) format(b *strings.Builder) {
	v.l.format(b)
	b.WriteByte(' ')
	b.WriteByte(v.op)
	b.WriteByte(' ')
	v.r.format(b)
}

// ifNotExistsValue is if_not_exists(path, default).
type ifNotExistsValue struct {
	path Path
	def  valueExpr
}

func (v ifNotExistsValue) eval(item attr.Item) (attr.Value, error) {
	if x, ok := v.path.Get(item); ok {
		return x, nil
	}
	return v.def.eval(item)
}

func (v ifNotExistsValue) format(b *strings.Builder) {
	b.WriteString("if_not_exists(")
	b.WriteString(v.path.String())
	b.WriteString(", ")
	v.def.format(b)
	b.WriteByte(')')
}

// listAppendValue is list_append(a, b).
type listAppendValue struct{ l, r valueExpr }

func (v listAppendValue) eval(item attr.Item) (attr.Value, error) {
	a, err := v.l.eval(item)
	if err != nil {
		return attr.Value{}, err
	}
	b, err := v.r.eval(item)
	if err != nil {
		return attr.Value{}, err
	}
	if a.Type != attr.L || b.Type != attr.L {
		return attr.Value{}, errOperandType
	}
	l := make([]attr.Value, 0, len(a.L)+len(b.L))
	return attr.List(append(append(l, a.L...), b.L...)), nil
}

func (v listAppendValue) format(b *strings.Builder) {
	b.WriteString("list_append(")
	v.l.format(b)
	b.WriteString(", ")
	v.r.format(b)
	b.WriteByte(')')
}

// ---- compile ----

// update compiles an update syntax tree.
func (c *compiler) update(n *updateNode) *compiledUpdate {
	u := &compiledUpdate{}
	seen := map[string]bool{}
	allResolved := true
	for _, cl := range n.clauses {
		if seen[cl.kind] {
			c.errorf(catSection, "The \"%s\" section can only be used once in an update expression;", cl.kind)
		}
		seen[cl.kind] = true
		for _, a := range cl.actions {
			p, ok := c.path(a.path)
			allResolved = allResolved && ok
			act := action{path: p}
			switch cl.kind {
			case "SET":
				act.kind = actSet
				act.value = c.setValue(a.value)
			case "REMOVE":
				act.kind = actRemove
			case "ADD":
				act.kind = actAdd
				act.arg, _ = c.value(a.value.(*valueNode))
				switch t := act.arg.Type; {
				case t == attr.Invalid, t == attr.N, t.IsSet():
				default:
					c.errorf(catOperandType, "Incorrect operand type for operator or function; operator: ADD, operand type: %s", longTypeName(t))
				}
			case "DELETE":
				act.kind = actDelete
				act.arg, _ = c.value(a.value.(*valueNode))
				if t := act.arg.Type; t != attr.Invalid && !t.IsSet() {
					c.errorf(catOperandType, "Incorrect operand type for operator or function; operator: DELETE, operand type: %s", longTypeName(t))
				}
			}
			u.actions = append(u.actions, act)
		}
	}
	if allResolved {
		paths := u.Paths()
		overlap, conflict := pathsClash(paths)
		c.errorf(catOverlap, "%s", overlap)
		c.errorf(catConflict, "%s", conflict)
	}
	return u
}

// longTypeName is how DynamoDB names types in ADD/DELETE operand errors.
func longTypeName(t attr.Type) string {
	switch t {
	case attr.S:
		return "STRING"
	case attr.N:
		return "NUMBER"
	case attr.B:
		return "BINARY"
	case attr.BOOL:
		return "BOOLEAN"
	case attr.NULL:
		return "NULL"
	case attr.L:
		return "LIST"
	case attr.M:
		return "MAP"
	}
	return t.String()
}

// setValue compiles the right-hand side of a SET action.
func (c *compiler) setValue(n node) valueExpr {
	switch n := c.unparen(n).(type) {
	case *arithNode:
		l, r := c.setValue(n.l), c.setValue(n.r)
		for _, o := range []valueExpr{l, r} {
			if t := staticValueType(o); t != attr.Invalid && t != attr.N {
				c.errorf(catFunction, "Incorrect operand type for operator or function; operator or function: %c, operand type: %s", n.op, t)
			}
		}
		return arithValue{op: n.op, l: l, r: r}
	case *pathNode:
		p, _ := c.path(n)
		return pathValue{p}
	case *valueNode:
		v, _ := c.value(n)
		return constValue{v}
	case *callNode:
		args := make([]valueExpr, len(n.args))
		for i, a := range n.args {
			// DynamoDB accepts if_not_exists inside list_append, but not
			// list_append inside anything.
			if inner, ok := c.unparen(a).(*callNode); ok && inner.name == "list_append" {
				c.errorf(catMisusedFunc, "The function is not allowed to be used this way in an expression; function: list_append")
			}
			args[i] = c.setValue(a)
		}
		if _, ok := updateFuncs[n.name]; !ok {
			if _, ok := conditionFuncs[n.name]; ok {
				c.errorf(catUnknownFunc, "The function is not allowed in an update expression; function: %s", n.name)
			} else {
				c.errorf(catUnknownFunc, "Invalid function name; function: %s", n.name)
			}
			return constValue{}
		}
		if !c.operandCount(n.name, len(args)) {
			return constValue{}
		}
		if n.name == "if_not_exists" {
			p, ok := args[0].(pathValue)
			if !ok {
				c.errorf(catFunction, "Operator or function requires a document path; operator or function: if_not_exists")
				return constValue{}
			}
			return ifNotExistsValue{path: p.path, def: args[1]}
		}
		for _, o := range args {
			if t := staticValueType(o); t != attr.Invalid && t != attr.L {
				c.errorf(catFunction, "Incorrect operand type for operator or function; operator or function: list_append, operand type: %s", t)
			}
		}
		return listAppendValue{args[0], args[1]}
	}
	return constValue{}
}

// staticValueType is the type of a SET operand known before reading the
// item: a value's type, L for list_append, N for arithmetic.
func staticValueType(v valueExpr) attr.Type {
	switch v := v.(type) {
	case constValue:
		return v.v.Type
	case listAppendValue:
		return attr.L
	case arithValue:
		return attr.N
	}
	return attr.Invalid
}

// ---- apply ----

// compiledUpdate implements Update for update expressions and for
// AttributeUpdates.
type compiledUpdate struct {
	actions []action
	// legacy selects AttributeUpdates' error messages and ADD on lists.
	legacy bool
}

var _ Update = (*compiledUpdate)(nil)

// DeletesOnly reports whether every action removes an attribute or deletes
// from a set: such an update of a missing item creates nothing in DynamoDB.
func (u *compiledUpdate) DeletesOnly() bool {
	for _, a := range u.actions {
		if a.kind != actRemove && a.kind != actDelete {
			return false
		}
	}
	return len(u.actions) > 0
}

// Paths implements Update.
func (u *compiledUpdate) Paths() []Path {
	paths := make([]Path, len(u.actions))
	for i, a := range u.actions {
		paths[i] = a.path
	}
	return paths
}

// String returns the update in expression syntax with names and values
// substituted, for logs and tests.
func (u *compiledUpdate) String() string {
	var b strings.Builder
	names := [...]string{actSet: "SET", actRemove: "REMOVE", actAdd: "ADD", actDelete: "DELETE"}
	for i, a := range u.actions {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(names[a.kind])
		b.WriteByte(' ')
		b.WriteString(a.path.String())
		switch a.kind {
		case actSet:
			b.WriteString(" = ")
			a.value.format(&b)
		case actAdd, actDelete:
			if a.arg.Type != attr.Invalid {
				b.WriteByte(' ')
				formatValue(&b, a.arg)
			}
		}
	}
	return b.String()
}

// Apply implements Update. Every action reads the item as it was before
// the update, as in DynamoDB: SET values are computed first, list indexes
// in REMOVE refer to the original list (removals run last, highest index
// first), and a DELETE that empties a set removes the attribute.
func (u *compiledUpdate) Apply(item attr.Item) (attr.Item, []Path, error) {
	values := make([]attr.Value, len(u.actions))
	for i, a := range u.actions {
		if a.kind == actSet {
			v, err := a.value.eval(item)
			if err != nil {
				return nil, nil, err
			}
			values[i] = v
		}
	}
	out := make(attr.Item, len(item)+len(u.actions))
	for k, v := range item {
		out[k] = v
	}
	// SETs in path order, so that several appends to one list land in
	// index order whatever order the expression names them.
	order := make([]int, 0, len(u.actions))
	for i, a := range u.actions {
		if a.kind == actSet {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(x, y int) bool {
		return comparePaths(u.actions[order[x]].path, u.actions[order[y]].path) < 0
	})
	for _, i := range order {
		if err := setPath(out, u.actions[i].path, values[i]); err != nil {
			return nil, nil, err
		}
	}
	var removals []Path
	for _, a := range u.actions {
		var err error
		switch a.kind {
		case actAdd:
			err = u.add(out, item, a)
		case actDelete:
			var empty bool
			empty, err = u.delete(out, item, a)
			if empty {
				removals = append(removals, a.path)
			}
		case actRemove:
			removals = append(removals, a.path)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(removals, func(i, j int) bool { return comparePaths(removals[i], removals[j]) > 0 })
	for _, p := range removals {
		if err := removePath(out, item, p); err != nil {
			return nil, nil, err
		}
	}
	return out, u.Paths(), nil
}

// add applies ADD: number addition or set union; a missing attribute is
// created with the operand.
func (u *compiledUpdate) add(out, orig attr.Item, a action) error {
	cur, ok := a.path.Get(orig)
	if !ok {
		return setPath(out, a.path, a.arg)
	}
	v := a.arg
	var err error
	switch {
	case cur.Type == attr.N && v.Type == attr.N:
		var n attr.Number
		if n, err = cur.N.Add(v.N); err != nil {
			return err
		}
		v = attr.Num(n)
	case cur.Type.IsSet() && cur.Type == v.Type:
		v = setUnion(cur, v)
	case u.legacy && cur.Type == attr.L && v.Type == attr.L:
		l := make([]attr.Value, 0, len(cur.L)+len(v.L))
		v = attr.List(append(append(l, cur.L...), v.L...))
	default:
		return u.typeErr()
	}
	return setPath(out, a.path, v)
}

// delete applies DELETE: set difference. It reports whether the set became
// empty (the caller then removes the attribute); a missing attribute is
// left alone.
func (u *compiledUpdate) delete(out, orig attr.Item, a action) (bool, error) {
	cur, ok := a.path.Get(orig)
	if !ok {
		return false, checkParent(orig, a.path)
	}
	if cur.Type != a.arg.Type || !cur.Type.IsSet() {
		return false, u.typeErr()
	}
	v, empty := setDifference(cur, a.arg)
	if empty {
		return true, nil
	}
	return false, setPath(out, a.path, v)
}

func (u *compiledUpdate) typeErr() error {
	if u.legacy {
		return apierr.Validationf("Type mismatch for attribute to update")
	}
	return errOperandType
}

// setPath writes v at p in it, copying every container on the way (values
// are shared with the original item and must not be changed in place). The
// parent of p must exist; a list index past the end appends.
func setPath(it attr.Item, p Path, v attr.Value) error {
	if len(p) == 1 {
		it[p[0].Name] = v
		return nil
	}
	cur, ok := it[p[0].Name]
	if !ok {
		return errInvalidPath
	}
	nv, err := setIn(cur, p[1:], v)
	if err != nil {
		return err
	}
	it[p[0].Name] = nv
	return nil
}

func setIn(cur attr.Value, p Path, v attr.Value) (attr.Value, error) {
	e := p[0]
	if e.IsIndex() {
		if cur.Type != attr.L {
			return attr.Value{}, errInvalidPath
		}
		l := make([]attr.Value, len(cur.L), len(cur.L)+1)
		copy(l, cur.L)
		switch {
		case len(p) == 1 && e.Index < len(l):
			l[e.Index] = v
		case len(p) == 1:
			l = append(l, v)
		case e.Index >= len(l):
			return attr.Value{}, errInvalidPath
		default:
			x, err := setIn(l[e.Index], p[1:], v)
			if err != nil {
				return attr.Value{}, err
			}
			l[e.Index] = x
		}
		return attr.List(l), nil
	}
	if cur.Type != attr.M {
		return attr.Value{}, errInvalidPath
	}
	m := make(map[string]attr.Value, len(cur.M)+1)
	for k, x := range cur.M {
		m[k] = x
	}
	if len(p) == 1 {
		m[e.Name] = v
	} else {
		child, ok := m[e.Name]
		if !ok {
			return attr.Value{}, errInvalidPath
		}
		x, err := setIn(child, p[1:], v)
		if err != nil {
			return attr.Value{}, err
		}
		m[e.Name] = x
	}
	return attr.Map(m), nil
}

// checkParent returns errInvalidPath unless p's parent exists in orig as
// the container p's last element needs.
func checkParent(orig attr.Item, p Path) error {
	if len(p) == 1 {
		return nil
	}
	parent, ok := p[:len(p)-1].Get(orig)
	if !ok {
		return errInvalidPath
	}
	if last := p[len(p)-1]; last.IsIndex() && parent.Type != attr.L || !last.IsIndex() && parent.Type != attr.M {
		return errInvalidPath
	}
	return nil
}

// removePath removes p from it. Removing a missing attribute, map key or
// list element (judged on the original item, so that indexes refer to the
// original list) does nothing; a missing or mistyped parent is an error.
func removePath(it, orig attr.Item, p Path) error {
	if _, ok := p.Get(orig); !ok {
		return checkParent(orig, p)
	}
	if len(p) == 1 {
		delete(it, p[0].Name)
		return nil
	}
	cur, ok := it[p[0].Name]
	if !ok {
		return nil
	}
	nv, err := removeIn(cur, p[1:])
	if err != nil {
		return err
	}
	it[p[0].Name] = nv
	return nil
}

func removeIn(cur attr.Value, p Path) (attr.Value, error) {
	e := p[0]
	if e.IsIndex() {
		if cur.Type != attr.L {
			return attr.Value{}, errInvalidPath
		}
		if e.Index >= len(cur.L) {
			return cur, nil
		}
		if len(p) == 1 {
			l := make([]attr.Value, 0, len(cur.L)-1)
			l = append(append(l, cur.L[:e.Index]...), cur.L[e.Index+1:]...)
			return attr.List(l), nil
		}
		x, err := removeIn(cur.L[e.Index], p[1:])
		if err != nil {
			return attr.Value{}, err
		}
		l := make([]attr.Value, len(cur.L))
		copy(l, cur.L)
		l[e.Index] = x
		return attr.List(l), nil
	}
	if cur.Type != attr.M {
		return attr.Value{}, errInvalidPath
	}
	child, ok := cur.M[e.Name]
	if !ok {
		return cur, nil
	}
	m := make(map[string]attr.Value, len(cur.M))
	for k, x := range cur.M {
		m[k] = x
	}
	if len(p) == 1 {
		delete(m, e.Name)
	} else {
		x, err := removeIn(child, p[1:])
		if err != nil {
			return attr.Value{}, err
		}
		m[e.Name] = x
	}
	return attr.Map(m), nil
}

// setUnion returns a ∪ b for two sets of one type, a's members first.
func setUnion(a, b attr.Value) attr.Value {
	out := attr.Value{Type: a.Type}
	switch a.Type {
	case attr.SS:
		seen := make(map[string]bool, len(a.SS))
		out.SS = append(out.SS, a.SS...)
		for _, s := range a.SS {
			seen[s] = true
		}
		for _, s := range b.SS {
			if !seen[s] {
				seen[s] = true
				out.SS = append(out.SS, s)
			}
		}
	case attr.NS:
		seen := make(map[attr.Number]bool, len(a.NS))
		out.NS = append(out.NS, a.NS...)
		for _, n := range a.NS {
			seen[n] = true
		}
		for _, n := range b.NS {
			if !seen[n] {
				seen[n] = true
				out.NS = append(out.NS, n)
			}
		}
	case attr.BS:
		out.BS = append(out.BS, a.BS...)
		for _, x := range b.BS {
			dup := false
			for _, y := range out.BS {
				if bytes.Equal(x, y) {
					dup = true
					break
				}
			}
			if !dup {
				out.BS = append(out.BS, x)
			}
		}
	}
	return out
}

// setDifference returns a \ b and whether it is empty.
func setDifference(a, b attr.Value) (attr.Value, bool) {
	out := attr.Value{Type: a.Type}
	switch a.Type {
	case attr.SS:
		drop := make(map[string]bool, len(b.SS))
		for _, s := range b.SS {
			drop[s] = true
		}
		for _, s := range a.SS {
			if !drop[s] {
				out.SS = append(out.SS, s)
			}
		}
		return out, len(out.SS) == 0
	case attr.NS:
		drop := make(map[attr.Number]bool, len(b.NS))
		for _, n := range b.NS {
			drop[n] = true
		}
		for _, n := range a.NS {
			if !drop[n] {
				out.NS = append(out.NS, n)
			}
		}
		return out, len(out.NS) == 0
	case attr.BS:
		for _, x := range a.BS {
			dropped := false
			for _, y := range b.BS {
				if bytes.Equal(x, y) {
					dropped = true
					break
				}
			}
			if !dropped {
				out.BS = append(out.BS, x)
			}
		}
		return out, len(out.BS) == 0
	}
	return out, false
}
