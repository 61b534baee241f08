package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Temporary credentials (token vending).
//
// A session is {AccessKeyId: tk_<env>_<tenant>_<id>, SecretAccessKey,
// SessionToken, Expiration}. The session token is self-contained: it is
// "tdb1." followed by the base64url of an AES-256-GCM sealing (under a key
// derived from the server key, with the access key id as additional data)
// of the session's tenant, env, role, policy, expiry, secret and issuer.
// Validating it needs no storage read; the only lookups are the issuer's
// credential and the tenant's status, both in memory after the first use,
// so revoking the issuing key or suspending the tenant ends its sessions
// from the next request.
const (
	// DefaultSessionDuration is a session's lifetime when none is asked.
	DefaultSessionDuration = 15 * time.Minute
	// MinSessionDuration and MaxSessionDuration bound what may be asked.
	MinSessionDuration = time.Minute
	MaxSessionDuration = 12 * time.Hour

	tokenPrefix   = "tdb1."
	maxTokenLen   = 8 << 10
	sessionIDLen  = 16
	maxPolicyList = 100
)

// SessionRequest asks for temporary credentials.
type SessionRequest struct {
	Tenant   tenancy.TenantID
	Role     tenancy.Role    // read, app or admin
	Env      string          // "" means "live"
	Policy   *tenancy.Policy // optional narrowing to tables and actions
	Duration time.Duration   // 0 means DefaultSessionDuration
	// Issuer is the caller. It must be the operator or an admin key of
	// Tenant and Env; sessions cannot mint sessions.
	Issuer tenancy.Principal
}

// Session is a set of temporary credentials.
type Session struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Expiration      time.Time
	Tenant          tenancy.TenantID
	Role            tenancy.Role
	Env             string
	Policy          *tenancy.Policy
}

type tokenBody struct {
	Tenant  string          `json:"t"`
	Env     string          `json:"e"`
	Role    string          `json:"r"`
	Policy  *tenancy.Policy `json:"p,omitempty"`
	Expires int64           `json:"x"` // unix seconds
	Secret  string          `json:"s"`
	Issuer  string          `json:"i"` // issuing access key id
}

// IssueSession mints temporary credentials. Errors: Validation for a bad
// role, env, duration or policy; AccessDenied if the issuer may not mint
// for this tenant, env or role; NotFound or TenantSuspended for the tenant.
func (a *Authenticator) IssueSession(ctx context.Context, req SessionRequest) (Session, error) {
	if req.Env == "" {
		req.Env = "live"
	}
	if !ValidEnv(req.Env) {
		return Session{}, apierr.Validationf("env must be 1 to %d lower-case letters and digits, starting with a letter", maxEnvLen)
	}
	if req.Role != tenancy.RoleRead && req.Role != tenancy.RoleApp && req.Role != tenancy.RoleAdmin {
		return Session{}, apierr.Validationf("role must be read, app or admin")
	}
	if req.Duration == 0 {
		req.Duration = DefaultSessionDuration
	}
	if req.Duration < MinSessionDuration || req.Duration > MaxSessionDuration {
		return Session{}, apierr.Validationf("duration_seconds must be between %d and %d", int(MinSessionDuration.Seconds()), int(MaxSessionDuration.Seconds()))
	}
	if p := req.Policy; p != nil {
		if len(p.Tables) > maxPolicyList || len(p.Actions) > maxPolicyList {
			return Session{}, apierr.Validationf("a policy lists at most %d tables and %d actions", maxPolicyList, maxPolicyList)
		}
		for _, act := range p.Actions {
			if err := checkPolicyAction(act); err != nil {
				return Session{}, err
			}
		}
		if len(p.Tables) == 0 && len(p.Actions) == 0 {
			req.Policy = nil
		}
	}
	iss := req.Issuer
	ik, issSession, err := ParseAccessKeyID(iss.KeyID)
	switch {
	case err != nil || issSession:
		return Session{}, apierr.New(apierr.AccessDenied, "temporary credentials cannot mint temporary credentials")
	case iss.IsOperator():
	case iss.Role == tenancy.RoleAdmin && iss.Tenant == req.Tenant && iss.Env == req.Env:
	default:
		return Session{}, apierr.New(apierr.AccessDenied, "only the operator or an admin key of the tenant and environment can mint temporary credentials")
	}
	if terr, err := a.tenantError(ctx, req.Tenant); err != nil {
		return Session{}, err
	} else if terr != nil {
		if apierr.Is(terr, apierr.UnrecognizedClient) {
			return Session{}, apierr.Wrap(apierr.NotFound, catalog.ErrNotFound, "tenant not found")
		}
		return Session{}, terr
	}

	exp := a.opts.Now().Add(req.Duration).Truncate(time.Second).UTC()
	k := APIKey{Env: req.Env, Tenant: req.Tenant, ID: randomString(sessionIDLen, lowerAlnum), Secret: randomString(secretLen, alnum)}
	akid := SessionPrefix + req.Env + "_" + req.Tenant.String() + "_" + k.ID
	body, _ := json.Marshal(tokenBody{
		Tenant: req.Tenant.String(), Env: req.Env, Role: req.Role.String(), Policy: req.Policy,
		Expires: exp.Unix(), Secret: k.Secret, Issuer: ik.AccessKeyID(),
	})
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(seal(a.keys.Load().cur.token, body, []byte(akid)))
	return Session{
		AccessKeyID: akid, SecretAccessKey: k.Secret, SessionToken: token, Expiration: exp,
		Tenant: req.Tenant, Role: req.Role, Env: req.Env, Policy: req.Policy,
	}, nil
}

