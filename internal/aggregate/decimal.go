package aggregate

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Decimal is an exact decimal of any size: coef × 10^-scale. Sums use it
// instead of attr.Number because a sum of 38-digit numbers may need more
// than 38 digits, and never float64, which is not exact. The zero value
// is 0.
type Decimal struct {
	coef  big.Int
	scale int32 // >= 0
}

// DecimalOf returns n as a Decimal, exactly.
func DecimalOf(n attr.Number) Decimal {
	d, err := ParseDecimal(n.String())
	if err != nil {
		// NB: attr.Number.String is always a plain decimal.
		panic(fmt.Sprintf("aggregate: number %q is not a plain decimal: %v", n.String(), err))
	}
	return d
}

// ParseDecimal parses a plain decimal ("-12.50", "7", "0.001") as
// String writes it.
func ParseDecimal(s string) (Decimal, error) {
	var d Decimal
	t := s
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	intPart, frac, hasDot := strings.Cut(t, ".")
	if intPart == "" || (hasDot && frac == "") {
		return d, fmt.Errorf("aggregate: %q is not a decimal", s)
	}
	for _, c := range intPart + frac {
		if c < '0' || c > '9' {
			return d, fmt.Errorf("aggregate: %q is not a decimal", s)
		}
	}
	d.coef.SetString(intPart+frac, 10)
	if neg {
		d.coef.Neg(&d.coef)
	}
	d.scale = int32(len(frac))
	d.normalize()
	return d, nil
}

// normalize drops trailing zeros of the fraction, so that equal values
// have equal representations.
func (d *Decimal) normalize() {
	if d.coef.Sign() == 0 {
		d.scale = 0
		return
	}
	ten := big.NewInt(10)
	var q, r big.Int
	for d.scale > 0 {
		q.QuoRem(&d.coef, ten, &r)
		if r.Sign() != 0 {
			return
		}
		d.coef.Set(&q)
		d.scale--
	}
}

// Add sets d to d+e exactly.
func (d *Decimal) Add(e Decimal) { d.addSigned(e, 1) }

// Sub sets d to d-e exactly.
func (d *Decimal) Sub(e Decimal) { d.addSigned(e, -1) }

func (d *Decimal) addSigned(e Decimal, sign int) {
	var b big.Int
	b.Set(&e.coef)
	if sign < 0 {
		b.Neg(&b)
	}
	switch {
	case e.scale > d.scale:
		d.coef.Mul(&d.coef, pow10(e.scale-d.scale))
		d.scale = e.scale
	case e.scale < d.scale:
		b.Mul(&b, pow10(d.scale-e.scale))
	}
	d.coef.Add(&d.coef, &b)
	d.normalize()
}

func pow10(k int32) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil) }

// IsZero reports whether d is 0.
func (d *Decimal) IsZero() bool { return d.coef.Sign() == 0 }

// Clone returns a copy of d that shares nothing with it.
func (d *Decimal) Clone() Decimal {
	var c Decimal
	c.coef.Set(&d.coef)
	c.scale = d.scale
	return c
}

// String returns the plain decimal form ("-12.5", "100", "0.001").
func (d *Decimal) String() string {
	s := new(big.Int).Abs(&d.coef).String()
	if d.scale > 0 {
		if pad := int(d.scale) + 1 - len(s); pad > 0 {
			s = strings.Repeat("0", pad) + s
		}
		s = s[:len(s)-int(d.scale)] + "." + s[len(s)-int(d.scale):]
	}
	if d.coef.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// Number returns d as a DynamoDB number, or an error if it needs more
// than 38 significant digits or leaves DynamoDB's range (the sum can
// still be shown as text).
func (d *Decimal) Number() (attr.Number, error) { return attr.ParseNumber(d.String()) }
