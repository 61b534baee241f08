package attr

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// appendStringSlow is appendString without the eight-byte fast path, the
// reference the fast path must match.
func appendStringSlow(s string) string {
	// Runs of at most 4 bytes (one rune, or one invalid byte) never take
	// the fast path.
	out := []byte{'"'}
	for i := 0; i < len(s); {
		n := 1
		for n < 4 && i+n < len(s) && s[i+n]&0xC0 == 0x80 {
			n++
		}
		enc := appendString(nil, s[i:i+n])
		out = append(out, enc[1:len(enc)-1]...)
		i += n
	}
	return string(append(out, '"'))
}

func TestAppendStringFastPath(t *testing.T) {
	alphabet := []string{"a", "Z", " ", "~", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff", "😀", "/", "<"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var sb strings.Builder
		for range r.IntN(40) {
			if r.IntN(4) == 0 {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			} else {
				sb.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		s := sb.String()
		if got, want := string(appendString(nil, s)), appendStringSlow(s); got != want {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func BenchmarkAppendString1K(b *testing.B) {
	s := strings.Repeat("x", 1000)
	buf := make([]byte, 0, 2048)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = appendString(buf[:0], s)
	}
}

func benchItem() Item {
	return Item{
		"pk":   Str("p00000042"),
		"sk":   Str("s07"),
		"data": Str(strings.Repeat("x", 1000)),
		"n":    Num(MustNumber("12345.678")),
	}
}

func BenchmarkDecodeItem1K(b *testing.B) {
	enc := EncodeItem(benchItem())
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeItem(enc); err != nil {
			b.Fatal(err)
		}
	}
}
