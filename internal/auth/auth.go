// Package auth turns credentials into principals: it verifies SigV4
// signatures and bearer keys against tenant-bound API keys, issues and
// validates temporary (session) credentials, seals secrets at rest,
// bootstraps the operator credential, and verifies platform users' OIDC
// JWTs.
//
// The tenant of a request comes only from its credential. An access key id
// names its tenant (see key.go), so the credential is found with one direct
// catalog lookup and never a scan. SigV4 is an HMAC scheme, so the server
// needs the secret itself: secrets are stored sealed with AES-256-GCM under
// a key derived from the server key, bound to their tenant and key id, and
// never in plaintext or hashed only.
//
// Hot path: after a credential's first use the Authenticator keeps its
// principal, secret and the derived signing key of the current (date,
// region, service) in memory, so a request costs one map lookup and the
// HMACs of SigV4 itself. The catalog announces every revocation, expiry
// change, suspension and deletion; the Authenticator drops the affected
// entries before the write returns, so the next request sees the change.
package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Options configure an Authenticator.
type Options struct {
	// Service is the SigV4 service name requests must be scoped to;
	// "" means "dynamodb". Any region is accepted.
	Service string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// LastUsedInterval bounds how often a key's last-used time is written;
	// 0 means one minute.
	LastUsedInterval time.Duration
	// Denied, if set, is called when a request presents an identifiable
	// credential that is refused (bad signature or secret, revoked, expired,
	// suspended tenant): the audit hook, with audit.Log.Denied's signature.
	// p has the credential's tenant, env and key id; action is
	// "auth:sigv4" or "auth:bearer"; reason says why.
	Denied func(ctx context.Context, p tenancy.Principal, action, reason string)
	// Logger receives background errors; nil means slog.Default().
	Logger *slog.Logger
	// MaxStale is how long a cached credential is used before it is read
	// again from the catalog; 0 keeps it until the catalog announces a
	// change (one process owns the store). Gateways sharing a DynamoDB-API
	// engine set it: a revocation, expiry change or suspension made
	// through another gateway is then seen within MaxStale (plus the
	// catalog's own MaxStale for the tenant's status).
	MaxStale time.Duration
}

// Authenticator authenticates requests. Its methods are safe for concurrent
// use.
type Authenticator struct {
	cat  *catalog.Catalog
	keys atomic.Pointer[keyPair] // the server key (and, while it rotates, the previous one)
	opts Options
	log  *slog.Logger

	// cache maps an access key id to its *entry.
	cache sync.Map
	// mu orders cache invalidation against the storing of freshly loaded
	// entries: an entry loaded before an invalidation began is not stored
	// (see load).
	mu    sync.Mutex
	gen   uint64 // incremented by every invalidation; under mu
	count int    // entries stored since the last sweep; under mu

	touching atomic.Int32 // last-used writes in flight
	wg       sync.WaitGroup
}

// entry is a cached credential: the principal it authenticates, its
// secret, and the last derived signing key. A credential that is refused
// for a lasting reason (revoked, suspended tenant) is cached with err set.
type entry struct {
	p       tenancy.Principal
	secret  string
	expires time.Time // zero: never
	err     error     // non-nil: every use fails with it
	token   string    // session token, for tk_ entries
	self    keyRef    // for API keys: the credential itself
	issuer  keyRef    // for sessions: the credential that minted it
	sk      atomic.Pointer[signingKey]
	touched atomic.Int64 // unix nanos of the last last-used write
	loaded  time.Time    // when it was read (monotonic), for Options.MaxStale
}

type keyRef struct {
	tenant tenancy.TenantID
	id     string
}

type signingKey struct {
	date, region, service string
	key                   []byte
}

