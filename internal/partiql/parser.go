package partiql

import (
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// maxDepth bounds the nesting of expressions, so that a hostile statement
// cannot exhaust the stack; DynamoDB's own limit on document nesting is 32.
const maxDepth = 64

// keywords cannot be bare names (quote them: "value").
var keywords = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "NOT": true,
	"BETWEEN": true, "IN": true, "IS": true, "MISSING": true, "NULL": true, "TRUE": true,
	"FALSE": true, "INSERT": true, "INTO": true, "VALUE": true, "VALUES": true, "UPDATE": true,
	"SET": true, "REMOVE": true, "DELETE": true, "ORDER": true, "BY": true, "ASC": true,
	"DESC": true, "RETURNING": true, "EXISTS": true,
}

// Parse parses one PartiQL statement. Errors are ValidationExceptions
// worded as DynamoDB words them ("Statement wasn't well formed, can't be
// processed: ...").
func Parse(src string) (Statement, error) {
	p := &parser{lex: lexer{src: src}}
	p.advance()
	st, err := p.statement()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.unexpected()
	}
	return st, nil
}

type parser struct {
	lex     lexer
	tok     token
	nparams int
	depth   int
}

func malformed(detail string) error {
	return apierr.New(apierr.Validation, "Statement wasn't well formed, can't be processed: %s", detail)
}

func (p *parser) advance() { p.tok = p.lex.next() }

// unexpected is the error for the current token.
func (p *parser) unexpected() error {
	switch {
	case p.tok.kind == tEOF:
		return malformed("Unexpected end of statement")
	case p.tok.kind == tIdent && keywords[strings.ToUpper(p.tok.text)]:
		return malformed("Unexpected keyword")
	case p.tok.kind == tIllegal:
		return malformed("Invalid character")
	}
	return malformed("Unexpected token")
}

// isKw reports whether the current token is keyword kw (upper case).
func (p *parser) isKw(kw string) bool {
	return p.tok.kind == tIdent && strings.EqualFold(p.tok.text, kw)
}

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) error {
	if !p.acceptKw(kw) {
		return p.unexpected()
	}
	return nil
}

func (p *parser) isPunct(s string) bool { return p.tok.kind == tPunct && p.tok.text == s }

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(s) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) expectPunct(s string) error {
	if !p.acceptPunct(s) {
		return p.unexpected()
	}
	return nil
}

func (p *parser) statement() (Statement, error) {
	switch {
	case p.acceptKw("SELECT"):
		return p.selectRest()
	case p.acceptKw("INSERT"):
		return p.insert()
	case p.acceptKw("UPDATE"):
		return p.update()
	case p.acceptKw("DELETE"):
		return p.delete()
	case p.acceptKw("EXISTS"):
		if err := p.expectPunct("("); err != nil {
			return nil, err
		}
		if err := p.expectKw("SELECT"); err != nil {
			return nil, err
		}
		s, err := p.selectRest()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return &Exists{Select: s}, nil
	}
	return nil, malformed("Expected data manipulation")
}

// name reads a bare or quoted identifier.
func (p *parser) name() (string, error) {
	switch p.tok.kind {
	case tQuoted:
		n := p.tok.text
		p.advance()
		return n, nil
	case tIdent:
		if keywords[strings.ToUpper(p.tok.text)] {
			return "", p.unexpected()
		}
		n := p.tok.text
		p.advance()
		return n, nil
	}
	return "", p.unexpected()
}

// tableRef reads table or "table"."index".
func (p *parser) tableRef() (table, index string, err error) {
	if table, err = p.name(); err != nil {
		return "", "", err
	}
	if p.acceptPunct(".") {
		if index, err = p.name(); err != nil {
			return "", "", err
		}
	}
	return table, index, nil
}

