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
// on a request costs a map lookup. Writes go through one mutex (they are
// rare), and every change is announced to the functions registered with
// OnChange, which is how auth drops cached credentials on revocation or
// suspension before the next request.
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
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Store is the part of *storage.DB the catalog uses. It is an interface so
// that tests can count the reads the catalog makes.
type Store interface {
	Get(key []byte) ([]byte, error)
	NewBatch() *storage.Batch
	Apply(b *storage.Batch) error
	NewIter(lower, upper []byte) *storage.Iter
}

var _ Store = (*storage.DB)(nil)

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
}

// Catalog is the control-plane metadata store. Its methods are safe for
// concurrent use.
type Catalog struct {
	db  Store
	now func() time.Time

	// wmu serializes writes that read-modify-write records.
	wmu sync.Mutex

	mu        sync.RWMutex
	tenants   map[tenancy.TenantID]*Tenant // cached tenant records
	listeners []func(Change)
}

// Open returns a Catalog over db.
func Open(db Store, opts Options) *Catalog {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Catalog{db: db, now: opts.Now, tenants: make(map[tenancy.TenantID]*Tenant)}
}

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

// apply commits the batch built by fill.
func (c *Catalog) apply(fill func(b *storage.Batch)) error {
	b := c.db.NewBatch()
	defer b.Close()
	fill(b)
	if err := c.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "catalog write failed")
	}
	return nil
}

// get reads key, mapping absence to ErrNotFound.
func (c *Catalog) get(key []byte) ([]byte, error) {
	v, err := c.db.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: read: %w", err)
	}
	return v, nil
}

// scan calls f for every key in [lo, hi) until f returns false.
func (c *Catalog) scan(lo, hi []byte, f func(k, v []byte) bool) error {
	it := c.db.NewIter(lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		if !f(it.Key(), it.Value()) {
			break
		}
	}
	err := it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
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
