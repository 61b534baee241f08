package console

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeKey: a key or page token from the browser either is refused or
// is a non-empty JSON object of at most 8 KiB, which round-trips.
func FuzzDecodeKey(f *testing.F) {
	for _, s := range []string{
		encodeKey(item{"pk": json.RawMessage(`{"S":"a"}`)}),
		encodeKey(item{"pk": json.RawMessage(`{"S":"a"}`), "sk": json.RawMessage(`{"N":"1"}`)}),
		"", "e30", "bnVsbA", "!!!", base64.RawURLEncoding.EncodeToString([]byte(`{"a":1}`)),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := decodeKey(s)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if len(raw) > 8<<10 || json.Unmarshal(raw, &m) != nil || len(m) == 0 {
			t.Fatalf("decodeKey(%q) accepted %q", s, raw)
		}
		if back, err := decodeKey(encodeKey(m)); err != nil || len(back) == 0 {
			t.Fatalf("round trip of %q: %v", raw, err)
		}
	})
}

// FuzzTyped: a partition key typed into the query form becomes a value of
// the declared type or is refused.
func FuzzTyped(f *testing.F) {
	for _, c := range [][2]string{{"S", "bob"}, {"N", "12.5"}, {"N", "x"}, {"B", "aGk="}, {"B", "%%"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, typ, v string) {
		out, err := typed(typ, v)
		if err != nil {
			return
		}
		if len(out) != 1 || out[typ] != v {
			t.Fatalf("typed(%q, %q) = %v", typ, v, out)
		}
	})
}

// FuzzSessionCookie: a session cookie is either refused or exactly the
// form the console issues; a stored record that does not open under the
// cookie's token is refused, never half-read.
func FuzzSessionCookie(f *testing.F) {
	issued := "00000000000000000000000000000000." + token()
	f.Add(issued, []byte{recVersion})
	f.Add("x.y", []byte{})
	f.Add(strings.Repeat("g", 32)+"."+token(), make([]byte, recHeader+40))
	f.Fuzz(func(t *testing.T, id string, rec []byte) {
		tn, tok, ok := parseID(id)
		if !ok {
			return
		}
		if back := hex.EncodeToString(tn[:]) + "." + base64.RawURLEncoding.EncodeToString(tok); back != id {
			t.Fatalf("parseID(%q) accepted a cookie that is not one the console issues (%q)", id, back)
		}
		s := &session{id: id}
		s.rec, s.aead = keys(tn, tok)
		if err := s.decode(rec); err == nil {
			t.Fatalf("a record not sealed under the cookie's token opened: %q", rec)
		}
	})
}
