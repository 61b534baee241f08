package attr

import (
	"encoding/binary"
	"errors"
)

// ErrCorrupt is returned when stored bytes do not decode.
var ErrCorrupt = errors.New("attr: corrupt encoding")

// EncodeItem returns the compact binary storage encoding of it.
func EncodeItem(it Item) []byte {
	return AppendItem(make([]byte, 0, 64+ItemSize(it)), it)
}

// AppendItem appends the binary encoding of it to dst.
func AppendItem(dst []byte, it Item) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(it)))
	for k, v := range it {
		dst = appendBytes(dst, k)
		dst = AppendBinary(dst, v)
	}
	return dst
}

// DecodeItem decodes an EncodeItem encoding.
//
// NB: the strings of the decoded item (names, S and N values) share one
// copy of b, made by one allocation, so that decoding costs a few
// allocations rather than two per attribute; any one of them keeps that
// copy alive. The item never refers to b itself, so b may be a buffer the
// caller reuses (storage.DB.View relies on this).
func DecodeItem(b []byte) (Item, error) {
	d := decoder{b: b, s: string(b)}
	it := d.item()
	if d.err != nil || d.i != len(b) {
		return nil, ErrCorrupt
	}
	return it, nil
}

// EncodedItemSize returns ItemSize of the item encoded in b (an EncodeItem
// encoding) without decoding it: no allocation, and b is not kept. It
// returns ErrCorrupt if b does not decode.
func EncodedItemSize(b []byte) (int, error) {
	d := decoder{b: b}
	n := d.itemSize()
	if d.err != nil || d.i != len(b) {
		return 0, ErrCorrupt
	}
	return n, nil
}

func appendBytes[T string | []byte](dst []byte, s T) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBinary appends the binary encoding of one value.
func AppendBinary(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.Type))
	switch v.Type {
	case S:
		dst = appendBytes(dst, v.S)
	case N:
		dst = appendNumber(dst, v.N)
	case B:
		dst = appendBytes(dst, v.B)
	case BOOL:
		if v.Bool {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	case M:
		dst = AppendItem(dst, v.M)
	case L:
		dst = binary.AppendUvarint(dst, uint64(len(v.L)))
		for _, e := range v.L {
			dst = AppendBinary(dst, e)
		}
	case SS:
		dst = binary.AppendUvarint(dst, uint64(len(v.SS)))
		for _, e := range v.SS {
			dst = appendBytes(dst, e)
		}
	case NS:
		dst = binary.AppendUvarint(dst, uint64(len(v.NS)))
		for _, e := range v.NS {
			dst = appendNumber(dst, e)
		}
	case BS:
		dst = binary.AppendUvarint(dst, uint64(len(v.BS)))
		for _, e := range v.BS {
			dst = appendBytes(dst, e)
		}
	}
	return dst
}

func appendNumber(dst []byte, n Number) []byte {
	if n.neg {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = binary.AppendVarint(dst, int64(n.exp))
	return appendBytes(dst, n.digits)
}

type decoder struct {
	b   []byte
	s   string // b as a string, which str slices; "" to copy every string
	i   int
	err error
}

// str decodes a length-prefixed string.
func (d *decoder) str() string {
	b := d.bytes()
	if d.s == "" || d.err != nil {
		return string(b)
	}
	return d.s[d.i-len(b) : d.i]
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = ErrCorrupt
	}
	d.i = len(d.b)
}

func (d *decoder) uvarint() int {
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 || v > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	d.i += n
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.i+n > len(d.b) {
		d.fail()
		return nil
	}
	b := d.b[d.i : d.i+n : d.i+n]
	d.i += n
	return b
}

func (d *decoder) byte1() byte {
	if d.i >= len(d.b) {
		d.fail()
		return 0
	}
	c := d.b[d.i]
	d.i++
	return c
}

func (d *decoder) number() Number {
	neg := d.byte1() == 1
	e, n := binary.Varint(d.b[d.i:])
	if n <= 0 {
		d.fail()
		return Number{}
	}
	d.i += n
	return Number{neg: neg, exp: int(e), digits: d.str()}
}

func (d *decoder) item() Item {
	n := d.uvarint()
	it := make(Item, n)
	for j := 0; j < n && d.err == nil; j++ {
		k := d.str()
		it[k] = d.value()
	}
	return it
}

