package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Platform users sign in with an OIDC ID token (a JWT). JWTVerifier checks
// RS256 and ES256 tokens against a JSON Web Key Set and, for local
// development only, HS256 tokens against a shared secret. The algorithm
// must match the key: an HS256 token is never checked against a public key
// (the classic confusion attack), and "none" is refused.

// Claims are the verified claims tenantdb uses.
type Claims struct {
	Subject   string
	Issuer    string
	Audience  []string
	Email     string
	ExpiresAt time.Time
}

// JWTOptions configure a JWTVerifier.
type JWTOptions struct {
	// HS256Secret, if not empty, enables HS256 tokens (development).
	HS256Secret []byte
	// Issuer and Audience, if set, must match the token's iss and one of
	// its aud.
	Issuer   string
	Audience string
	// Leeway is the clock skew allowed on exp and nbf; 0 means 60 s.
	Leeway time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// JWTVerifier verifies platform JWTs. Its methods are safe for concurrent
// use; SetKeys may replace the key set at any time (JWKS refresh).
type JWTVerifier struct {
	opts JWTOptions
	mu   sync.RWMutex
	keys map[string]crypto.PublicKey // by kid
}

// NewJWTVerifier returns a verifier with no public keys.
func NewJWTVerifier(opts JWTOptions) *JWTVerifier {
	if opts.Leeway == 0 {
		opts.Leeway = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &JWTVerifier{opts: opts, keys: map[string]crypto.PublicKey{}}
}

// SetKeys replaces the public keys (kid -> *rsa.PublicKey or
// *ecdsa.PublicKey).
func (v *JWTVerifier) SetKeys(keys map[string]crypto.PublicKey) {
	v.mu.Lock()
	v.keys = keys
	v.mu.Unlock()
}

// Configured reports whether the verifier can verify anything.
func (v *JWTVerifier) Configured() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.keys) > 0 || len(v.opts.HS256Secret) > 0
}

// ErrUnknownKey is in the chain of Verify's error when the token names a
// kid the key set lacks (a JWKS URL may then be fetched again).
var ErrUnknownKey = errors.New("auth: JWT signed with an unknown key")

func jwtError(cause error, format string, args ...any) error {
	return apierr.Wrap(apierr.Unauthorized, cause, format, args...)
}