// New returns an Authenticator over cat that seals with key. It registers
// with cat to hear of changes.
func New(cat *catalog.Catalog, key *ServerKey, opts Options) *Authenticator {
	if opts.Service == "" {
		opts.Service = "dynamodb"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LastUsedInterval <= 0 {
		opts.LastUsedInterval = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	a := &Authenticator{cat: cat, opts: opts, log: opts.Logger.With("component", "auth")}
	a.keys.Store(&keyPair{cur: key})
	cat.OnChange(a.invalidate)
	return a
}

// Close waits for background last-used writes.
func (a *Authenticator) Close() { a.wg.Wait() }

// Authenticate verifies r's SigV4 signature and returns the principal of
// its credential. Errors (all *apierr.Error):
//
//   - MissingAuthenticationToken, IncompleteSignature: from sigv4.Parse;
//   - UnrecognizedClient "The security token included in the request is
//     invalid.": unknown or malformed access key id, a session token that
//     does not open or does not belong to the key, a revoked key;
//   - InvalidSignature: wrong signature, clock skew, wrong service scope;
//   - ExpiredToken: an expired key or session token;
//   - TenantSuspended: the credential's tenant is suspended or being deleted.
func (a *Authenticator) Authenticate(ctx context.Context, r *sigv4.Request) (tenancy.Principal, error) {
	auth, err := sigv4.Parse(r)
	if err != nil {
		return tenancy.Principal{}, err
	}
	if auth.Service != a.opts.Service {
		return tenancy.Principal{}, apierr.New(apierr.InvalidSignature,
			"Credential should be scoped to correct service: '%s'.", a.opts.Service)
	}
	e, err := a.lookup(ctx, auth.AccessKeyID, auth.SecurityToken)
	if err != nil {
		return tenancy.Principal{}, err
	}
	now := a.opts.Now()
	if err := a.usable(ctx, e, now, actSigV4); err != nil {
		return tenancy.Principal{}, err
	}
	sk := e.sk.Load()
	if sk == nil || sk.date != auth.Date || sk.region != auth.Region || sk.service != auth.Service {
		sk = &signingKey{date: auth.Date, region: auth.Region, service: auth.Service,
			key: sigv4.SigningKey(e.secret, auth.Date, auth.Region, auth.Service)}
		e.sk.Store(sk)
	}
	if err := sigv4.Verify(r, auth, sk.key, now); err != nil {
		if apierr.Is(err, apierr.InvalidSignature) {
			a.denied(ctx, e.p, actSigV4, "bad signature")
		}
		return tenancy.Principal{}, err
	}
	a.touch(e, now)
	return e.p, nil
}

// AuthenticateBearer authenticates a full API key (the admin API's
// "Authorization: Bearer <key>"), comparing the secret in constant time.
// Temporary credentials cannot be used as bearer tokens. Errors are those
// of Authenticate.
func (a *Authenticator) AuthenticateBearer(ctx context.Context, key string) (tenancy.Principal, error) {
	k, err := ParseKey(key)
	if err != nil {
		return tenancy.Principal{}, err
	}
	e, err := a.lookup(ctx, k.AccessKeyID(), "")
	if err != nil {
		return tenancy.Principal{}, err
	}
	now := a.opts.Now()
	if err := a.usable(ctx, e, now, actBearer); err != nil {
		return tenancy.Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(k.Secret), []byte(e.secret)) != 1 {
		a.denied(ctx, e.p, actBearer, "bad secret")
		return tenancy.Principal{}, invalidToken()
	}
	a.touch(e, now)
	return e.p, nil
}

// Actions reported to the Denied hook.
const (
	actSigV4  = "auth:sigv4"
	actBearer = "auth:bearer"
)

// usable checks an entry's lasting error and expiry.
func (a *Authenticator) usable(ctx context.Context, e *entry, now time.Time, action string) error {
	if e.err != nil {
		a.denied(ctx, e.p, action, apierr.Message(e.err))
		return e.err
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		a.denied(ctx, e.p, action, "expired credential")
		if e.token != "" {
			return apierr.New(apierr.ExpiredToken, "The security token included in the request is expired")
		}
		return apierr.New(apierr.ExpiredToken, "The security token included in the request is expired: the access key expired")
	}
	return nil
}

func (a *Authenticator) denied(ctx context.Context, p tenancy.Principal, action, reason string) {
	if a.opts.Denied != nil {
		a.opts.Denied(ctx, p, action, reason)
	}
}

// lookup returns the cache entry of akid, loading it on a miss. token is
// the request's X-Amz-Security-Token.
func (a *Authenticator) lookup(ctx context.Context, akid, token string) (*entry, error) {
	if v, ok := a.cache.Load(akid); ok {
		e := v.(*entry)
		// NB: with MaxStale (gateways), an entry refused for its
		// tenant's status is not reused: a resume through another gateway
		// is seen at once (the catalog reads a tenant that is not active
		// again too). Its age counts from when its read started.
		if subtle.ConstantTimeCompare([]byte(e.token), []byte(token)) == 1 &&
			(a.opts.MaxStale <= 0 || (time.Since(e.loaded) < a.opts.MaxStale && !apierr.Is(e.err, apierr.TenantSuspended))) {
			return e, nil
		}
		// A different token under the same id: fall through and validate
		// it from scratch (it is refused unless it opens and names akid).
	}
	k, session, err := ParseAccessKeyID(akid)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	gen := a.gen
	a.mu.Unlock()
	start := time.Now()
	var e *entry
	if session {
		e, err = a.loadSession(ctx, k, akid, token)
	} else {
		if token != "" {
			return nil, invalidToken()
		}
		e, err = a.loadKey(ctx, k)
	}
	if err != nil {
		return nil, err
	}
	if a.opts.MaxStale > 0 {
		e.loaded = start
		if old, ok := a.cache.Load(akid); ok && old.(*entry).token == e.token {
			e.touched.Store(old.(*entry).touched.Load()) // keep rate-limiting last-used writes
		}
	}
	a.store(akid, e, gen)
	return e, nil
}

// store caches e unless an invalidation happened since gen was read.
func (a *Authenticator) store(akid string, e *entry, gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen != gen {
		return
	}
	a.cache.Store(akid, e)
	a.count++
	if a.count >= 4096 {
		a.count = 0
		now := a.opts.Now()
		a.cache.Range(func(k, v any) bool {
			if e := v.(*entry); e.token != "" && !e.expires.IsZero() && now.After(e.expires) {
				a.cache.Delete(k)
			}
			return true
		})
	}
}

// loadKey reads an API key's credential (one storage Get) and its tenant
// (from the catalog's memory after the first time) and unseals its secret.
func (a *Authenticator) loadKey(ctx context.Context, k APIKey) (*entry, error) {
	cr, err := a.cat.Credential(ctx, k.Tenant, k.ID)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, invalidToken()
	}
	if err != nil {
		return nil, err
	}
	if cr.Env != k.Env {
		return nil, invalidToken()
	}
	secret, err := a.openSecret(cr.Sealed, sealAAD(k.Tenant, k.ID))
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "The credential store could not be read")
	}
	e := &entry{
		p:       tenancy.Principal{Tenant: k.Tenant, Env: k.Env, Role: cr.Role, KeyID: k.AccessKeyID()},
		secret:  string(secret),
		expires: cr.Expires,
		self:    keyRef{k.Tenant, k.ID},
	}
	if cr.Role == tenancy.RoleOperator {
		e.p.Env = ""
	}
	if !cr.Revoked.IsZero() {
		e.err = invalidToken()
		return e, nil
	}
	if k.Tenant != keyspace.Platform {
		e.err, err = a.tenantError(ctx, k.Tenant)
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

// tenantError returns the lasting error for a tenant that may not be used,
// or nil for an active one.
func (a *Authenticator) tenantError(ctx context.Context, t tenancy.TenantID) (error, error) {
	ten, err := a.cat.Tenant(ctx, t)
	if errors.Is(err, catalog.ErrNotFound) {
		return invalidToken(), nil
	}
	if err != nil {
		return nil, err
	}
	switch ten.Status {
	case catalog.Active:
		return nil, nil
	case catalog.Suspended:
		return apierr.New(apierr.TenantSuspended, "The tenant of this credential is suspended; its requests are refused until the operator resumes it"), nil
	default:
		return apierr.New(apierr.TenantSuspended, "The tenant of this credential is being deleted"), nil
	}
}

// invalidate drops the cache entries a catalog change affects: for a
// tenant-wide change every entry of the tenant, for a credential change the
// credential's entry and the sessions it minted.
func (a *Authenticator) invalidate(ch catalog.Change) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	a.cache.Range(func(k, v any) bool {
		e := v.(*entry)
		var hit bool
		if ch.KeyID == "" {
			hit = e.p.Tenant == ch.Tenant
		} else {
			ref := keyRef{ch.Tenant, ch.KeyID}
			hit = e.self == ref || e.issuer == ref
		}
		if hit {
			a.cache.Delete(k)
		}
		return true
	})
}