func (d *decoder) value() Value {
	v := Value{Type: Type(d.byte1())}
	switch v.Type {
	case S:
		v.S = d.str()
	case N:
		v.N = d.number()
	case B:
		v.B = append([]byte(nil), d.bytes()...)
	case BOOL:
		v.Bool = d.byte1() == 1
	case NULL:
		v.Bool = true
	case M:
		v.M = d.item()
	case L:
		n := d.uvarint()
		v.L = make([]Value, 0, n)
		for j := 0; j < n && d.err == nil; j++ {
			v.L = append(v.L, d.value())
		}
	case SS:
		n := d.uvarint()
		v.SS = make([]string, 0, n)
		for j := 0; j < n && d.err == nil; j++ {
			v.SS = append(v.SS, d.str())
		}
	case NS:
		n := d.uvarint()
		v.NS = make([]Number, 0, n)
		for j := 0; j < n && d.err == nil; j++ {
			v.NS = append(v.NS, d.number())
		}
	case BS:
		n := d.uvarint()
		v.BS = make([][]byte, 0, n)
		for j := 0; j < n && d.err == nil; j++ {
			v.BS = append(v.BS, append([]byte(nil), d.bytes()...))
		}
	default:
		d.fail()
	}
	return v
}

// itemSize walks an item's encoding and returns its ItemSize; value sizes
// follow Size exactly.
func (d *decoder) itemSize() int {
	n := d.uvarint()
	size := 0
	for j := 0; j < n && d.err == nil; j++ {
		size += len(d.bytes()) + d.valueSize()
	}
	return size
}

func (d *decoder) valueSize() int {
	switch Type(d.byte1()) {
	case S, B:
		return len(d.bytes())
	case N:
		return d.numberSize()
	case BOOL:
		d.byte1()
		return 1
	case NULL:
		return 1
	case M:
		n := d.uvarint()
		size := 3
		for j := 0; j < n && d.err == nil; j++ {
			size += len(d.bytes()) + d.valueSize() + 1
		}
		return size
	case L:
		n := d.uvarint()
		size := 3
		for j := 0; j < n && d.err == nil; j++ {
			size += d.valueSize() + 1
		}
		return size
	case SS, BS:
		n := d.uvarint()
		size := 0
		for j := 0; j < n && d.err == nil; j++ {
			size += len(d.bytes())
		}
		return size
	case NS:
		n := d.uvarint()
		size := 0
		for j := 0; j < n && d.err == nil; j++ {
			size += d.numberSize()
		}
		return size
	}
	d.fail()
	return 0
}

// numberSize skips an appendNumber encoding and returns numberSize.
func (d *decoder) numberSize() int {
	d.byte1()
	if _, n := binary.Varint(d.b[d.i:]); n > 0 {
		d.i += n
	} else {
		d.fail()
		return 0
	}
	return (len(d.bytes())+1)/2 + 1
}

// AppendKey appends an order-preserving, self-delimiting encoding of a key
// value (S, N or B): byte-wise comparison of encodings equals DynamoDB's
// ordering of the values. It panics on other types; callers validate keys
// first.
func AppendKey(dst []byte, v Value) []byte {
	switch v.Type {
	case S:
		return appendEscaped(dst, v.S)
	case B:
		return appendEscaped(dst, v.B)
	case N:
		return v.N.AppendOrdered(dst)
	}
	panic("attr: AppendKey of non-key type " + v.Type.String())
}

// appendEscaped writes s with 0x00 escaped as 0x00 0xFF and terminates it
// with 0x00 0x01, preserving byte order.
func appendEscaped[T string | []byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, s[i])
		}
	}
	return append(dst, 0, 1)
}

// DecodeKey decodes an AppendKey encoding of type t at the start of b,
// returning the value and the number of bytes consumed.
func DecodeKey(t Type, b []byte) (Value, int, bool) {
	switch t {
	case N:
		n, k, ok := DecodeOrdered(b)
		return Num(n), k, ok
	case S, B:
		var out []byte
		for i := 0; i < len(b); i++ {
			if b[i] != 0 {
				out = append(out, b[i])
				continue
			}
			if i+1 >= len(b) {
				return Value{}, 0, false
			}
			switch b[i+1] {
			case 0xFF:
				out = append(out, 0)
				i++
			case 0x01:
				if t == S {
					return Str(string(out)), i + 2, true
				}
				if out == nil {
					out = []byte{}
				}
				return Bin(out), i + 2, true
			default:
				return Value{}, 0, false
			}
		}
	}
	return Value{}, 0, false
}