// Verify checks token's signature, exp, nbf, iss and aud and returns its
// claims. Errors: Unauthorized (its cause is ErrUnknownKey for an unknown
// kid).
func (v *JWTVerifier) Verify(token string) (Claims, error) {
	if len(token) > 16<<10 {
		return Claims{}, jwtError(nil, "token is too long")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, jwtError(nil, "token is not a JWT")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return Claims{}, jwtError(err, "token header is not base64url")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}
	if err := json.Unmarshal(hb, &hdr); err != nil {
		return Claims{}, jwtError(err, "token header is not JSON")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return Claims{}, jwtError(err, "token signature is not base64url")
	}
	signed := token[:len(parts[0])+1+len(parts[1])]
	digest := sha256.Sum256([]byte(signed))

	switch hdr.Alg {
	case "HS256":
		if len(v.opts.HS256Secret) == 0 {
			return Claims{}, jwtError(nil, "HS256 tokens are not accepted by this server")
		}
		m := hmac.New(sha256.New, v.opts.HS256Secret)
		m.Write([]byte(signed))
		if !hmac.Equal(m.Sum(nil), sig) {
			return Claims{}, jwtError(nil, "token signature is invalid")
		}
	case "RS256", "ES256":
		key, err := v.key(hdr.Kid)
		if err != nil {
			return Claims{}, err
		}
		switch k := key.(type) {
		case *rsa.PublicKey:
			if hdr.Alg != "RS256" || rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) != nil {
				return Claims{}, jwtError(nil, "token signature is invalid")
			}
		case *ecdsa.PublicKey:
			if hdr.Alg != "ES256" || len(sig) != 64 || k.Curve != elliptic.P256() {
				return Claims{}, jwtError(nil, "token signature is invalid")
			}
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			if !ecdsa.Verify(k, digest[:], r, s) {
				return Claims{}, jwtError(nil, "token signature is invalid")
			}
		default:
			return Claims{}, jwtError(nil, "token signature is invalid")
		}
	default:
		return Claims{}, jwtError(nil, "token algorithm %q is not accepted", apierr.Clip(hdr.Alg))
	}

	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return Claims{}, jwtError(err, "token payload is not base64url")
	}
	var raw struct {
		Sub   string          `json:"sub"`
		Iss   string          `json:"iss"`
		Aud   json.RawMessage `json:"aud"`
		Exp   *json.Number    `json:"exp"`
		Nbf   *json.Number    `json:"nbf"`
		Email string          `json:"email"`
	}
	dec := json.NewDecoder(strings.NewReader(string(pb)))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Claims{}, jwtError(err, "token payload is not JSON")
	}
	c := Claims{Subject: raw.Sub, Issuer: raw.Iss, Email: raw.Email}
	if len(raw.Aud) > 0 {
		var one string
		if json.Unmarshal(raw.Aud, &one) == nil {
			c.Audience = []string{one}
		} else if json.Unmarshal(raw.Aud, &c.Audience) != nil {
			return Claims{}, jwtError(nil, "token aud is malformed")
		}
	}
	now := v.opts.Now()
	if raw.Exp == nil {
		return Claims{}, jwtError(nil, "token has no exp")
	}
	exp, err := numericDate(*raw.Exp)
	if err != nil {
		return Claims{}, jwtError(err, "token exp is malformed")
	}
	c.ExpiresAt = exp
	if !now.Before(exp.Add(v.opts.Leeway)) {
		return Claims{}, jwtError(nil, "token is expired")
	}
	if raw.Nbf != nil {
		nbf, err := numericDate(*raw.Nbf)
		if err != nil {
			return Claims{}, jwtError(err, "token nbf is malformed")
		}
		if now.Add(v.opts.Leeway).Before(nbf) {
			return Claims{}, jwtError(nil, "token is not valid yet")
		}
	}
	if c.Subject == "" {
		return Claims{}, jwtError(nil, "token has no sub")
	}
	if v.opts.Issuer != "" && c.Issuer != v.opts.Issuer {
		return Claims{}, jwtError(nil, "token issuer is not accepted")
	}
	if v.opts.Audience != "" {
		ok := false
		for _, a := range c.Audience {
			ok = ok || a == v.opts.Audience
		}
		if !ok {
			return Claims{}, jwtError(nil, "token audience is not accepted")
		}
	}
	return c, nil
}

func (v *JWTVerifier) key(kid string) (crypto.PublicKey, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	if kid == "" && len(v.keys) == 1 {
		for _, k := range v.keys {
			return k, nil
		}
	}
	return nil, jwtError(ErrUnknownKey, "token is signed with an unknown key")
}

func numericDate(n json.Number) (time.Time, error) {
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, err
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
}

// ParseJWKS parses a JSON Web Key Set and returns its RSA (RS256, at least
// 2048 bits) and EC P-256 (ES256) signing keys by kid. Keys of other types
// or uses are skipped; a set with no usable key is an error.
func ParseJWKS(data []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("auth: JWKS is not JSON: %w", err)
	}
	out := map[string]crypto.PublicKey{}
	b64 := base64.RawURLEncoding
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err1 := b64.DecodeString(k.N)
			e, err2 := b64.DecodeString(k.E)
			if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
				return nil, fmt.Errorf("auth: JWKS key %q: malformed RSA key", k.Kid)
			}
			pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
			if pub.N.BitLen() < 2048 {
				return nil, fmt.Errorf("auth: JWKS key %q: RSA keys must have at least 2048 bits", k.Kid)
			}
			out[k.Kid] = pub
		case "EC":
			if k.Crv != "P-256" {
				continue
			}
			x, err1 := b64.DecodeString(k.X)
			y, err2 := b64.DecodeString(k.Y)
			if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
				return nil, fmt.Errorf("auth: JWKS key %q: malformed EC key", k.Kid)
			}
			// Validate the point through the uncompressed encoding.
			enc := append(append([]byte{4}, x...), y...)
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), enc)
			if err != nil {
				return nil, fmt.Errorf("auth: JWKS key %q: %w", k.Kid, err)
			}
			out[k.Kid] = pub
		}
	}
	if len(out) == 0 {
		return nil, errors.New("auth: JWKS has no RS256 or ES256 signing key")
	}
	return out, nil
}
