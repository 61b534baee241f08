package partiql

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Keys names the key attributes of a table or of one of its indexes.
type Keys struct {
	Hash  string
	Range string // "" when there is no sort key
}

// Schema returns the key attributes of table, or of its index when index
// is not "". Its errors (ResourceNotFoundException, ...) are returned as
// they are.
type Schema func(table, index string) (Keys, error)

// Plan is a statement translated onto exactly one operation of the item
// API: one of its operation fields is set. The inputs carry expressions
// in DynamoDB's expression language, with every name and value in
// ExpressionAttributeNames and ExpressionAttributeValues.
type Plan struct {
	Get     *wire.GetItemInput
	Query   *wire.QueryInput
	Queries []*wire.QueryInput // pk IN [...]: one Query per partition, read in turn
	Scan    *wire.ScanInput
	Put     *wire.PutItemInput    // INSERT: conditional on the key being new
	Update  *wire.UpdateItemInput // UPDATE: conditional on the item existing
	Delete  *wire.DeleteItemInput
	Check   *wire.ConditionCheck // EXISTS(SELECT ...), in transactions only
}

// Table returns the table the plan touches.
func (p *Plan) Table() string {
	switch {
	case p.Get != nil:
		return p.Get.TableName
	case p.Query != nil:
		return p.Query.TableName
	case len(p.Queries) > 0:
		return p.Queries[0].TableName
	case p.Scan != nil:
		return p.Scan.TableName
	case p.Put != nil:
		return p.Put.TableName
	case p.Update != nil:
		return p.Update.TableName
	case p.Delete != nil:
		return p.Delete.TableName
	case p.Check != nil:
		return p.Check.TableName
	}
	return ""
}

// IsRead reports whether the plan only reads (a SELECT or an EXISTS).
func (p *Plan) IsRead() bool {
	return p.Get != nil || p.Query != nil || p.Queries != nil || p.Scan != nil
}

// TableOf returns the table a statement names.
func TableOf(st Statement) string {
	switch s := st.(type) {
	case *Select:
		return s.Table
	case *Insert:
		return s.Table
	case *Update:
		return s.Table
	case *Delete:
		return s.Table
	case *Exists:
		return s.Select.Table
	}
	return ""
}

// IsWrite reports whether a statement writes (INSERT, UPDATE, DELETE).
func IsWrite(st Statement) bool {
	switch st.(type) {
	case *Insert, *Update, *Delete:
		return true
	}
	return false
}

func invalid(format string, args ...any) error { return apierr.New(apierr.Validation, format, args...) }

// errParamCount is DynamoDB's answer when ? and Parameters disagree.
var errParamCount = invalid("Number of parameters in request and statement don't match.")

// Translate turns st, with the values of its ? parameters, into a Plan.
// schema gives the key attributes of the tables st names. Errors are
// ValidationExceptions, and schema's own.
func Translate(st Statement, params []attr.Value, schema Schema) (*Plan, error) {
	b := &builder{params: params}
	var plan *Plan
	var err error
	switch s := st.(type) {
	case *Select:
		plan, err = b.selectPlan(s, schema)
	case *Insert:
		plan, err = b.insertPlan(s, schema)
	case *Update:
		plan, err = b.updatePlan(s, schema)
	case *Delete:
		plan, err = b.deletePlan(s, schema)
	case *Exists:
		plan, err = b.existsPlan(s, schema)
	}
	if err != nil {
		return nil, err
	}
	if b.used != len(params) {
		return nil, errParamCount
	}
	return plan, nil
}

// builder accumulates the placeholders of one translation.
type builder struct {
	params []attr.Value
	used   int // parameters consumed
	names  map[string]string
	byName map[string]string
	values map[string]attr.Value
}

func (b *builder) name(n string) string {
	if ph, ok := b.byName[n]; ok {
		return ph
	}
	if b.names == nil {
		b.names, b.byName = map[string]string{}, map[string]string{}
	}
	ph := "#n" + strconv.Itoa(len(b.names))
	b.names[ph], b.byName[n] = n, ph
	return ph
}

func (b *builder) value(v attr.Value) string {
	if b.values == nil {
		b.values = map[string]attr.Value{}
	}
	ph := ":v" + strconv.Itoa(len(b.values))
	b.values[ph] = v
	return ph
}

func (b *builder) path(p *Path) string {
	var s strings.Builder
	for i, st := range p.Steps {
		if st.Name == "" {
			s.WriteString("[" + strconv.Itoa(st.Index) + "]")
			continue
		}
		if i > 0 {
			s.WriteByte('.')
		}
		s.WriteString(b.name(st.Name))
	}
	return s.String()
}