// touch records the key's last use at most once per LastUsedInterval, in
// the background.
func (a *Authenticator) touch(e *entry, now time.Time) {
	if e.token != "" {
		return
	}
	last := e.touched.Load()
	if now.UnixNano()-last < int64(a.opts.LastUsedInterval) || !e.touched.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if a.touching.Add(1) > 8 { // shed: the next interval will retry
		a.touching.Add(-1)
		e.touched.Store(last)
		return
	}
	k := e.self
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.touching.Add(-1)
		if err := a.cat.TouchCredential(k.tenant, k.id, now); err != nil {
			a.log.Warn("auth: recording last use failed", "key", e.p.KeyID, "err", err)
		}
	}()
}

func sealAAD(t tenancy.TenantID, id string) []byte {
	b := make([]byte, 0, 5+16+len(id))
	b = append(b, "cred:"...)
	b = append(b, t[:]...)
	return append(b, id...)
}

// AuthenticateOperator checks that bearer is the operator's key; it guards
// the operational endpoints (/metrics, /debug/pprof/). Tenant keys get
// AccessDenied.
func (a *Authenticator) AuthenticateOperator(ctx context.Context, bearer string) error {
	p, err := a.AuthenticateBearer(ctx, bearer)
	if err != nil {
		return err
	}
	if !p.IsOperator() {
		return apierr.New(apierr.AccessDenied, "Only the operator may read this endpoint")
	}
	return nil
}
