package tenantkey

import (
	"bytes"
	"testing"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// FuzzOpen: Open parses stored bytes (magic, version, nonce, sealed
// data); whatever they are, it must not panic, and nothing but a value
// sealed under the key with the same associated data may open.
func FuzzOpen(f *testing.F) {
	kr, err := Open(Options{KEK: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		f.Fatal(err)
	}
	k, err := kr.Key(tenancy.TenantID{1})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := k.Seal(nil, []byte("plaintext"), []byte("aad"))
	f.Add(good, []byte("aad"))
	f.Add([]byte{magic}, []byte(""))
	f.Add([]byte{magic, 0xff, 0xff, 0xff, 0xff, 0x7f}, []byte("aad"))
	f.Add(append([]byte{magic, 1}, make([]byte, 28)...), []byte("aad"))
	f.Fuzz(func(t *testing.T, sealed, aad []byte) {
		pt, err := k.Open(nil, sealed, aad)
		if err == nil && !(bytes.Equal(sealed, good) && bytes.Equal(aad, []byte("aad"))) {
			t.Fatalf("forged value opened: %q -> %q", sealed, pt)
		}
		k.Current(sealed)
	})
}
