// Package catalog persists tenantdb's control-plane metadata: tenants,
// credentials, platform memberships and invitations.
//
// Everything lives in the one ordered store under the prefixes of package
// keyspace. A credential is found with exactly one Get of
// keyspace.Credential(tenant, id): the tenant is part of the access key id,
// so validating a key never scans. Everything a tenant owns sits under
// keyspace.Tenant(t), so deleting a tenant is one range deletion that other
// tenants do not notice. The only records outside a tenant's range are its
// slug (the list of all tenants) and the forward membership entries, which
// are keyed by platform user so that "which tenants am I on?" is one range
// read of that user's own entries.
//
// Catalog keeps tenants in memory once read, so checking a tenant's status
// on a request costs a map lookup. Every change made through this Catalog
// is announced to the functions registered with OnChange, which is how
// auth drops cached credentials on revocation or suspension before the
// next request. When several gateways share one store (a DynamoDB-API
// engine), changes made by another gateway are seen after at most
// Options.MaxStale, for which a cached tenant is kept.
//
// NB: no read-modify-write relies on a lock of this process. Each one
// reads, writes a kv.Batch conditioned on what it read, and reads again
// on kv.ErrConflict, so that writers in several processes over one
// engine stay correct (two gateways creating one slug: one wins).
//
// The catalog stores credential secrets only in sealed form; sealing is
// package auth's business (it holds the server key).
//
// NB: the methods the admin plane calls on one tenant's records (its
// credentials, status, invitations, memberships, deletion) take the
// tenancy.Scope the guard admitted, not a tenant id, so that a handler can
// only name the tenant the guard let it act on. The lookups that resolve a
// request to a tenant (Tenant, TenantBySlug, Credential) take ids.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Store is where the catalog's records live: kv.Local (the embedded
// server's store) or enginekv.Store (a DynamoDB-API engine shared by
// gateways).
type Store interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

var _ Store = (*kv.Local)(nil)

// maxRetries bounds the rounds of a read-modify-write that keeps losing
// to concurrent writers.
const maxRetries = 20

// ErrNotFound is in the chain of every error for an absent tenant,
// credential, membership or invitation (test with errors.Is).
var ErrNotFound = errors.New("catalog: not found")

// Change names what a write changed: one credential (KeyID set) or a whole
// tenant (KeyID empty: status change or deletion).
type Change struct {
	Tenant tenancy.TenantID
	KeyID  string
}

// Options configure a Catalog.
type Options struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxStale is how long a cached tenant record is used before it is
	// read again; 0 keeps it until this Catalog changes it (one process
	// owns the store). Gateways sharing an engine set it.
	MaxStale time.Duration
	// Settle, if positive, is how long a change that narrows access
	// (revoking or expiring a credential, suspending or deleting a
	// tenant) waits after its commit before it returns, and how long a
	// deleted tenant's record stays (status deleting) after the rest of
	// its records are gone, so that its id and slug cannot be taken again
	// sooner. Gateways sharing an engine set it to at least every
	// gateway's MaxStale: a cached copy was read before the commit, so it
	// has expired when the change returns — when a revocation returns,
	// every gateway refuses the key (internal/remote/DESIGN.md, "Fleet
	// caches"). 0 (one process owns the store) never waits.
	Settle time.Duration
	// Alone, if set, reports whether no other process can hold a cached
	// copy of the control plane (a gateway with no other live gateway):
	// then a revocation, an expiry or a suspension returns without
	// Settle, since this process's own caches hear of it at once
	// (OnChange). A tenant's deletion always settles: what other packages
	// cache of it (data keys, namespaces' incarnations) is not told.
	Alone func(context.Context) bool
}

// Catalog is the control-plane metadata store. Its methods are safe for
// concurrent use.
type Catalog struct {
	db       Store
	now      func() time.Time
	maxStale time.Duration
	settleD  time.Duration
	alone    func(context.Context) bool

	mu        sync.RWMutex
	tenants   map[tenancy.TenantID]cachedTenant
	listeners []func(Change)
}

// cachedTenant is a tenant record and when it was read (monotonic).
type cachedTenant struct {
	t  *Tenant
	at time.Time
}

// Open returns a Catalog over db.
func Open(db Store, opts Options) *Catalog {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Catalog{db: db, now: opts.Now, maxStale: opts.MaxStale, settleD: opts.Settle, alone: opts.Alone, tenants: make(map[tenancy.TenantID]cachedTenant)}
}

// settle waits Options.Settle from since (when the narrowing write's
// commit was answered), or until ctx ends.
func (c *Catalog) settle(ctx context.Context, since time.Time) error {
	if c.settleD <= 0 {
		return nil
	}
	d := c.settleD - time.Since(since)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settleNarrowed is settle for a narrowing that this process's caches
// hear of at once (Options.Alone).
func (c *Catalog) settleNarrowed(ctx context.Context, since time.Time) error {
	if c.settleD > 0 && c.alone != nil && c.alone(ctx) {
		return nil
	}
	return c.settle(ctx, since)
}

// MaxStale returns Options.MaxStale.
func (c *Catalog) MaxStale() time.Duration { return c.maxStale }

// OnChange registers f to be called, synchronously and after the write is
// durable, for every change of a credential or tenant. f must not call back
// into the Catalog's writing methods.
func (c *Catalog) OnChange(f func(Change)) {
	c.mu.Lock()
	c.listeners = append(c.listeners, f)
	c.mu.Unlock()
}

func (c *Catalog) notify(ch Change) {
	c.mu.RLock()
	ls := c.listeners
	c.mu.RUnlock()
	for _, f := range ls {
		f(ch)
	}
}

// apply commits the batch built by fill. A failed condition returns an
// error wrapping kv.ErrConflict, for the caller to read again.
func (c *Catalog) apply(ctx context.Context, fill func(b *kv.Batch)) error {
	var b kv.Batch
	fill(&b)
	err := c.db.Apply(ctx, &b)
	if errors.Is(err, kv.ErrConflict) {
		return err
	}
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "catalog write failed")
	}
	return nil
}

// contended is the error of a read-modify-write that lost maxRetries
// times to concurrent writers.
func contended() error {
	return apierr.New(apierr.Conflict, "the record is being changed concurrently; try again")
}

// get reads key, mapping absence to ErrNotFound.
func (c *Catalog) get(ctx context.Context, key []byte) ([]byte, error) {
	v, err := c.db.Get(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: read: %w", err)
	}
	return v, nil
}

// scan calls f for every key in [lo, hi) until f returns false.
func (c *Catalog) scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error {
	if err := c.db.Scan(ctx, lo, hi, f); err != nil {
		return fmt.Errorf("catalog: scan: %w", err)
	}
	return nil
}

func notFound(what string) error {
	return apierr.Wrap(apierr.NotFound, ErrNotFound, "%s not found", what)
}

// scoped returns the tenant of s. Errors: Internal for a scope no guard
// issued.
func scoped(s tenancy.Scope) (tenancy.TenantID, error) {
	if !s.Valid() {
		return tenancy.TenantID{}, apierr.New(apierr.Internal, "catalog: no scope")
	}
	return s.Tenant(), nil
}
