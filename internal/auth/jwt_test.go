package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

func hs256(t testing.TB, secret []byte, header, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	signed := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestJWTVerify(t *testing.T) {
	secret := []byte("s")
	now := time.Unix(1_800_000_000, 0)
	v := NewJWTVerifier(JWTOptions{HS256Secret: secret, Audience: "tdb", Now: func() time.Time { return now }})
	hdr := map[string]any{"alg": "HS256"}
	ok := map[string]any{"sub": "u1", "aud": []string{"x", "tdb"}, "exp": now.Unix() + 60, "email": "u@x"}
	c, err := v.Verify(hs256(t, secret, hdr, ok))
	if err != nil || c.Subject != "u1" || c.Email != "u@x" {
		t.Fatalf("Verify = %+v, %v", c, err)
	}
	for name, tok := range map[string]string{
		"expired":        hs256(t, secret, hdr, map[string]any{"sub": "u1", "aud": "tdb", "exp": now.Unix() - 120}),
		"no exp":         hs256(t, secret, hdr, map[string]any{"sub": "u1", "aud": "tdb"}),
		"not yet valid":  hs256(t, secret, hdr, map[string]any{"sub": "u1", "aud": "tdb", "exp": now.Unix() + 600, "nbf": now.Unix() + 300}),
		"wrong audience": hs256(t, secret, hdr, map[string]any{"sub": "u1", "aud": "other", "exp": now.Unix() + 60}),
		"alg none":       hs256(t, secret, map[string]any{"alg": "none"}, ok),
		"RS256 no keys":  hs256(t, secret, map[string]any{"alg": "RS256"}, ok),
		"wrong secret":   hs256(t, []byte("t"), hdr, ok),
		"two parts":      "a.b",
		"garbage":        "!!!.!!!.!!!",
	} {
		if _, err := v.Verify(tok); !apierr.Is(err, apierr.Unauthorized) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Without a configured secret HS256 is refused outright.
	if _, err := NewJWTVerifier(JWTOptions{Now: func() time.Time { return now }}).Verify(hs256(t, secret, hdr, ok)); !apierr.Is(err, apierr.Unauthorized) {
		t.Errorf("HS256 without a secret: %v", err)
	}
}

func FuzzJWTVerify(f *testing.F) {
	secret := []byte("s")
	f.Add(hs256(f, secret, map[string]any{"alg": "HS256"}, map[string]any{"sub": "u", "exp": 1 << 40}))
	f.Add("eyJhbGciOiJSUzI1NiJ9.e30.AAAA")
	v := NewJWTVerifier(JWTOptions{HS256Secret: secret})
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := v.Verify(tok)
		if err == nil && c.Subject == "" {
			t.Fatalf("accepted a token without sub: %q", tok)
		}
	})
}