func (p *parser) selectRest() (*Select, error) {
	s := &Select{}
	if !p.acceptPunct("*") {
		for {
			path, err := p.path()
			if err != nil {
				return nil, err
			}
			s.Proj = append(s.Proj, *path)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if err := p.expectKw("FROM"); err != nil {
		return nil, err
	}
	var err error
	if s.Table, s.Index, err = p.tableRef(); err != nil {
		return nil, err
	}
	if p.acceptKw("WHERE") {
		if s.Where, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("ORDER") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		for {
			key, err := p.path()
			if err != nil {
				return nil, err
			}
			o := Order{Key: *key}
			if p.acceptKw("DESC") {
				o.Desc = true
			} else {
				p.acceptKw("ASC")
			}
			s.OrderBy = append(s.OrderBy, o)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	return s, nil
}

func (p *parser) insert() (Statement, error) {
	if err := p.expectKw("INTO"); err != nil {
		return nil, err
	}
	table, err := p.name()
	if err != nil {
		return nil, err
	}
	if err := p.expectKw("VALUE"); err != nil {
		return nil, err
	}
	v, err := p.primary()
	if err != nil {
		return nil, err
	}
	switch v.(type) {
	case *Tuple, *Param:
	default:
		return nil, malformed("Unexpected term")
	}
	return &Insert{Table: table, Value: v}, nil
}

func (p *parser) update() (Statement, error) {
	table, err := p.name()
	if err != nil {
		return nil, err
	}
	u := &Update{Table: table}
	for {
		switch {
		case p.acceptKw("SET"):
			for {
				path, err := p.path()
				if err != nil {
					return nil, err
				}
				if err := p.expectPunct("="); err != nil {
					return nil, err
				}
				v, err := p.additive()
				if err != nil {
					return nil, err
				}
				u.Actions = append(u.Actions, Action{Path: *path, Value: v})
				if !p.acceptPunct(",") {
					break
				}
			}
			continue
		case p.acceptKw("REMOVE"):
			for {
				path, err := p.path()
				if err != nil {
					return nil, err
				}
				u.Actions = append(u.Actions, Action{Path: *path})
				if !p.acceptPunct(",") {
					break
				}
			}
			continue
		}
		break
	}
	if len(u.Actions) == 0 {
		return nil, p.unexpected()
	}
	if err := p.expectKw("WHERE"); err != nil {
		return nil, err
	}
	if u.Where, err = p.expr(); err != nil {
		return nil, err
	}
	if u.Returning, err = p.returning(true); err != nil {
		return nil, err
	}
	return u, nil
}

func (p *parser) delete() (Statement, error) {
	if err := p.expectKw("FROM"); err != nil {
		return nil, err
	}
	table, err := p.name()
	if err != nil {
		return nil, err
	}
	d := &Delete{Table: table}
	if err := p.expectKw("WHERE"); err != nil {
		return nil, err
	}
	if d.Where, err = p.expr(); err != nil {
		return nil, err
	}
	if d.Returning, err = p.returning(false); err != nil {
		return nil, err
	}
	return d, nil
}

// returning reads RETURNING (ALL|MODIFIED) (OLD|NEW) *; a DELETE allows
// only ALL OLD.
func (p *parser) returning(update bool) (string, error) {
	if !p.acceptKw("RETURNING") {
		return "", nil
	}
	var which, when string
	switch {
	case p.acceptKw("ALL"):
		which = "ALL"
	case update && p.acceptKw("MODIFIED"):
		which = "MODIFIED"
	default:
		return "", p.unexpected()
	}
	switch {
	case p.acceptKw("OLD"):
		when = "OLD"
	case update && p.acceptKw("NEW"):
		when = "NEW"
	default:
		return "", p.unexpected()
	}
	if err := p.expectPunct("*"); err != nil {
		return "", err
	}
	return which + "_" + when, nil
}

// path reads name(.name|[n])*.
func (p *parser) path() (*Path, error) {
	n, err := p.name()
	if err != nil {
		return nil, err
	}
	return p.pathRest(n)
}

func (p *parser) pathRest(first string) (*Path, error) {
	path := &Path{Steps: []Step{{Name: first}}}
	for {
		switch {
		case p.acceptPunct("."):
			n, err := p.name()
			if err != nil {
				return nil, err
			}
			path.Steps = append(path.Steps, Step{Name: n})
		case p.isPunct("["):
			p.advance()
			if p.tok.kind != tNumber {
				return nil, p.unexpected()
			}
			i, err := strconv.Atoi(p.tok.text)
			if err != nil || i < 0 {
				return nil, malformed("Invalid path index")
			}
			p.advance()
			if err := p.expectPunct("]"); err != nil {
				return nil, err
			}
			path.Steps = append(path.Steps, Step{Index: i})
		default:
			return path, nil
		}
	}
}

// The expression grammar, loosest first: OR, AND, NOT, predicates
// (comparison, BETWEEN, IN, IS), + and -, primaries.

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return malformed("Statement is nested too deeply")
	}
	return nil
}

func (p *parser) expr() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.acceptKw("OR") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: "OR", L: l, R: r}
	}
	return l, nil
}

func (p *parser) and() (Expr, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.acceptKw("AND") {
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: "AND", L: l, R: r}
	}
	return l, nil
}

func (p *parser) not() (Expr, error) {
	if p.acceptKw("NOT") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &Not{X: x}, nil
	}
	return p.predicate()
}