// eval computes a value expression: a literal, a parameter, or a tuple,
// list or bag of them.
func (b *builder) eval(e Expr) (attr.Value, error) {
	switch x := e.(type) {
	case *Lit:
		return x.V, nil
	case *Param:
		if x.N >= len(b.params) {
			return attr.Value{}, errParamCount
		}
		b.used++
		return b.params[x.N], nil
	case *Tuple:
		m := make(map[string]attr.Value, len(x.Fields))
		for _, f := range x.Fields {
			v, err := b.eval(f.Value)
			if err != nil {
				return attr.Value{}, err
			}
			if _, dup := m[f.Name]; dup {
				return attr.Value{}, invalid("Duplicate attribute name %s in a tuple", apierr.Clip(f.Name))
			}
			m[f.Name] = v
		}
		return attr.Map(m), nil
	case *List:
		l := make([]attr.Value, len(x.Elems))
		for i, el := range x.Elems {
			v, err := b.eval(el)
			if err != nil {
				return attr.Value{}, err
			}
			l[i] = v
		}
		return attr.List(l), nil
	case *Bag:
		return b.bag(x)
	}
	return attr.Value{}, invalid("Unsupported term %s: expected a value", apierr.Clip(e.String()))
}

// bag makes a DynamoDB set of a bag of strings, numbers or binaries.
func (b *builder) bag(x *Bag) (attr.Value, error) {
	if len(x.Elems) == 0 {
		return attr.Value{}, invalid("An empty set is not allowed")
	}
	var set attr.Value
	for _, el := range x.Elems {
		v, err := b.eval(el)
		if err != nil {
			return attr.Value{}, err
		}
		switch {
		case v.Type == attr.S && (set.Type == attr.Invalid || set.Type == attr.SS):
			set.Type, set.SS = attr.SS, append(set.SS, v.S)
		case v.Type == attr.N && (set.Type == attr.Invalid || set.Type == attr.NS):
			set.Type, set.NS = attr.NS, append(set.NS, v.N)
		case v.Type == attr.B && (set.Type == attr.Invalid || set.Type == attr.BS):
			set.Type, set.BS = attr.BS, append(set.BS, v.B)
		default:
			return attr.Value{}, invalid("A set must hold strings, numbers or binaries, all of one type")
		}
	}
	if err := attr.ValidateSet(set); err != nil {
		return attr.Value{}, err
	}
	return set, nil
}

func isValue(e Expr) bool {
	switch e.(type) {
	case *Lit, *Param, *Tuple, *List, *Bag:
		return true
	}
	return false
}

// operand renders a comparison operand: a path, size(path) or a value.
func (b *builder) operand(e Expr) (string, error) {
	switch x := e.(type) {
	case *Path:
		return b.path(x), nil
	case *Call:
		if x.Name == "size" && len(x.Args) == 1 {
			if p, ok := x.Args[0].(*Path); ok {
				return "size(" + b.path(p) + ")", nil
			}
		}
		return "", invalid("Unsupported function %s in this position", apierr.Clip(x.Name))
	}
	if isValue(e) {
		v, err := b.eval(e)
		if err != nil {
			return "", err
		}
		return b.value(v), nil
	}
	return "", invalid("Unsupported operand %s", apierr.Clip(e.String()))
}

