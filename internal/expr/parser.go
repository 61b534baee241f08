package expr

import (
	"math"
	"strconv"
	"strings"
)

// The parsers are hand-written recursive descent over a token slice, with
// one function per precedence level for conditions (OR < AND < NOT <
// comparison). They never consult Params: placeholders and reserved words
// are checked afterwards (compile.go), because DynamoDB reports a syntax
// error anywhere in the string before any semantic error.

// maxDepth bounds nesting so that hostile input cannot grow the stack
// without limit; real expressions (at most 4 KB) never come close.
const maxDepth = 1000

// syntaxError is a parse failure at one token; its message is DynamoDB's
// text without the "Invalid XExpression: " prefix.
type syntaxError struct {
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// bailout is panicked to unwind the parser after the first syntax error;
// parse recovers it and returns the recorded error.
type bailout struct{}

type parser struct {
	src      string
	toks     []token
	pos      int
	keywords []string // identifiers that are keywords in this language
	depth    int
	err      *syntaxError
}

var (
	conditionKeywords = []string{"AND", "OR", "NOT", "BETWEEN", "IN"}
	updateKeywords    = []string{"SET", "REMOVE", "ADD", "DELETE"}
)

// parse runs f over src's tokens and turns a bailout into the recorded
// syntax error.
func parse(src string, keywords []string, f func(p *parser) node) (n node, err error) {
	p := &parser{src: src, toks: lex(src), keywords: keywords}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			n, err = nil, p.err
		}
	}()
	n = f(p)
	if p.peek().kind != tokEOF {
		p.fail()
	}
	return n, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) peekAt(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// fail reports a syntax error at the current token, with DynamoDB's "near"
// text: the source from the token before the offending one through the
// token after it ("l[a]" fails at "a", near "[a]").
func (p *parser) fail() {
	t := p.toks[p.pos]
	start, end := t.start, t.end
	if p.pos > 0 {
		start = p.toks[p.pos-1].start
	}
	if t.kind != tokEOF && p.toks[p.pos+1].kind != tokEOF {
		end = p.toks[p.pos+1].end
	}
	near := strings.TrimRight(p.src[start:end], " \t\r\n")
	p.err = &syntaxError{msg: `Syntax error; token: "` + t.text + `", near: "` + near + `"`}
	panic(bailout{})
}

func (p *parser) expect(k tokKind) token {
	if p.peek().kind != k {
		p.fail()
	}
	return p.next()
}

// isKeyword reports whether t is one of this language's keywords.
func (p *parser) isKeyword(t token) bool {
	if t.kind != tokIdent {
		return false
	}
	for _, k := range p.keywords {
		if strings.EqualFold(t.text, k) {
			return true
		}
	}
	return false
}

func isWord(t token, word string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.text, word)
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.fail()
	}
}

func (p *parser) leave() { p.depth-- }

// parsePath parses name ('.' name | '[' index ']')*.
func (p *parser) parsePath() *pathNode {
	t := p.peek()
	if !(t.kind == tokIdent && !p.isKeyword(t) || t.kind == tokName) {
		p.fail()
	}
	p.next()
	n := &pathNode{elems: []pathElemNode{{name: t.text}}}
	for {
		switch p.peek().kind {
		case tokDot:
			p.next()
			t := p.peek()
			if !(t.kind == tokIdent && !p.isKeyword(t) || t.kind == tokName) {
				p.fail()
			}
			p.next()
			n.elems = append(n.elems, pathElemNode{name: t.text})
		case tokLBrack:
			p.next()
			if p.peek().kind != tokNumber {
				p.fail()
			}
			i, err := strconv.Atoi(p.peek().text)
			if err != nil || i > math.MaxInt32 {
				p.fail()
			}
			p.next()
			p.expect(tokRBrack)
			n.elems = append(n.elems, pathElemNode{index: i})
		default:
			return n
		}
	}
}