// loadSession opens a session token presented with access key id akid.
func (a *Authenticator) loadSession(ctx context.Context, k APIKey, akid, token string) (*entry, error) {
	if token == "" || len(token) > maxTokenLen || !strings.HasPrefix(token, tokenPrefix) {
		return nil, invalidToken()
	}
	sealed, err := base64.RawURLEncoding.DecodeString(token[len(tokenPrefix):])
	if err != nil {
		return nil, invalidToken()
	}
	plain, err := a.openToken(sealed, []byte(akid))
	if err != nil {
		return nil, invalidToken()
	}
	var b tokenBody
	if err := json.Unmarshal(plain, &b); err != nil {
		return nil, invalidToken()
	}
	role, ok := tenancy.ParseRole(b.Role)
	if !ok || b.Tenant != k.Tenant.String() || b.Env != k.Env {
		return nil, invalidToken()
	}
	e := &entry{
		p:       tenancy.Principal{Tenant: k.Tenant, Env: k.Env, Role: role, KeyID: akid, Policy: b.Policy},
		secret:  b.Secret,
		expires: time.Unix(b.Expires, 0),
		token:   token,
	}
	// The issuer must still be usable: revoking it ends its sessions.
	ik, _, err := ParseAccessKeyID(b.Issuer)
	if err != nil {
		return nil, invalidToken()
	}
	e.issuer = keyRef{ik.Tenant, ik.ID}
	issuer, err := a.lookup(ctx, b.Issuer, "")
	switch {
	case apierr.Is(err, apierr.UnrecognizedClient):
		e.err = invalidToken()
		return e, nil
	case err != nil:
		return nil, err
	case issuer.err != nil && !apierr.Is(issuer.err, apierr.TenantSuspended):
		e.err = invalidToken()
		return e, nil
	}
	if !issuer.expires.IsZero() && issuer.expires.Before(e.expires) {
		e.expires = issuer.expires // a session never outlives its issuer
	}
	if ik.Tenant != keyspace.Platform && ik.Tenant != k.Tenant {
		return nil, invalidToken()
	}
	e.err, err = a.tenantError(ctx, k.Tenant)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// checkPolicyAction validates one action of a session policy: an
// operation's name (with or without "dynamodb:"), a PartiQL action
// (PartiQLSelect, ...), or "*". The operations that carry PartiQL are
// authorized by their statements' actions, as in IAM, so naming them is
// refused rather than silently matching nothing.
func checkPolicyAction(act string) error {
	name := strings.TrimPrefix(act, "dynamodb:")
	switch {
	case act == "*" || name == "*" || tenancy.IsPartiQLAction(name):
		return nil
	case tenancy.CarriesPartiQL(name):
		return apierr.Validationf("action %q in policy: PartiQL statements are authorized by dynamodb:PartiQLSelect, PartiQLInsert, PartiQLUpdate and PartiQLDelete; list those", act)
	}
	if _, ok := dynamo.Lookup(name); !ok {
		return apierr.Validationf("unknown action %q in policy", act)
	}
	return nil
}
