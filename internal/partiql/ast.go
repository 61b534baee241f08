package partiql

import (
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Statement is a parsed PartiQL statement: *Select, *Insert, *Update,
// *Delete or *Exists.
type Statement interface {
	// String renders the statement in a canonical form (keywords upper
	// case, names quoted), the form the golden files show.
	String() string
	stmt()
}

// Select is SELECT proj FROM "table"."index" WHERE cond ORDER BY keys.
type Select struct {
	Proj    []Path // nil: *
	Table   string
	Index   string // "" for the table itself
	Where   Expr   // nil: no WHERE
	OrderBy []Order
}

// Order is one ORDER BY key.
type Order struct {
	Key  Path
	Desc bool
}

// Insert is INSERT INTO "table" VALUE item.
type Insert struct {
	Table string
	Value Expr // a *Tuple or a *Param
}

// Update is UPDATE "table" SET ... REMOVE ... WHERE cond RETURNING ...
type Update struct {
	Table     string
	Actions   []Action // in statement order
	Where     Expr
	Returning string // "" or ALL_OLD, MODIFIED_OLD, ALL_NEW, MODIFIED_NEW
}

// Action is one SET (Value non-nil) or REMOVE (Value nil) of an UPDATE.
type Action struct {
	Path  Path
	Value Expr
}

// Delete is DELETE FROM "table" WHERE cond RETURNING ALL OLD *.
type Delete struct {
	Table     string
	Where     Expr
	Returning string // "" or ALL_OLD
}

// Exists is EXISTS(SELECT ...), the condition check of a transaction.
type Exists struct {
	Select *Select
}

func (*Select) stmt() {}
func (*Insert) stmt() {}
func (*Update) stmt() {}
func (*Delete) stmt() {}
func (*Exists) stmt() {}

// Expr is an expression: *Path, *Lit, *Param, *Tuple, *List, *Bag,
// *Binary, *Not, *Between, *In, *Is or *Call.
type Expr interface {
	String() string
	expr()
}

// Path is a document path: a name followed by .name and [index] steps.
type Path struct {
	Steps []Step
}

// Step is one step of a path: a name, or a list index when Name is "".
type Step struct {
	Name  string
	Index int
}

// Lit is a literal scalar: a string, number, boolean or NULL.
type Lit struct{ V attr.Value }

// Param is the N-th (from 0) ? of the statement.
type Param struct{ N int }

// Tuple is {'name': value, ...}.
type Tuple struct{ Fields []Field }

// Field is one member of a Tuple.
type Field struct {
	Name  string
	Value Expr
}

// List is [v, ...].
type List struct{ Elems []Expr }

// Bag is <<v, ...>>, DynamoDB's sets.
type Bag struct{ Elems []Expr }

// Binary is L op R for op AND, OR, =, <>, <, <=, >, >=, + or -.
type Binary struct {
	Op   string
	L, R Expr
}

// Not is NOT X.
type Not struct{ X Expr }

// Between is X BETWEEN Lo AND Hi.
type Between struct{ X, Lo, Hi Expr }

// In is X IN [v, ...].
type In struct {
	X    Expr
	List []Expr
}

// Is is X IS [NOT] MISSING|NULL.
type Is struct {
	X    Expr
	Not  bool
	What string // MISSING or NULL
}

// Call is a function call: begins_with(a, 'x'), size(a), ...
type Call struct {
	Name string // lower case
	Args []Expr
}

func (*Path) expr()    {}
func (*Lit) expr()     {}
func (*Param) expr()   {}
func (*Tuple) expr()   {}
func (*List) expr()    {}
func (*Bag) expr()     {}
func (*Binary) expr()  {}
func (*Not) expr()     {}
func (*Between) expr() {}
func (*In) expr()      {}
func (*Is) expr()      {}
func (*Call) expr()    {}

// The canonical renderings.

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteStr(s string) string   { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

func (p *Path) String() string {
	var b strings.Builder
	for i, s := range p.Steps {
		switch {
		case s.Name == "":
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		case i > 0:
			b.WriteString("." + quoteIdent(s.Name))
		default:
			b.WriteString(quoteIdent(s.Name))
		}
	}
	return b.String()
}

func (l *Lit) String() string {
	switch l.V.Type {
	case attr.S:
		return quoteStr(l.V.S)
	case attr.N:
		return l.V.N.String()
	case attr.BOOL:
		if l.V.Bool {
			return "TRUE"
		}
		return "FALSE"
	}
	return "NULL"
}

func (p *Param) String() string { return "?" }

func (t *Tuple) String() string {
	parts := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		parts[i] = quoteStr(f.Name) + ": " + f.Value.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (l *List) String() string { return "[" + joinExprs(l.Elems) + "]" }
func (b *Bag) String() string  { return "<<" + joinExprs(b.Elems) + ">>" }
func (b *Binary) String() string {
	return "(" + b.L.String() + " " + b.Op + " " + b.R.String() + ")"
}
func (n *Not) String() string { return "(NOT " + n.X.String() + ")" }
func (b *Between) String() string {
	return "(" + b.X.String() + " BETWEEN " + b.Lo.String() + " AND " + b.Hi.String() + ")"
}
func (in *In) String() string { return "(" + in.X.String() + " IN [" + joinExprs(in.List) + "])" }
func (is *Is) String() string {
	not := ""
	if is.Not {
		not = "NOT "
	}
	return "(" + is.X.String() + " IS " + not + is.What + ")"
}
func (c *Call) String() string { return c.Name + "(" + joinExprs(c.Args) + ")" }

func joinExprs(es []Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

func tableRef(table, index string) string {
	if index == "" {
		return quoteIdent(table)
	}
	return quoteIdent(table) + "." + quoteIdent(index)
}

func (s *Select) String() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	if s.Proj == nil {
		b.WriteString("*")
	} else {
		for i := range s.Proj {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.Proj[i].String())
		}
	}
	b.WriteString(" FROM " + tableRef(s.Table, s.Index))
	if s.Where != nil {
		b.WriteString(" WHERE " + s.Where.String())
	}
	for i, o := range s.OrderBy {
		if i == 0 {
			b.WriteString(" ORDER BY ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(o.Key.String())
		if o.Desc {
			b.WriteString(" DESC")
		}
	}
	return b.String()
}

func (s *Insert) String() string {
	return "INSERT INTO " + quoteIdent(s.Table) + " VALUE " + s.Value.String()
}

func (s *Update) String() string {
	var b strings.Builder
	b.WriteString("UPDATE " + quoteIdent(s.Table))
	for _, a := range s.Actions {
		if a.Value == nil {
			b.WriteString(" REMOVE " + a.Path.String())
		} else {
			b.WriteString(" SET " + a.Path.String() + " = " + a.Value.String())
		}
	}
	if s.Where != nil {
		b.WriteString(" WHERE " + s.Where.String())
	}
	if s.Returning != "" {
		b.WriteString(" RETURNING " + strings.ReplaceAll(s.Returning, "_", " ") + " *")
	}
	return b.String()
}

func (s *Delete) String() string {
	r := "DELETE FROM " + quoteIdent(s.Table)
	if s.Where != nil {
		r += " WHERE " + s.Where.String()
	}
	if s.Returning != "" {
		r += " RETURNING " + strings.ReplaceAll(s.Returning, "_", " ") + " *"
	}
	return r
}

func (s *Exists) String() string { return "EXISTS(" + s.Select.String() + ")" }