// parseOperand parses a path, a :value, a function call, or one of those
// in parentheses.
func (p *parser) parseOperand() node {
	if p.peek().kind == tokLParen {
		p.enter()
		p.next()
		x := p.parseOperand()
		p.expect(tokRParen)
		p.leave()
		return &parenNode{x: x}
	}
	return p.parseAtom()
}

// parseAtom parses a path, a :value or a function call.
func (p *parser) parseAtom() node {
	t := p.peek()
	switch t.kind {
	case tokValue:
		p.next()
		return &valueNode{name: t.text}
	case tokIdent:
		if p.isKeyword(t) {
			p.fail()
		}
		if p.peekAt(1).kind == tokLParen {
			return p.parseCall()
		}
		return p.parsePath()
	case tokName:
		return p.parsePath()
	}
	p.fail()
	return nil
}

// parseCall parses name '(' operand (',' operand)* ')'.
func (p *parser) parseCall() node {
	p.enter()
	defer p.leave()
	name := p.next().text
	p.expect(tokLParen)
	n := &callNode{name: name}
	for {
		n.args = append(n.args, p.parseOperand())
		if p.peek().kind != tokComma {
			break
		}
		p.next()
	}
	p.expect(tokRParen)
	return n
}

// ---- conditions ----

// parseCondition parses a ConditionExpression, FilterExpression or
// KeyConditionExpression.
func parseCondition(src string) (node, error) {
	return parse(src, conditionKeywords, func(p *parser) node {
		n := p.parseOr()
		if p.peek().kind == tokEOF && !isCondLike(n) {
			// A bare operand such as "foo": DynamoDB wants more.
			p.fail()
		}
		return n
	})
}

// isOperandLike reports whether n can stand where an operand is expected.
func isOperandLike(n node) bool {
	switch n := n.(type) {
	case *pathNode, *valueNode, *callNode:
		return true
	case *parenNode:
		return isOperandLike(n.x)
	}
	return false
}

// isCondLike reports whether n can stand where a condition is expected.
// Function calls are both; compile sorts out which functions may be which.
func isCondLike(n node) bool {
	switch n := n.(type) {
	case *compareNode, *betweenNode, *inNode, *logicNode, *notNode, *callNode:
		return true
	case *parenNode:
		return isCondLike(n.x)
	}
	return false
}

func (p *parser) parseOr() node {
	l := p.parseAnd()
	for isWord(p.peek(), "OR") {
		p.condOperand(l)
		p.next()
		r := p.parseAnd()
		p.condOperand(r)
		l = &logicNode{op: "OR", l: l, r: r}
	}
	return l
}

func (p *parser) parseAnd() node {
	l := p.parseNot()
	for isWord(p.peek(), "AND") {
		p.condOperand(l)
		p.next()
		r := p.parseNot()
		p.condOperand(r)
		l = &logicNode{op: "AND", l: l, r: r}
	}
	return l
}

// condOperand fails at the current token unless n is a condition: an
// operand in parentheses followed by AND, OR or ")" is incomplete.
func (p *parser) condOperand(n node) {
	if !isCondLike(n) {
		p.fail()
	}
}

func (p *parser) parseNot() node {
	if isWord(p.peek(), "NOT") {
		p.enter()
		p.next()
		x := p.parseNot()
		p.condOperand(x)
		p.leave()
		return &notNode{x: x}
	}
	return p.parsePrimary()
}

func comparator(k tokKind) string {
	switch k {
	case tokEQ:
		return "="
	case tokNE:
		return "<>"
	case tokLT:
		return "<"
	case tokLE:
		return "<="
	case tokGT:
		return ">"
	case tokGE:
		return ">="
	}
	return ""
}

