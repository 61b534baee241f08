package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// NewKey describes an API key to create.
type NewKey struct {
	Tenant    tenancy.TenantID
	Role      tenancy.Role // read, app or admin
	Env       string       // "" means "live"
	Expires   time.Time    // zero: never
	CreatedBy string       // the creator's access key id, for the record
}

// IssuedKey is a newly created key: the stored credential and the key
// itself, whose secret is shown to the caller once and never again.
type IssuedKey struct {
	Credential catalog.Credential
	Key        APIKey
}

// CreateKey creates, seals and stores a tenant API key. Errors: Validation
// for a bad role, env or expiry; NotFound for an unknown tenant.
func (a *Authenticator) CreateKey(ctx context.Context, nk NewKey) (IssuedKey, error) {
	if nk.Env == "" {
		nk.Env = "live"
	}
	if !ValidEnv(nk.Env) {
		return IssuedKey{}, apierr.Validationf("env must be 1 to %d lower-case letters and digits, starting with a letter (and not %q)", maxEnvLen, OperatorEnv)
	}
	if nk.Role != tenancy.RoleRead && nk.Role != tenancy.RoleApp && nk.Role != tenancy.RoleAdmin {
		return IssuedKey{}, apierr.Validationf("role must be read, app or admin")
	}
	if nk.Tenant == keyspace.Platform {
		return IssuedKey{}, apierr.Validationf("tenant id must not be zero")
	}
	if !nk.Expires.IsZero() && !nk.Expires.After(a.opts.Now()) {
		return IssuedKey{}, apierr.Validationf("expires_at must be in the future")
	}
	return a.issue(ctx, NewAPIKey(nk.Tenant, nk.Env), nk.Role, nk.Expires, nk.CreatedBy)
}

// issue seals and stores k, retrying with a fresh id on an id collision.
func (a *Authenticator) issue(ctx context.Context, k APIKey, role tenancy.Role, expires time.Time, by string) (IssuedKey, error) {
	for attempt := 0; ; attempt++ {
		key := a.keys.Load().cur
		cr := catalog.Credential{
			Tenant: k.Tenant, ID: k.ID, AccessKeyID: k.AccessKeyID(), Role: role, Env: k.Env,
			Sealed:  seal(key.seal, []byte(k.Secret), sealAAD(k.Tenant, k.ID)),
			Created: a.opts.Now().UTC(), CreatedBy: by,
		}
		if !expires.IsZero() {
			cr.Expires = expires.UTC()
		}
		err := a.cat.PutCredential(ctx, cr, keyspace.RetiredServerKey(key.Check()))
		if apierr.Is(err, apierr.Conflict) && attempt < 3 {
			k.ID = randomString(idLen, lowerAlnum)
			continue
		}
		if errors.Is(err, catalog.ErrSealRetired) {
			if a.keys.Load().cur != key && attempt < 3 {
				continue // sealed just before this gateway switched keys: seal again
			}
			return IssuedKey{}, apierr.New(apierr.Internal, "this gateway's server key was retired by a server key rotation of the fleet while it did not follow (stalled); restart it with the fleet's current key")
		}
		if err != nil {
			return IssuedKey{}, err
		}
		return IssuedKey{Credential: cr, Key: k}, nil
	}
}

// RotateKey issues a new key with the same tenant, role, env and expiry as
// the scope's tenant's key id, and retires the old one: revoked at once
// when grace is 0, else set to expire after grace. Errors: NotFound;
// Validation if the old key is already revoked.
func (a *Authenticator) RotateKey(ctx context.Context, s tenancy.Scope, id string, grace time.Duration, by string) (IssuedKey, error) {
	if !s.Valid() {
		return IssuedKey{}, apierr.New(apierr.Internal, "auth: no scope")
	}
	t := s.Tenant()
	old, err := a.cat.Credential(ctx, t, id)
	if err != nil {
		return IssuedKey{}, err
	}
	if !old.Revoked.IsZero() {
		return IssuedKey{}, apierr.Validationf("key %s is revoked", old.AccessKeyID)
	}
	nk, err := a.issue(ctx, NewAPIKey(t, old.Env), old.Role, old.Expires, by)
	if err != nil {
		return IssuedKey{}, err
	}
	if grace <= 0 {
		_, err = a.cat.RevokeCredential(ctx, s, id)
	} else {
		_, err = a.cat.ExpireCredential(ctx, s, id, a.opts.Now().Add(grace))
	}
	if err != nil {
		return IssuedKey{}, err
	}
	return nk, nil
}

// OperatorCredentialsFile is the operator credential's file name inside
// the data directory.
const OperatorCredentialsFile = "operator-credentials"

// OperatorProfile is the profile name in that file.
const OperatorProfile = "tenantdb-operator"

// OperatorKeyEnv names the environment variable that may give the operator
// key (a full sk_op_... key).
const OperatorKeyEnv = "TENANTDB_OPERATOR_KEY"

