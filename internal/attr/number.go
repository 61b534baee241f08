package attr

import (
	"math/big"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// MaxDigits is DynamoDB's precision for numbers: 38 significant digits.
const MaxDigits = 38

// Exponent bounds: a non-zero Number is 0.d1d2d3... x 10^exp with d1 != 0,
// so its magnitude lies in [10^(exp-1), 10^exp). DynamoDB accepts magnitudes
// from 1E-130 to 9.99...E+125.
const (
	maxExp = 126
	minExp = -129
)

// Number is an exact decimal with at most 38 significant digits, the value
// of a DynamoDB N attribute. The zero value is 0.
//
// NB: the representation is canonical (no leading or trailing zero digits),
// so two Numbers are equal exactly when their fields are equal.
type Number struct {
	neg    bool
	digits string // significant digits, no leading/trailing zeros; "" for 0
	exp    int    // value = 0.digits x 10^exp
}

var (
	errNotNumber  = apierr.Validationf("A value provided cannot be converted into a number")
	errTooPrecise = apierr.Validationf("Attempting to store more than 38 significant digits in a Number")
	errOverflow   = apierr.Validationf("Number overflow. Attempting to store a number with magnitude larger than supported range")
	errUnderflow  = apierr.Validationf("Number underflow. Attempting to store a number with magnitude smaller than supported range")
)

// ParseNumber parses a DynamoDB number string ("-12.50", "1e3", ".5").
// It returns a Validation error for malformed input, more than 38
// significant digits, or a magnitude outside DynamoDB's range.
func ParseNumber(s string) (Number, error) {
	var n Number
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		n.neg = s[i] == '-'
		i++
	}
	var mant strings.Builder
	intDigits := 0
	sawDigit, sawDot := false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			sawDigit = true
			mant.WriteByte(c)
			if !sawDot {
				intDigits++
			}
		case c == '.' && !sawDot:
			sawDot = true
		default:
			goto exponent
		}
	}
exponent:
	if !sawDigit {
		return Number{}, errNotNumber
	}
	e := 0
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return Number{}, errNotNumber
		}
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return Number{}, errNotNumber
		}
		for ; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return Number{}, errNotNumber
			}
			if e < 100000 {
				e = e*10 + int(c-'0')
			}
		}
		if eneg {
			e = -e
		}
	}
	m := mant.String()
	// Strip leading zeros (they shift the decimal exponent).
	lead := 0
	for lead < len(m) && m[lead] == '0' {
		lead++
	}
	if lead == len(m) {
		return Number{}, nil // zero; sign dropped
	}
	m = m[lead:]
	exp := intDigits - lead + e
	m = strings.TrimRight(m, "0")
	n.digits = m
	n.exp = exp
	return n, n.check()
}

func (n Number) check() error {
	if n.digits == "" {
		return nil
	}
	if len(n.digits) > MaxDigits {
		return errTooPrecise
	}
	if n.exp > maxExp {
		return errOverflow
	}
	if n.exp < minExp {
		return errUnderflow
	}
	return nil
}

// MustNumber parses s and panics on error; for tests and constants.
func MustNumber(s string) Number {
	n, err := ParseNumber(s)
	if err != nil {
		panic(err)
	}
	return n
}

// IsZero reports whether n is 0.
func (n Number) IsZero() bool { return n.digits == "" }

// Neg reports whether n is negative.
func (n Number) Neg() bool { return n.neg }

// Digits returns the number of significant digits (0 for zero).
func (n Number) Digits() int { return len(n.digits) }

// String returns the canonical plain decimal form ("-12.5", "100", "0.001").
func (n Number) String() string {
	if n.digits == "" {
		return "0"
	}
	var b strings.Builder
	if n.neg {
		b.WriteByte('-')
	}
	switch {
	case n.exp <= 0:
		b.WriteString("0.")
		for i := 0; i < -n.exp; i++ {
			b.WriteByte('0')
		}
		b.WriteString(n.digits)
	case n.exp >= len(n.digits):
		b.WriteString(n.digits)
		for i := len(n.digits); i < n.exp; i++ {
			b.WriteByte('0')
		}
	default:
		b.WriteString(n.digits[:n.exp])
		b.WriteByte('.')
		b.WriteString(n.digits[n.exp:])
	}
	return b.String()
}

// Cmp compares n and m exactly: -1, 0 or +1.
func (n Number) Cmp(m Number) int {
	ns, ms := n.sign(), m.sign()
	if ns != ms {
		if ns < ms {
			return -1
		}
		return 1
	}
	if ns == 0 {
		return 0
	}
	c := cmpMag(n, m)
	if ns < 0 {
		return -c
	}
	return c
}