// parsePrimary parses a comparison, BETWEEN, IN, a function call, or a
// parenthesised condition. A "(" may open either a condition or an operand
// ("(a) = :v"), so it parses the inside as a condition that may turn out
// to be a bare operand, and decides by what follows the ")". A bare operand
// is returned only when ")" follows, for the enclosing level to judge.
func (p *parser) parsePrimary() node {
	var atom node
	if p.peek().kind == tokLParen {
		p.enter()
		p.next()
		inner := p.parseOr()
		p.expect(tokRParen)
		p.leave()
		atom = &parenNode{x: inner}
	} else {
		atom = p.parseAtom()
	}
	t := p.peek()
	if op := comparator(t.kind); op != "" {
		if !isOperandLike(atom) {
			p.fail()
		}
		p.next()
		return &compareNode{op: op, l: atom, r: p.parseOperand()}
	}
	if isWord(t, "BETWEEN") {
		if !isOperandLike(atom) {
			p.fail()
		}
		p.next()
		lo := p.parseOperand()
		if !isWord(p.peek(), "AND") {
			p.fail()
		}
		p.next()
		return &betweenNode{x: atom, lo: lo, hi: p.parseOperand()}
	}
	if isWord(t, "IN") {
		if !isOperandLike(atom) {
			p.fail()
		}
		p.next()
		p.expect(tokLParen)
		n := &inNode{x: atom}
		for {
			n.list = append(n.list, p.parseOperand())
			if p.peek().kind != tokComma {
				break
			}
			p.next()
		}
		p.expect(tokRParen)
		return n
	}
	if !isCondLike(atom) && t.kind != tokRParen {
		p.fail()
	}
	return atom
}

// ---- update ----

// parseUpdate parses an UpdateExpression.
func parseUpdate(src string) (*updateNode, error) {
	n, err := parse(src, updateKeywords, func(p *parser) node {
		u := &updateNode{}
		for {
			t := p.peek()
			kind := ""
			for _, k := range updateKeywords {
				if isWord(t, k) {
					kind = k
				}
			}
			if kind == "" {
				p.fail()
			}
			p.next()
			c := clauseNode{kind: kind}
			for {
				a := actionNode{path: p.parsePath()}
				switch kind {
				case "SET":
					p.expect(tokEQ)
					a.value = p.parseSetValue()
				case "ADD", "DELETE":
					if p.peek().kind != tokValue {
						p.fail()
					}
					a.value = &valueNode{name: p.next().text}
				}
				c.actions = append(c.actions, a)
				if p.peek().kind != tokComma {
					break
				}
				p.next()
			}
			u.clauses = append(u.clauses, c)
			if p.peek().kind == tokEOF {
				return u
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return n.(*updateNode), nil
}

// hasArith reports whether n is arithmetic, possibly in parentheses.
func hasArith(n node) bool {
	switch n := n.(type) {
	case *arithNode:
		return true
	case *parenNode:
		return hasArith(n.x)
	}
	return false
}

// parseSetValue parses term (('+' | '-') term)?; DynamoDB allows a single
// arithmetic operator per SET action.
func (p *parser) parseSetValue() node {
	l := p.parseSetTerm()
	t := p.peek()
	if t.kind != tokPlus && t.kind != tokMinus {
		return l
	}
	if hasArith(l) {
		p.fail()
	}
	p.next()
	opPos := p.pos - 1
	r := p.parseSetTerm()
	if hasArith(r) {
		p.pos = opPos
		p.fail()
	}
	return &arithNode{op: t.text[0], l: l, r: r}
}

func (p *parser) parseSetTerm() node {
	if p.peek().kind == tokLParen {
		p.enter()
		p.next()
		x := p.parseSetValue()
		p.expect(tokRParen)
		p.leave()
		return &parenNode{x: x}
	}
	return p.parseAtom()
}

// ---- projection ----

// parseProjection parses a ProjectionExpression: path (',' path)*.
func parseProjection(src string) (*projectionNode, error) {
	n, err := parse(src, nil, func(p *parser) node {
		pr := &projectionNode{}
		for {
			pr.paths = append(pr.paths, p.parsePath())
			if p.peek().kind != tokComma {
				return pr
			}
			p.next()
		}
	})
	if err != nil {
		return nil, err
	}
	return n.(*projectionNode), nil
}