// EnsureOperator makes sure an operator credential exists. With given (a
// full operator key, from TENANTDB_OPERATOR_KEY or a flag) it stores that
// key if absent and returns it. Without, it creates a fresh operator key
// if no usable one exists and returns it with created set; if one exists
// it returns a zero key. Errors: Validation for a given key that is not an
// operator key or clashes with a stored one.
func (a *Authenticator) EnsureOperator(ctx context.Context, given string) (k APIKey, created bool, err error) {
	if given = strings.TrimSpace(given); given != "" {
		k, err := ParseKey(given)
		if err != nil || !k.IsOperator() {
			return APIKey{}, false, apierr.Validationf("the operator key must have the form sk_op_%s_<id>_<secret>", keyspace.Platform)
		}
		cr, err := a.cat.Credential(ctx, keyspace.Platform, k.ID)
		if err == nil {
			secret, err := a.openSecret(cr.Sealed, sealAAD(keyspace.Platform, k.ID))
			if err != nil {
				return APIKey{}, false, fmt.Errorf("auth: stored operator credential: %w", err)
			}
			if string(secret) != k.Secret || !cr.Usable(a.opts.Now()) {
				return APIKey{}, false, apierr.Validationf("a different or revoked operator key with id %s is already stored", k.ID)
			}
			return k, false, nil
		}
		if !errors.Is(err, catalog.ErrNotFound) {
			return APIKey{}, false, err
		}
		_, err = a.issue(ctx, k, tenancy.RoleOperator, time.Time{}, "bootstrap")
		if apierr.Is(err, apierr.Conflict) {
			// Another gateway stored the same key at the same time.
			return a.EnsureOperator(ctx, given)
		}
		return k, err == nil, err
	}
	mark, err := a.cat.BootstrapMark(ctx) // read first: what the write is conditioned on
	if err != nil {
		return APIKey{}, false, err
	}
	ok, err := a.cat.HasCredentials(ctx, keyspace.Platform, tenancy.RoleOperator)
	if err != nil || ok {
		return APIKey{}, false, err
	}
	// NB: the credential is stored with the bootstrap mark in one
	// conditional write: of several gateways starting on an empty engine
	// one creates the operator, the others find it.
	k = NewAPIKey(keyspace.Platform, OperatorEnv)
	cr := catalog.Credential{
		Tenant: k.Tenant, ID: k.ID, AccessKeyID: k.AccessKeyID(), Role: tenancy.RoleOperator, Env: k.Env,
		Sealed:  seal(a.keys.Load().cur.seal, []byte(k.Secret), sealAAD(k.Tenant, k.ID)),
		Created: a.opts.Now().UTC(), CreatedBy: "bootstrap",
	}
	created, err = a.cat.PutBootstrapCredential(ctx, cr, mark)
	if err != nil || !created {
		return APIKey{}, false, err
	}
	return k, true, nil
}

// CreateOperatorKey creates an additional operator key (for rotation of the
// operator credential).
func (a *Authenticator) CreateOperatorKey(ctx context.Context, by string) (IssuedKey, error) {
	return a.issue(ctx, NewAPIKey(keyspace.Platform, OperatorEnv), tenancy.RoleOperator, time.Time{}, by)
}

// WriteCredentialsFile writes k to path, mode 0600, in the AWS shared
// credentials format under [profile], so that
//
//	AWS_SHARED_CREDENTIALS_FILE=path aws --profile profile ...
//
// works. The file also carries the full key (tenantdb_key), which the
// tenantdb CLI sends as a bearer token. endpoint is the server's URL as a
// client reaches it (e.g. http://127.0.0.1:8000, the default when ""),
// named in the file's usage comment.
func WriteCredentialsFile(path, profile string, k APIKey, region, endpoint string) error {
	if region == "" {
		region = "us-east-1"
	}
	if endpoint == "" {
		endpoint = "http://127.0.0.1:8000"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# tenantdb credential, created %s. Keep this file secret (mode 0600).\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "# Use: AWS_SHARED_CREDENTIALS_FILE=%s aws --profile %s --region %s --endpoint-url %s dynamodb list-tables\n", path, profile, region, endpoint)
	fmt.Fprintf(&b, "[%s]\n", profile)
	fmt.Fprintf(&b, "aws_access_key_id = %s\n", k.AccessKeyID())
	fmt.Fprintf(&b, "aws_secret_access_key = %s\n", k.Secret)
	fmt.Fprintf(&b, "region = %s\n", region)
	fmt.Fprintf(&b, "tenantdb_key = %s\n", k.String())
	if err := writeFileAtomic(path, []byte(b.String()), 0o600, false); err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	return nil
}

// ReadCredentialsFile reads the key of profile ("" means the first
// profile) from an AWS shared credentials file written by
// WriteCredentialsFile or by hand (aws_access_key_id and
// aws_secret_access_key suffice).
func ReadCredentialsFile(path, profile string) (APIKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return APIKey{}, fmt.Errorf("auth: read credentials: %w", err)
	}
	var cur string
	var found bool
	vals := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' && line[len(line)-1] == ']' {
			if found {
				break
			}
			cur = strings.TrimSpace(line[1 : len(line)-1])
			cur = strings.TrimPrefix(cur, "profile ")
			found = profile == "" || cur == profile
			continue
		}
		if !found {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok {
			vals[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if !found {
		return APIKey{}, fmt.Errorf("auth: %s has no profile %q", path, profile)
	}
	if full := vals["tenantdb_key"]; full != "" {
		k, err := ParseKey(full)
		if err != nil {
			return APIKey{}, fmt.Errorf("auth: %s: tenantdb_key is not a valid key", path)
		}
		return k, nil
	}
	akid, secret := vals["aws_access_key_id"], vals["aws_secret_access_key"]
	k, err := ParseKey(akid + "_" + secret)
	if err != nil {
		return APIKey{}, fmt.Errorf("auth: %s: profile %q does not hold a tenantdb key", path, cur)
	}
	return k, nil
}
