package attr

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// MarshalJSON encodes v in DynamoDB JSON ({"S":"x"}, {"N":"1"}, ...).
func (v Value) MarshalJSON() ([]byte, error) {
	return AppendJSON(nil, v), nil
}

// AppendJSON appends the DynamoDB JSON encoding of v to dst.
func AppendJSON(dst []byte, v Value) []byte {
	switch v.Type {
	case S:
		dst = append(dst, `{"S":`...)
		dst = appendString(dst, v.S)
	case N:
		dst = append(dst, `{"N":"`...)
		dst = append(dst, v.N.String()...)
		dst = append(dst, '"')
	case B:
		dst = append(dst, `{"B":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, v.B)
		dst = append(dst, '"')
	case BOOL:
		if v.Bool {
			dst = append(dst, `{"BOOL":true`...)
		} else {
			dst = append(dst, `{"BOOL":false`...)
		}
	case NULL:
		dst = append(dst, `{"NULL":true`...)
	case M:
		dst = append(dst, `{"M":`...)
		dst = AppendItemJSON(dst, v.M)
	case L:
		dst = append(dst, `{"L":[`...)
		for i, e := range v.L {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, e)
		}
		dst = append(dst, ']')
	case SS:
		dst = append(dst, `{"SS":[`...)
		for i, e := range v.SS {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, e)
		}
		dst = append(dst, ']')
	case NS:
		dst = append(dst, `{"NS":[`...)
		for i, e := range v.NS {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, e.String()...)
			dst = append(dst, '"')
		}
		dst = append(dst, ']')
	case BS:
		dst = append(dst, `{"BS":[`...)
		for i, e := range v.BS {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, e)
			dst = append(dst, '"')
		}
		dst = append(dst, ']')
	default:
		return append(dst, "null"...)
	}
	return append(dst, '}')
}

// AppendItemJSON appends an item as a JSON object of DynamoDB JSON values.
func AppendItemJSON(dst []byte, it Item) []byte {
	dst = append(dst, '{')
	first := true
	for k, v := range it {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = AppendJSON(dst, v)
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// Masks for testing eight bytes at once (bit hacks for "has a byte less
// than n" and "has a zero byte"; neither misses a byte, and a false
// positive only sends a word to the byte loop).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports whether the 8 bytes at s[i:] are all printable ASCII
// other than '"' and '\\', which appendString copies unchanged.
func plainWord(s string, i int) bool {
	_ = s[i+7]
	return plain(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56)
}

// plainBytes is plainWord for the parser's input: the bytes its string
// fast path passes over.
func plainBytes(b []byte, i int) bool {
	return plain(binary.LittleEndian.Uint64(b[i:]))
}

// plain reports whether none of the 8 bytes of w is '"', '\\', a control
// character or above 0x7f. A false negative is impossible; a false
// positive only sends a word to the byte loop.
func plain(w uint64) bool {
	quote, bslash := w^(ones*'"'), w^(ones*'\\')
	special := (w - ones*0x20) | (quote-ones)&^quote | (bslash-ones)&^bslash | w
	return special&highs == 0
}

func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plainWord(s, i) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// UnmarshalJSON decodes a DynamoDB JSON attribute value and validates it as
// DynamoDB does: exactly one type, numbers parse, sets are non-empty and
// free of duplicates, NULL is true.
func (v *Value) UnmarshalJSON(data []byte) error {
	p := parser{b: data}
	p.ws()
	val, err := p.value(0)
	if err != nil {
		return err
	}
	p.ws()
	if p.i != len(p.b) {
		return p.syntax()
	}
	*v = val
	return nil
}

// ParseValuePrefix decodes the attribute value at the start of data (after
// any white space) and returns it with the number of bytes it took. It
// accepts exactly what UnmarshalJSON accepts on data[:n], which is always
// syntactically valid JSON; what follows the value is the caller's.
func ParseValuePrefix(data []byte) (Value, int, error) {
	p := parser{b: data}
	p.ws()
	val, err := p.value(0)
	if err != nil {
		return Value{}, 0, err
	}
	return val, p.i, nil
}

// ParseItemJSON decodes a JSON object of attribute values.
func ParseItemJSON(data []byte) (Item, error) {
	p := parser{b: data}
	p.ws()
	it, err := p.item(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, p.syntax()
	}
	return it, nil
}

// MaxDepth is DynamoDB's nesting limit for documents: a top-level
// attribute's value is at depth 0, each list element or map member one
// deeper than its container, and nothing may sit deeper than MaxDepth. So
// 32 lists or maps may nest inside a top-level attribute's list or map.
//
// NB: DynamoDB documents "up to 32 levels deep" without saying where the
// count starts; this boundary is our decision, pinned by
// tests/conformance (TestNestingBoundary), and expr's document-path limit
// is derived from it so that every stored value can be addressed.
const MaxDepth = 32

type parser struct {
	b []byte
	i int
}

func (p *parser) syntax() error {
	return apierr.New(apierr.Serialization, "Unexpected character at offset %d in attribute value", p.i)
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) expect(c byte) error {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != c {
		return p.syntax()
	}
	p.i++
	return nil
}

// object calls f for each key of a JSON object.
func (p *parser) object(f func(key string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.ws()
		k, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		p.ws()
		if err := f(k); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return p.syntax()
		}
		if p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.b[p.i] == '}' {
			p.i++
			return nil
		}
		return p.syntax()
	}
}

func (p *parser) array(f func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		p.ws()
		if err := f(); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return p.syntax()
		}
		if p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.b[p.i] == ']' {
			p.i++
			return nil
		}
		return p.syntax()
	}
}

func (p *parser) str() (string, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", p.typeErr("String")
	}
	start := p.i + 1
	j := start
	for j < len(p.b) {
		for j+8 <= len(p.b) && plainBytes(p.b, j) {
			j += 8
		}
		if j >= len(p.b) {
			break
		}
		c := p.b[j]
		if c == '"' {
			s := string(p.b[start:j])
			p.i = j + 1
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		j++
	}
	// Slow path: escapes or non-ASCII; find the end and let strconv decode.
	end := start
	for end < len(p.b) {
		c := p.b[end]
		if c == '\\' {
			end += 2
			continue
		}
		if c == '"' {
			break
		}
		end++
	}
	if end >= len(p.b) {
		return "", p.syntax()
	}
	s, ok := unquote(p.b[p.i : end+1])
	if !ok {
		return "", p.syntax()
	}
	p.i = end + 1
	return s, nil
}

// skip consumes one JSON value of any kind. Containers count toward the
// nesting limit as attribute values do.
func (p *parser) skip(depth int) error {
	if depth > MaxDepth {
		return errDepth
	}
	if p.i >= len(p.b) {
		return p.syntax()
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, err := p.str()
		return err
	case c == '{':
		return p.object(func(string) error { return p.skip(depth + 1) })
	case c == '[':
		return p.array(func() error { return p.skip(depth + 1) })
	case c == 't' || c == 'f':
		_, err := p.boolean()
		return err
	case c == 'n':
		if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
			p.i += 4
			return nil
		}
		return p.syntax()
	}
	start := p.i
	for p.i < len(p.b) && strings.IndexByte("+-0123456789.eE", p.b[p.i]) >= 0 {
		p.i++
	}
	if !json.Valid(p.b[start:p.i]) {
		return p.syntax()
	}
	return nil
}

func (p *parser) typeErr(want string) error {
	got := "UNKNOWN"
	if p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '{':
			got = "START_OBJECT"
		case c == '[':
			got = "START_ARRAY"
		case c == '"':
			got = "VALUE_STRING"
		case c == 't' || c == 'f':
			got = "VALUE_" + map[byte]string{'t': "TRUE", 'f': "FALSE"}[c]
		case c == 'n':
			got = "VALUE_NULL"
		default:
			got = "VALUE_NUMBER"
		}
	}
	return apierr.New(apierr.Serialization, "%s cannot be converted to %s", got, want)
}

func (p *parser) boolean() (bool, error) {
	switch {
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		p.i += 4
		return true, nil
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
		return false, nil
	}
	return false, p.typeErr("Boolean")
}

// TooDeep reports whether a value of it sits deeper than MaxDepth (its
// top-level values at depth 0): an item built by an update, whose values
// were each checked alone when parsed but may have been set at a nested
// path.
func TooDeep(it Item) bool {
	for _, v := range it {
		if tooDeep(v, 0) {
			return true
		}
	}
	return false
}

func tooDeep(v Value, depth int) bool {
	if depth > MaxDepth {
		return true
	}
	switch v.Type {
	case M:
		for _, e := range v.M {
			if tooDeep(e, depth+1) {
				return true
			}
		}
	case L:
		for _, e := range v.L {
			if tooDeep(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// ErrDepth is the error for a document nested deeper than MaxDepth.
var ErrDepth error = errDepth

// item parses a map whose members sit at depth.
func (p *parser) item(depth int) (Item, error) {
	it := Item{}
	err := p.object(func(k string) error {
		v, err := p.value(depth)
		if err != nil {
			return err
		}
		it[k] = v
		return nil
	})
	return it, err
}

var (
	errEmptyValue = apierr.Validationf("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	errMultiType  = apierr.Validationf("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
	errNullFalse  = apierr.Validationf("One or more parameter values were invalid: Null attribute value types must have the value of true")
	errDepth      = apierr.Validationf("Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit")
)

func emptySet(name string) error {
	return apierr.Validationf("One or more parameter values were invalid: An %s set  may not be empty", name)
}

func (p *parser) value(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, errDepth
	}
	if p.i < len(p.b) && p.b[p.i] == 'n' && len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return Value{}, errEmptyValue
	}
	var v Value
	err := p.object(func(k string) error {
		t, ok := ParseType(k)
		if p.i < len(p.b) && p.b[p.i] == 'n' && len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
			p.i += 4 // SDKs may send explicit nulls for unset members
			return nil
		}
		if !ok {
			// NB: DynamoDB's JSON protocol ignores members it does not
			// know, here as in every structure: a value with only unknown
			// members is empty (ValidationException), one with a known
			// type besides is that type.
			return p.skip(depth)
		}
		if v.Type != Invalid {
			return errMultiType
		}
		v.Type = t
		switch t {
		case S:
			s, err := p.str()
			v.S = s
			return err
		case N:
			s, err := p.str()
			if err != nil {
				return err
			}
			v.N, err = ParseNumber(s)
			return err
		case B:
			s, err := p.str()
			if err != nil {
				return err
			}
			v.B, err = decodeB64(s)
			return err
		case BOOL:
			b, err := p.boolean()
			v.Bool = b
			return err
		case NULL:
			b, err := p.boolean()
			if err != nil {
				return err
			}
			if !b {
				return errNullFalse
			}
			v.Bool = true
			return nil
		case M:
			m, err := p.item(depth + 1)
			v.M = m
			return err
		case L:
			v.L = []Value{}
			return p.array(func() error {
				e, err := p.value(depth + 1)
				v.L = append(v.L, e)
				return err
			})
		case SS:
			return p.array(func() error {
				s, err := p.str()
				v.SS = append(v.SS, s)
				return err
			})
		case NS:
			return p.array(func() error {
				s, err := p.str()
				if err != nil {
					return err
				}
				n, err := ParseNumber(s)
				v.NS = append(v.NS, n)
				return err
			})
		case BS:
			return p.array(func() error {
				s, err := p.str()
				if err != nil {
					return err
				}
				b, err := decodeB64(s)
				v.BS = append(v.BS, b)
				return err
			})
		}
		return nil
	})
	if err != nil {
		return Value{}, err
	}
	if v.Type == Invalid {
		return Value{}, errEmptyValue
	}
	return v, ValidateSet(v)
}

// ValidateSet checks DynamoDB's set rules on v: a set is non-empty and has
// no duplicate members. Other types pass.
func ValidateSet(v Value) error {
	switch v.Type {
	case SS:
		if len(v.SS) == 0 {
			return emptySet("string")
		}
		seen := make(map[string]struct{}, len(v.SS))
		for _, s := range v.SS {
			if _, dup := seen[s]; dup {
				return dupErr()
			}
			seen[s] = struct{}{}
		}
	case NS:
		if len(v.NS) == 0 {
			return emptySet("number")
		}
		seen := make(map[Number]struct{}, len(v.NS))
		for _, n := range v.NS {
			if _, dup := seen[n]; dup {
				return dupErr()
			}
			seen[n] = struct{}{}
		}
	case BS:
		if len(v.BS) == 0 {
			return emptySet("binary")
		}
		seen := make(map[string]struct{}, len(v.BS))
		for _, b := range v.BS {
			if _, dup := seen[string(b)]; dup {
				return dupErr()
			}
			seen[string(b)] = struct{}{}
		}
	}
	return nil
}

func dupErr() error {
	return apierr.Validationf("One or more parameter values were invalid: Input collection contains duplicates")
}

func decodeB64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, apierr.New(apierr.Serialization, "Base64 encoded length is expected a multiple of 4 bytes but found: %d", len(s))
	}
	return b, nil
}

func unquote(b []byte) (string, bool) {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	return s, true
}