func (n Number) sign() int {
	switch {
	case n.digits == "":
		return 0
	case n.neg:
		return -1
	}
	return 1
}

func cmpMag(n, m Number) int {
	if n.exp != m.exp {
		if n.exp < m.exp {
			return -1
		}
		return 1
	}
	return strings.Compare(n.digits, m.digits)
}

// big returns n as coefficient x 10^scale.
func (n Number) big() (*big.Int, int) {
	c := new(big.Int)
	if n.digits == "" {
		return c, 0
	}
	c.SetString(n.digits, 10)
	if n.neg {
		c.Neg(c)
	}
	return c, n.exp - len(n.digits)
}

func fromBig(c *big.Int, scale int) (Number, error) {
	if c.Sign() == 0 {
		return Number{}, nil
	}
	neg := c.Sign() < 0
	s := new(big.Int).Abs(c).String()
	exp := len(s) + scale
	s = strings.TrimRight(s, "0")
	n := Number{neg: neg, digits: s, exp: exp}
	return n, n.check()
}

// Add returns n+m exactly, or a Validation error if the result needs more
// than 38 significant digits or leaves DynamoDB's range.
func (n Number) Add(m Number) (Number, error) {
	if n.IsZero() {
		return m, nil
	}
	if m.IsZero() {
		return n, nil
	}
	a, as := n.big()
	b, bs := m.big()
	scale := as
	if bs < scale {
		scale = bs
	}
	a.Mul(a, pow10(as-scale))
	b.Mul(b, pow10(bs-scale))
	return fromBig(a.Add(a, b), scale)
}

// Sub returns n-m exactly (see Add).
func (n Number) Sub(m Number) (Number, error) {
	if !m.IsZero() {
		m.neg = !m.neg
	}
	return n.Add(m)
}

func pow10(k int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
}

// Int64 returns n as an int64 if it is an integer that fits, for TTL and
// limits.
func (n Number) Int64() (int64, bool) {
	if n.digits == "" {
		return 0, true
	}
	if n.exp < len(n.digits) || n.exp > 19 {
		return 0, false
	}
	c, scale := n.big()
	c.Mul(c, pow10(scale))
	if !c.IsInt64() {
		return 0, false
	}
	return c.Int64(), true
}

// Float64 returns an approximation of n, for TTL and metrics only.
func (n Number) Float64() float64 {
	f, _ := new(big.Float).SetString(n.String())
	if f == nil {
		return 0
	}
	v, _ := f.Float64()
	return v
}

// AppendOrdered appends an encoding of n whose byte order equals numeric
// order and which is self-delimiting (safe to follow with more key bytes).
func (n Number) AppendOrdered(dst []byte) []byte {
	switch n.sign() {
	case 0:
		return append(dst, 0x02)
	case 1:
		e := uint16(n.exp + 0x8000)
		dst = append(dst, 0x03, byte(e>>8), byte(e))
		for i := 0; i < len(n.digits); i++ {
			dst = append(dst, n.digits[i]-'0'+1)
		}
		return append(dst, 0x00)
	default:
		e := ^uint16(n.exp + 0x8000)
		dst = append(dst, 0x01, byte(e>>8), byte(e))
		for i := 0; i < len(n.digits); i++ {
			dst = append(dst, ^(n.digits[i] - '0' + 1))
		}
		return append(dst, 0xFF)
	}
}

// DecodeOrdered decodes an AppendOrdered encoding at the start of b and
// returns the number and the bytes consumed.
func DecodeOrdered(b []byte) (Number, int, bool) {
	if len(b) == 0 {
		return Number{}, 0, false
	}
	switch b[0] {
	case 0x02:
		return Number{}, 1, true
	case 0x03, 0x01:
		neg := b[0] == 0x01
		if len(b) < 3 {
			return Number{}, 0, false
		}
		e := uint16(b[1])<<8 | uint16(b[2])
		term := byte(0x00)
		if neg {
			e = ^e
			term = 0xFF
		}
		var d []byte
		for i := 3; i < len(b); i++ {
			c := b[i]
			if c == term {
				return Number{neg: neg, digits: string(d), exp: int(e) - 0x8000}, i + 1, true
			}
			if neg {
				c = ^c
			}
			if c < 1 || c > 10 {
				return Number{}, 0, false
			}
			d = append(d, c-1+'0')
		}
	}
	return Number{}, 0, false
}