// cond renders a condition.
func (b *builder) cond(e Expr) (string, error) {
	switch x := e.(type) {
	case *Binary:
		switch x.Op {
		case "AND", "OR":
			l, err := b.cond(x.L)
			if err != nil {
				return "", err
			}
			r, err := b.cond(x.R)
			if err != nil {
				return "", err
			}
			return "(" + l + " " + x.Op + " " + r + ")", nil
		case "=", "<>", "<", "<=", ">", ">=":
			l, err := b.operand(x.L)
			if err != nil {
				return "", err
			}
			r, err := b.operand(x.R)
			if err != nil {
				return "", err
			}
			return l + " " + x.Op + " " + r, nil
		}
	case *Not:
		c, err := b.cond(x.X)
		if err != nil {
			return "", err
		}
		return "(NOT " + c + ")", nil
	case *Between:
		ops, err := b.operands(x.X, x.Lo, x.Hi)
		if err != nil {
			return "", err
		}
		return ops[0] + " BETWEEN " + ops[1] + " AND " + ops[2], nil
	case *In:
		if len(x.List) == 0 {
			return "", invalid("IN requires at least one value")
		}
		ops, err := b.operands(append([]Expr{x.X}, x.List...)...)
		if err != nil {
			return "", err
		}
		return ops[0] + " IN (" + strings.Join(ops[1:], ", ") + ")", nil
	case *Is:
		p, ok := x.X.(*Path)
		if !ok {
			return "", invalid("IS %s requires a path", x.What)
		}
		path := b.path(p)
		switch {
		case x.What == "MISSING" && x.Not:
			return "attribute_exists(" + path + ")", nil
		case x.What == "MISSING":
			return "attribute_not_exists(" + path + ")", nil
		case x.Not:
			return "(NOT attribute_type(" + path + ", " + b.value(attr.Str("NULL")) + "))", nil
		default:
			return "attribute_type(" + path + ", " + b.value(attr.Str("NULL")) + ")", nil
		}
	case *Call:
		arity := map[string]int{"begins_with": 2, "contains": 2, "attribute_type": 2, "attribute_exists": 1, "attribute_not_exists": 1}
		n, ok := arity[x.Name]
		if !ok {
			return "", invalid("Unsupported function %s in a condition", apierr.Clip(x.Name))
		}
		if len(x.Args) != n {
			return "", invalid("Incorrect number of arguments for function %s", x.Name)
		}
		if _, ok := x.Args[0].(*Path); !ok {
			return "", invalid("The first argument of %s must be a path", x.Name)
		}
		ops, err := b.operands(x.Args...)
		if err != nil {
			return "", err
		}
		return x.Name + "(" + strings.Join(ops, ", ") + ")", nil
	}
	return "", invalid("Unsupported condition %s", apierr.Clip(e.String()))
}

func (b *builder) operands(es ...Expr) ([]string, error) {
	out := make([]string, len(es))
	for i, e := range es {
		s, err := b.operand(e)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// conjuncts flattens the top-level ANDs of e.
func conjuncts(e Expr, out []Expr) []Expr {
	if x, ok := e.(*Binary); ok && x.Op == "AND" {
		return conjuncts(x.R, conjuncts(x.L, out))
	}
	return append(out, e)
}

// topName returns the attribute a one-step path names.
func topName(e Expr) (string, bool) {
	p, ok := e.(*Path)
	if !ok || len(p.Steps) != 1 || p.Steps[0].Name == "" {
		return "", false
	}
	return p.Steps[0].Name, true
}

// keyEq reports whether c is key = value (or value = key) and returns the
// value expression.
func keyEq(c Expr, key string) (Expr, bool) {
	x, ok := c.(*Binary)
	if !ok || x.Op != "=" || key == "" {
		return nil, false
	}
	if n, ok := topName(x.L); ok && n == key && isValue(x.R) {
		return x.R, true
	}
	if n, ok := topName(x.R); ok && n == key && isValue(x.L) {
		return x.L, true
	}
	return nil, false
}

// mentions reports whether e refers to any of the top-level attributes
// names.
func mentions(e Expr, names ...string) bool {
	found := false
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case *Path:
			for _, n := range names {
				if n != "" && x.Steps[0].Name == n {
					found = true
				}
			}
		case *Binary:
			walk(x.L)
			walk(x.R)
		case *Not:
			walk(x.X)
		case *Between:
			walk(x.X)
			walk(x.Lo)
			walk(x.Hi)
		case *In:
			walk(x.X)
			for _, el := range x.List {
				walk(el)
			}
		case *Is:
			walk(x.X)
		case *Call:
			for _, a := range x.Args {
				walk(a)
			}
		}
	}
	walk(e)
	return found
}

// keyWhere splits a WHERE clause into the item's full key (equalities on
// every key attribute) and the remaining conditions, joined by AND.
func (b *builder) keyWhere(where Expr, k Keys) (attr.Item, string, error) {
	key := attr.Item{}
	var rest []string
	for _, c := range conjuncts(where, nil) {
		if v, ok := keyEq(c, k.Hash); ok && !has(key, k.Hash) {
			val, err := b.eval(v)
			if err != nil {
				return nil, "", err
			}
			key[k.Hash] = val
			continue
		}
		if v, ok := keyEq(c, k.Range); ok && !has(key, k.Range) {
			val, err := b.eval(v)
			if err != nil {
				return nil, "", err
			}
			key[k.Range] = val
			continue
		}
		s, err := b.cond(c)
		if err != nil {
			return nil, "", err
		}
		rest = append(rest, s)
	}
	if !has(key, k.Hash) || (k.Range != "" && !has(key, k.Range)) {
		return nil, "", invalid("Where clause does not contain a mandatory equality on all key attributes")
	}
	return key, strings.Join(rest, " AND "), nil
}

