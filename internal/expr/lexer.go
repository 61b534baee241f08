package expr

import "unicode/utf8"

// tokKind is the kind of a lexical token. All expression languages share
// one lexer; keywords (AND, SET, ...) are plain identifiers that each parser
// recognises in its own context, case-insensitively, as DynamoDB does.
type tokKind uint8

const (
	tokEOF     tokKind = iota
	tokIdent           // attribute name or keyword: [A-Za-z][A-Za-z0-9_]*
	tokName            // expression attribute name: #[A-Za-z0-9_]+
	tokValue           // expression attribute value: :[A-Za-z0-9_]+
	tokNumber          // list index: [0-9]+
	tokLParen          // (
	tokRParen          // )
	tokLBrack          // [
	tokRBrack          // ]
	tokComma           // ,
	tokDot             // .
	tokEQ              // =
	tokNE              // <>
	tokLT              // <
	tokLE              // <=
	tokGT              // >
	tokGE              // >=
	tokPlus            // +
	tokMinus           // -
	tokIllegal         // any other character
)

// token is one lexical token; start and end are byte offsets into the
// source, used to build DynamoDB's "near" text in syntax errors.
type token struct {
	kind       tokKind
	text       string
	start, end int
}

// NB: a bare name must start with a letter ("_a" is a syntax error in
// DynamoDB), while the characters after "#" or ":" may be any of
// [A-Za-z0-9_].
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '_'
}

// lex splits src into tokens, ending with one tokEOF. It never fails:
// characters outside the language become tokIllegal tokens and the parser
// reports them as syntax errors at the right place.
func lex(src string) []token {
	toks := make([]token, 0, len(src)/3+2)
	i := 0
	for i < len(src) {
		c := src[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		start := i
		kind := tokIllegal
		switch {
		case isIdentStart(c):
			kind = tokIdent
			for i++; i < len(src) && isIdentPart(src[i]); i++ {
			}
		case (c == '#' || c == ':') && i+1 < len(src) && isIdentPart(src[i+1]):
			kind = tokName
			if c == ':' {
				kind = tokValue
			}
			for i++; i < len(src) && isIdentPart(src[i]); i++ {
			}
		case c >= '0' && c <= '9':
			kind = tokNumber
			for i++; i < len(src) && src[i] >= '0' && src[i] <= '9'; i++ {
			}
		default:
			i++
			switch c {
			case '(':
				kind = tokLParen
			case ')':
				kind = tokRParen
			case '[':
				kind = tokLBrack
			case ']':
				kind = tokRBrack
			case ',':
				kind = tokComma
			case '.':
				kind = tokDot
			case '=':
				kind = tokEQ
			case '+':
				kind = tokPlus
			case '-':
				kind = tokMinus
			case '<':
				kind = tokLT
				if i < len(src) && src[i] == '=' {
					kind, i = tokLE, i+1
				} else if i < len(src) && src[i] == '>' {
					kind, i = tokNE, i+1
				}
			case '>':
				kind = tokGT
				if i < len(src) && src[i] == '=' {
					kind, i = tokGE, i+1
				}
			default:
				// One whole (possibly invalid) UTF-8 sequence.
				_, n := utf8.DecodeRuneInString(src[start:])
				i = start + n
			}
		}
		toks = append(toks, token{kind: kind, text: src[start:i], start: start, end: i})
	}
	return append(toks, token{kind: tokEOF, text: "<EOF>", start: len(src), end: len(src)})
}
