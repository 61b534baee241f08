package auth

import (
	"crypto/rand"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// API key format.
//
//	access key id   sk_<env>_<tenant>_<id>
//	secret          <secret>
//	full key        sk_<env>_<tenant>_<id>_<secret>
//
// where
//
//	env     [a-z][a-z0-9]{0,15}     the data namespace ("live", "test", ...)
//	tenant  [0-9a-f]{32}            the tenant id (all zeros: the platform)
//	id      [a-z0-9]{8,16}          unique within the tenant; 12 when generated
//	secret  [A-Za-z0-9]{32,128}     40 when generated (about 238 random bits)
//
// The access key id is the SigV4 access key id and is not secret; the
// secret is the SigV4 secret access key. The full key is the one string a
// user keeps (and the admin API's bearer token); it splits unambiguously at
// its fourth underscore because no part contains one.
//
// Operator keys have env "op" and the all-zero tenant; no tenant key may use
// env "op". Temporary credentials (see session.go) use the prefix "tk_"
// instead of "sk_" and the same layout.
const (
	KeyPrefix     = "sk_"
	SessionPrefix = "tk_"
	// OperatorEnv is the env segment of operator keys.
	OperatorEnv = "op"

	idLen     = 12
	secretLen = 40

	maxEnvLen    = 16
	minIDLen     = 8
	maxIDLen     = 16
	minSecretLen = 32
	maxSecretLen = 128
)

// APIKey is a parsed API key or access key id.
type APIKey struct {
	Env    string
	Tenant tenancy.TenantID
	ID     string
	Secret string // empty when parsed from an access key id
}

// AccessKeyID returns sk_<env>_<tenant>_<id>.
func (k APIKey) AccessKeyID() string {
	return KeyPrefix + k.Env + "_" + k.Tenant.String() + "_" + k.ID
}

// String returns the full key, sk_<env>_<tenant>_<id>_<secret>.
func (k APIKey) String() string { return k.AccessKeyID() + "_" + k.Secret }

// IsOperator reports whether k is an operator key.
func (k APIKey) IsOperator() bool { return k.Env == OperatorEnv && k.Tenant == keyspace.Platform }

// invalidToken is AWS's answer for an unknown access key id.
func invalidToken() error {
	return apierr.New(apierr.UnrecognizedClient, "The security token included in the request is invalid.")
}

// ValidEnv reports whether env is a valid environment name for tenant keys.
func ValidEnv(env string) bool {
	if env == "" || len(env) > maxEnvLen || env == OperatorEnv || !(env[0] >= 'a' && env[0] <= 'z') {
		return false
	}
	for i := 1; i < len(env); i++ {
		if !isLowerAlnum(env[i]) {
			return false
		}
	}
	return true
}

// ParseAccessKeyID parses sk_<env>_<tenant>_<id> (or the tk_ form of a
// temporary credential, reported by session). Errors: UnrecognizedClient
// with AWS's message, for any malformed id.
func ParseAccessKeyID(akid string) (k APIKey, session bool, err error) {
	var rest string
	switch {
	case strings.HasPrefix(akid, KeyPrefix):
		rest = akid[len(KeyPrefix):]
	case strings.HasPrefix(akid, SessionPrefix):
		rest, session = akid[len(SessionPrefix):], true
	default:
		return APIKey{}, false, invalidToken()
	}
	k, rest, ok := parseParts(rest)
	if !ok || rest != "" {
		return APIKey{}, false, invalidToken()
	}
	return k, session, nil
}

// ParseKey parses a full key sk_<env>_<tenant>_<id>_<secret>. Errors:
// UnrecognizedClient for anything malformed (the message never echoes the
// input).
func ParseKey(full string) (APIKey, error) {
	rest, ok := strings.CutPrefix(full, KeyPrefix)
	if !ok {
		return APIKey{}, invalidToken()
	}
	k, rest, ok := parseParts(rest)
	if !ok || len(rest) < 1+minSecretLen || rest[0] != '_' {
		return APIKey{}, invalidToken()
	}
	secret := rest[1:]
	if len(secret) > maxSecretLen {
		return APIKey{}, invalidToken()
	}
	for i := 0; i < len(secret); i++ {
		if !isAlnum(secret[i]) {
			return APIKey{}, invalidToken()
		}
	}
	k.Secret = secret
	return k, nil
}

// parseParts parses <env>_<tenant>_<id> and returns what follows the id.
func parseParts(s string) (APIKey, string, bool) {
	env, s, ok := strings.Cut(s, "_")
	if !ok || (env != OperatorEnv && !ValidEnv(env)) {
		return APIKey{}, "", false
	}
	if len(s) < 33 || s[32] != '_' {
		return APIKey{}, "", false
	}
	hex := s[:32]
	for i := 0; i < 32; i++ {
		if c := hex[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return APIKey{}, "", false
		}
	}
	t, err := tenancy.ParseTenantID(hex)
	if err != nil {
		return APIKey{}, "", false
	}
	if (env == OperatorEnv) != (t == keyspace.Platform) {
		return APIKey{}, "", false
	}
	s = s[33:]
	n := 0
	for n < len(s) && n <= maxIDLen && isLowerAlnum(s[n]) {
		n++
	}
	if n < minIDLen || n > maxIDLen || (n < len(s) && s[n] != '_') {
		return APIKey{}, "", false
	}
	return APIKey{Env: env, Tenant: t, ID: s[:n]}, s[n:], true
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || c >= 'A' && c <= 'Z' }

const (
	lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	alnum      = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// randomString returns n characters drawn uniformly from alphabet (at most
// 256 characters) with crypto/rand, by rejection sampling.
func randomString(n int, alphabet string) string {
	limit := 256 - 256%len(alphabet)
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		rand.Read(buf[:])
		for _, b := range buf {
			if int(b) < limit {
				out = append(out, alphabet[int(b)%len(alphabet)])
				if len(out) == n {
					break
				}
			}
		}
	}
	return string(out)
}

// NewAPIKey returns a fresh key for tenant t in env with a random id and
// secret. It does not store it.
func NewAPIKey(t tenancy.TenantID, env string) APIKey {
	return APIKey{Env: env, Tenant: t, ID: randomString(idLen, lowerAlnum), Secret: randomString(secretLen, alnum)}
}
