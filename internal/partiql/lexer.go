package partiql

import (
	"strings"
	"unicode/utf8"
)

// tokKind is the class of a token.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tIdent           // a bare identifier or keyword: SELECT, Orders, pk
	tQuoted          // a double-quoted identifier: "Orders"
	tString          // a single-quoted string literal: 'abc'
	tNumber          // a number literal: 12, -1.5e3
	tParam           // ?
	tPunct           // one of ( ) [ ] { } , . : * = < > <= >= <> != + - << >>
	tIllegal         // anything else; text holds the offending character
)

type token struct {
	kind tokKind
	text string // for tString and tQuoted the unescaped content
	pos  int    // byte offset in the statement
}

// lexer splits a statement into tokens. It never fails: an unexpected
// character becomes a tIllegal token that the parser reports.
type lexer struct {
	src string
	pos int
}

func (l *lexer) next() token {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			l.pos++
			continue
		}
		// -- line comments, as PartiQL allows.
		if c == '-' && strings.HasPrefix(l.src[l.pos:], "--") {
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
			continue
		}
		break
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tEOF, pos: start}
	}
	c := l.src[l.pos]
	switch {
	case isIdentStart(c):
		for l.pos < len(l.src) && isIdentPart(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tIdent, text: l.src[start:l.pos], pos: start}
	case c >= '0' && c <= '9' || c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		return l.number(start)
	case c == '\'' || c == '"':
		return l.quoted(c, start)
	case c == '?':
		l.pos++
		return token{kind: tParam, text: "?", pos: start}
	}
	for _, p := range []string{"<=", ">=", "<>", "!=", "<<", ">>"} {
		if strings.HasPrefix(l.src[l.pos:], p) {
			l.pos += 2
			return token{kind: tPunct, text: p, pos: start}
		}
	}
	if strings.IndexByte("()[]{},.:*=<>+-", c) >= 0 {
		l.pos++
		return token{kind: tPunct, text: l.src[start:l.pos], pos: start}
	}
	_, n := utf8.DecodeRuneInString(l.src[l.pos:])
	l.pos += n
	return token{kind: tIllegal, text: l.src[start:l.pos], pos: start}
}

func (l *lexer) number(start int) token {
	for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		l.pos++
	}
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		p := l.pos + 1
		if p < len(l.src) && (l.src[p] == '+' || l.src[p] == '-') {
			p++
		}
		if p < len(l.src) && isDigit(l.src[p]) {
			l.pos = p
			for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
				l.pos++
			}
		}
	}
	return token{kind: tNumber, text: l.src[start:l.pos], pos: start}
}

// quoted reads a string ('...') or quoted identifier ("..."); a doubled
// quote inside stands for one. An unterminated one is tIllegal.
func (l *lexer) quoted(q byte, start int) token {
	var b strings.Builder
	l.pos++
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c == q {
			if l.pos+1 < len(l.src) && l.src[l.pos+1] == q {
				b.WriteByte(q)
				l.pos += 2
				continue
			}
			l.pos++
			kind := tString
			if q == '"' {
				kind = tQuoted
			}
			return token{kind: kind, text: b.String(), pos: start}
		}
		b.WriteByte(c)
		l.pos++
	}
	return token{kind: tIllegal, text: string(q), pos: start}
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) || c == '$' }