func has(it attr.Item, k string) bool { _, ok := it[k]; return ok }

func (b *builder) selectPlan(s *Select, schema Schema) (*Plan, error) {
	k, err := schema(s.Table, s.Index)
	if err != nil {
		return nil, err
	}
	var proj *string
	if s.Proj != nil {
		parts := make([]string, len(s.Proj))
		for i := range s.Proj {
			parts[i] = b.path(&s.Proj[i])
		}
		p := strings.Join(parts, ", ")
		proj = &p
	}
	var index *string
	if s.Index != "" {
		index = &s.Index
	}
	var cs []Expr
	if s.Where != nil {
		cs = conjuncts(s.Where, nil)
	}
	// Find the partition key's equality and, if any, one sort key
	// condition; a Query needs the rest to leave the key alone.
	// pk IN [...] makes one Query per value.
	// pk = a OR pk = b is pk IN [a, b], as DynamoDB reads it (no scan).
	hashAt, inAt, rangeAt := -1, -1, -1
	for i, c := range cs {
		if in, ok := keyOr(c, k.Hash); ok {
			cs[i] = in
			c = in
		}
		if _, ok := keyEq(c, k.Hash); ok && hashAt < 0 {
			hashAt = i
		} else if inAt < 0 && isKeyIn(c, k.Hash) {
			inAt = i
		} else if rangeAt < 0 && isRangeCond(c, k.Range) {
			rangeAt = i
		}
	}
	if hashAt >= 0 {
		inAt = -1
	}
	pinned := max(hashAt, inAt)
	query := pinned >= 0
	for i, c := range cs {
		if i != pinned && i != rangeAt && mentions(c, k.Hash, k.Range) {
			query = false
		}
	}
	if !query {
		if len(s.OrderBy) > 0 {
			if s.Where == nil {
				return nil, invalid("Must have WHERE clause in the statement when using ORDER BY clause.")
			}
			return nil, invalid("ORDER BY is supported only with an equality condition on the partition key in the WHERE clause")
		}
		in := &wire.ScanInput{TableName: s.Table, IndexName: index, ProjectionExpression: proj}
		if s.Where != nil {
			f, err := b.cond(s.Where)
			if err != nil {
				return nil, err
			}
			in.FilterExpression = &f
		}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = b.names, b.values
		return &Plan{Scan: in}, nil
	}
	forward := true
	for _, o := range s.OrderBy {
		n, ok := topName(&o.Key)
		if !ok || (n != k.Hash && n != k.Range) {
			return nil, invalid("Variable reference %s in ORDER BY clause must be part of the primary key", apierr.Clip(o.Key.String()))
		}
		if n == k.Range && o.Desc {
			forward = false
		}
	}
	var hvals []attr.Value
	if hashAt >= 0 {
		hv, _ := keyEq(cs[hashAt], k.Hash)
		v, err := b.eval(hv)
		if err != nil {
			return nil, err
		}
		hvals = append(hvals, v)
	} else {
		if len(s.OrderBy) > 0 {
			return nil, invalid("ORDER BY is not supported with IN on the partition key")
		}
		list := cs[inAt].(*In).List
		if len(list) > maxInKeys {
			return nil, invalid("IN on the partition key takes at most %d values", maxInKeys)
		}
		for _, e := range list {
			v, err := b.eval(e)
			if err != nil {
				return nil, err
			}
			// A partition named twice is read once.
			if !slices.ContainsFunc(hvals, func(h attr.Value) bool { return attr.Equal(h, v) }) {
				hvals = append(hvals, v)
			}
		}
	}
	hval := hvals[0]
	// A table read naming the whole key and nothing else is a GetItem.
	if hashAt >= 0 && s.Index == "" && len(cs) == 1+btoi(rangeAt >= 0) {
		rv, isEq := keyEq(cs[max(rangeAt, 0)], k.Range)
		if k.Range == "" || (rangeAt >= 0 && isEq) {
			key := attr.Item{k.Hash: hval}
			if k.Range != "" {
				rval, err := b.eval(rv)
				if err != nil {
					return nil, err
				}
				key[k.Range] = rval
			}
			return &Plan{Get: &wire.GetItemInput{TableName: s.Table, Key: key, ProjectionExpression: proj, ExpressionAttributeNames: b.names}}, nil
		}
	}
	hph := b.value(hval)
	kc := b.name(k.Hash) + " = " + hph
	if rangeAt >= 0 {
		rc, err := b.cond(cs[rangeAt])
		if err != nil {
			return nil, err
		}
		kc += " AND " + rc
	}
	in := &wire.QueryInput{TableName: s.Table, IndexName: index, KeyConditionExpression: &kc, ProjectionExpression: proj}
	if !forward {
		in.ScanIndexForward = &forward
	}
	var rest []string
	for i, c := range cs {
		if i == pinned || i == rangeAt {
			continue
		}
		f, err := b.cond(c)
		if err != nil {
			return nil, err
		}
		rest = append(rest, f)
	}
	if len(rest) > 0 {
		f := strings.Join(rest, " AND ")
		in.FilterExpression = &f
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = b.names, b.values
	if inAt < 0 {
		return &Plan{Query: in}, nil
	}
	qs := make([]*wire.QueryInput, len(hvals))
	for i, v := range hvals {
		q := *in
		q.ExpressionAttributeValues = maps.Clone(b.values)
		q.ExpressionAttributeValues[hph] = v
		qs[i] = &q
	}
	return &Plan{Queries: qs}, nil
}

// keyOr returns c as key IN [values] if c is a disjunction of equalities
// of key with values (key = a OR key = b ...).
func keyOr(c Expr, key string) (*In, bool) {
	x, ok := c.(*Binary)
	if !ok || x.Op != "OR" {
		return nil, false
	}
	var list []Expr
	var walk func(e Expr) bool
	walk = func(e Expr) bool {
		if x, ok := e.(*Binary); ok && x.Op == "OR" {
			return walk(x.L) && walk(x.R)
		}
		v, ok := keyEq(e, key)
		if !ok {
			return false
		}
		list = append(list, v)
		return true
	}
	if !walk(x) {
		return nil, false
	}
	return &In{X: &Path{Steps: []Step{{Name: key}}}, List: list}, true
}

// maxInKeys bounds the partitions one SELECT reads with IN.
const maxInKeys = 100

// isKeyIn reports whether c is key IN [values].
func isKeyIn(c Expr, key string) bool {
	x, ok := c.(*In)
	if !ok || key == "" || len(x.List) == 0 {
		return false
	}
	if n, ok := topName(x.X); !ok || n != key {
		return false
	}
	for _, e := range x.List {
		if !isValue(e) {
			return false
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isRangeCond reports whether c is a condition a Query accepts on the
// sort key rk: a comparison with a value, BETWEEN two values, or
// begins_with.
func isRangeCond(c Expr, rk string) bool {
	if rk == "" {
		return false
	}
	switch x := c.(type) {
	case *Binary:
		switch x.Op {
		case "=", "<", "<=", ">", ">=":
			if n, ok := topName(x.L); ok && n == rk && isValue(x.R) {
				return true
			}
			if n, ok := topName(x.R); ok && n == rk && isValue(x.L) {
				return true
			}
		}
	case *Between:
		n, ok := topName(x.X)
		return ok && n == rk && isValue(x.Lo) && isValue(x.Hi)
	case *Call:
		if x.Name == "begins_with" && len(x.Args) == 2 {
			n, ok := topName(x.Args[0])
			return ok && n == rk && isValue(x.Args[1])
		}
	}
	return false
}

func (b *builder) insertPlan(s *Insert, schema Schema) (*Plan, error) {
	k, err := schema(s.Table, "")
	if err != nil {
		return nil, err
	}
	v, err := b.eval(s.Value)
	if err != nil {
		return nil, err
	}
	if v.Type != attr.M {
		return nil, invalid("Unsupported value for INSERT: expected a tuple")
	}
	cond := "attribute_not_exists(" + b.name(k.Hash) + ")"
	return &Plan{Put: &wire.PutItemInput{TableName: s.Table, Item: v.M, ConditionExpression: &cond, ExpressionAttributeNames: b.names}}, nil
}

func (b *builder) updatePlan(s *Update, schema Schema) (*Plan, error) {
	k, err := schema(s.Table, "")
	if err != nil {
		return nil, err
	}
	var set, remove, add, del []string
	for i := range s.Actions {
		a := &s.Actions[i]
		target := b.path(&a.Path)
		if a.Value == nil {
			remove = append(remove, target)
			continue
		}
		if c, ok := a.Value.(*Call); ok && (c.Name == "set_add" || c.Name == "set_delete") {
			if len(c.Args) != 2 {
				return nil, invalid("Incorrect number of arguments for function %s", c.Name)
			}
			if p, ok := c.Args[0].(*Path); !ok || p.String() != a.Path.String() {
				return nil, invalid("The first argument of %s must be the path being set", c.Name)
			}
			v, err := b.eval(c.Args[1])
			if err != nil {
				return nil, err
			}
			if c.Name == "set_add" {
				add = append(add, target+" "+b.value(v))
			} else {
				del = append(del, target+" "+b.value(v))
			}
			continue
		}
		v, err := b.setValue(a.Value)
		if err != nil {
			return nil, err
		}
		set = append(set, target+" = "+v)
	}
	var ue strings.Builder
	for _, cl := range []struct {
		kw    string
		parts []string
	}{{"SET", set}, {"REMOVE", remove}, {"ADD", add}, {"DELETE", del}} {
		if len(cl.parts) > 0 {
			if ue.Len() > 0 {
				ue.WriteByte(' ')
			}
			ue.WriteString(cl.kw + " " + strings.Join(cl.parts, ", "))
		}
	}
	key, rest, err := b.keyWhere(s.Where, k)
	if err != nil {
		return nil, err
	}
	// NB: an UPDATE changes an existing item; it never creates one.
	cond := "attribute_exists(" + b.name(k.Hash) + ")"
	if rest != "" {
		cond += " AND " + rest
	}
	u := ue.String()
	in := &wire.UpdateItemInput{TableName: s.Table, Key: key, UpdateExpression: &u, ConditionExpression: &cond,
		ReturnValues: s.Returning, ExpressionAttributeNames: b.names, ExpressionAttributeValues: b.values}
	return &Plan{Update: in}, nil
}

// setValue renders the right-hand side of a SET: a value, a path, + or -,
// list_append or if_not_exists.
func (b *builder) setValue(e Expr) (string, error) {
	switch x := e.(type) {
	case *Path:
		return b.path(x), nil
	case *Binary:
		if x.Op == "+" || x.Op == "-" {
			l, err := b.setValue(x.L)
			if err != nil {
				return "", err
			}
			r, err := b.setValue(x.R)
			if err != nil {
				return "", err
			}
			return l + " " + x.Op + " " + r, nil
		}
	case *Call:
		if (x.Name == "list_append" || x.Name == "if_not_exists") && len(x.Args) == 2 {
			l, err := b.setValue(x.Args[0])
			if err != nil {
				return "", err
			}
			r, err := b.setValue(x.Args[1])
			if err != nil {
				return "", err
			}
			return x.Name + "(" + l + ", " + r + ")", nil
		}
		return "", invalid("Unsupported function %s in SET", apierr.Clip(x.Name))
	}
	if isValue(e) {
		v, err := b.eval(e)
		if err != nil {
			return "", err
		}
		return b.value(v), nil
	}
	return "", invalid("Unsupported term %s in SET", apierr.Clip(e.String()))
}

func (b *builder) deletePlan(s *Delete, schema Schema) (*Plan, error) {
	k, err := schema(s.Table, "")
	if err != nil {
		return nil, err
	}
	key, rest, err := b.keyWhere(s.Where, k)
	if err != nil {
		return nil, err
	}
	in := &wire.DeleteItemInput{TableName: s.Table, Key: key, ReturnValues: s.Returning,
		ExpressionAttributeNames: b.names, ExpressionAttributeValues: b.values}
	if rest != "" {
		in.ConditionExpression = &rest
	}
	return &Plan{Delete: in}, nil
}

func (b *builder) existsPlan(s *Exists, schema Schema) (*Plan, error) {
	sel := s.Select
	if sel.Index != "" || sel.Proj != nil || len(sel.OrderBy) > 0 || sel.Where == nil {
		return nil, invalid("EXISTS requires SELECT * FROM a table with a WHERE clause naming the item's full key")
	}
	k, err := schema(sel.Table, "")
	if err != nil {
		return nil, err
	}
	key, rest, err := b.keyWhere(sel.Where, k)
	if err != nil {
		return nil, err
	}
	cond := "attribute_exists(" + b.name(k.Hash) + ")"
	if rest != "" {
		cond += " AND " + rest
	}
	return &Plan{Check: &wire.ConditionCheck{TableName: sel.Table, Key: key, ConditionExpression: cond,
		ExpressionAttributeNames: b.names, ExpressionAttributeValues: b.values}}, nil
}