func (p *parser) predicate() (Expr, error) {
	l, err := p.additive()
	if err != nil {
		return nil, err
	}
	if p.tok.kind == tPunct {
		switch op := p.tok.text; op {
		case "=", "<>", "!=", "<", "<=", ">", ">=":
			p.advance()
			r, err := p.additive()
			if err != nil {
				return nil, err
			}
			if op == "!=" {
				op = "<>"
			}
			return &Binary{Op: op, L: l, R: r}, nil
		}
	}
	not := false
	if p.isKw("NOT") {
		p.advance()
		not = true
		if !p.isKw("BETWEEN") && !p.isKw("IN") {
			return nil, p.unexpected()
		}
	}
	var x Expr
	switch {
	case p.acceptKw("BETWEEN"):
		lo, err := p.additive()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AND"); err != nil {
			return nil, err
		}
		hi, err := p.additive()
		if err != nil {
			return nil, err
		}
		x = &Between{X: l, Lo: lo, Hi: hi}
	case p.acceptKw("IN"):
		var closing string
		switch {
		case p.acceptPunct("["):
			closing = "]"
		case p.acceptPunct("("):
			closing = ")"
		default:
			if p.tok.kind == tParam {
				return nil, malformed("IN requires a list of values")
			}
			return nil, p.unexpected()
		}
		list, err := p.exprList(closing)
		if err != nil {
			return nil, err
		}
		x = &In{X: l, List: list}
	case p.acceptKw("IS"):
		is := &Is{X: l}
		is.Not = p.acceptKw("NOT")
		switch {
		case p.acceptKw("MISSING"):
			is.What = "MISSING"
		case p.acceptKw("NULL"):
			is.What = "NULL"
		default:
			return nil, p.unexpected()
		}
		return is, nil
	default:
		return l, nil
	}
	if not {
		return &Not{X: x}, nil
	}
	return x, nil
}

func (p *parser) additive() (Expr, error) {
	l, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.isPunct("+") || p.isPunct("-") {
		op := p.tok.text
		p.advance()
		r, err := p.primary()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: op, L: l, R: r}
	}
	return l, nil
}

// exprList reads values separated by commas up to closing (consumed).
func (p *parser) exprList(closing string) ([]Expr, error) {
	var out []Expr
	if p.acceptPunct(closing) {
		return out, nil
	}
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if p.acceptPunct(closing) {
			return out, nil
		}
		if err := p.expectPunct(","); err != nil {
			return nil, err
		}
	}
}

func (p *parser) primary() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	t := p.tok
	switch t.kind {
	case tString:
		p.advance()
		return &Lit{V: attr.Str(t.text)}, nil
	case tNumber:
		p.advance()
		return number(t.text)
	case tParam:
		p.advance()
		n := p.nparams
		p.nparams++
		return &Param{N: n}, nil
	case tQuoted:
		p.advance()
		return p.pathRest(t.text)
	case tIdent:
		switch strings.ToUpper(t.text) {
		case "TRUE", "FALSE":
			p.advance()
			return &Lit{V: attr.BoolV(strings.EqualFold(t.text, "TRUE"))}, nil
		case "NULL":
			p.advance()
			return &Lit{V: attr.Null()}, nil
		}
		if keywords[strings.ToUpper(t.text)] {
			return nil, p.unexpected()
		}
		p.advance()
		if p.acceptPunct("(") {
			args, err := p.exprList(")")
			if err != nil {
				return nil, err
			}
			return &Call{Name: strings.ToLower(t.text), Args: args}, nil
		}
		return p.pathRest(t.text)
	case tPunct:
		switch t.text {
		case "-":
			p.advance()
			if p.tok.kind != tNumber {
				return nil, p.unexpected()
			}
			n := p.tok.text
			p.advance()
			return number("-" + n)
		case "(":
			p.advance()
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
			return e, nil
		case "[":
			p.advance()
			elems, err := p.exprList("]")
			if err != nil {
				return nil, err
			}
			return &List{Elems: elems}, nil
		case "<<":
			p.advance()
			elems, err := p.exprList(">>")
			if err != nil {
				return nil, err
			}
			return &Bag{Elems: elems}, nil
		case "{":
			p.advance()
			return p.tuple()
		}
	}
	return nil, p.unexpected()
}

func (p *parser) tuple() (Expr, error) {
	t := &Tuple{}
	if p.acceptPunct("}") {
		return t, nil
	}
	for {
		if p.tok.kind != tString {
			return nil, p.unexpected()
		}
		name := p.tok.text
		p.advance()
		if err := p.expectPunct(":"); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		t.Fields = append(t.Fields, Field{Name: name, Value: v})
		if p.acceptPunct("}") {
			return t, nil
		}
		if err := p.expectPunct(","); err != nil {
			return nil, err
		}
	}
}

func number(s string) (Expr, error) {
	n, err := attr.ParseNumber(s)
	if err != nil {
		return nil, apierr.New(apierr.Validation, "Statement wasn't well formed, can't be processed: Invalid number %s", apierr.Clip(s))
	}
	return &Lit{V: attr.Num(n)}, nil
}

// Writes reports whether stmt, by its first keyword, is an INSERT, UPDATE,
// DELETE or EXISTS: a statement charged as a write. It reads one token,
// without parsing (callers on the hot path only need the class; a
// statement that does not parse is refused later anyway).
func Writes(stmt string) bool {
	l := lexer{src: stmt}
	t := l.next()
	if t.kind != tIdent {
		return false
	}
	for _, kw := range [...]string{"INSERT", "UPDATE", "DELETE", "EXISTS"} {
		if strings.EqualFold(t.text, kw) {
			return true
		}
	}
	return false
}
