package resolve

import (
	"bytes"
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The registry: the published definitions. Definitions are immutable
// values; a change publishes a new one (copy-on-write for a tenant
// environment's map), so readers hold what they resolved without a lock.

// ownedByNS returns (loading on first use) the tables owned by the tenant
// environment whose namespace is ns. The returned map is never modified
// (changes replace it), so it may be read without a lock.
func (r *Resolver) ownedByNS(ctx context.Context, ns []byte) (map[string]*schema.Table, error) {
	return r.ownedFor(ctx, ns, false)
}

// ownedFor is ownedByNS; with force (and Options.MaxStale) loaded tables
// are loaded again even if not stale (refresh.go).
func (r *Resolver) ownedFor(ctx context.Context, ns []byte, force bool) (map[string]*schema.Table, error) {
	r.mu.RLock()
	m, ok := r.owned[string(ns)]
	r.mu.RUnlock()
	if ok {
		if r.opts.MaxStale > 0 {
			return r.refreshOwned(ctx, ns, m, force)
		}
		return m, nil
	}
	r.mu.RLock()
	gen := r.gen[string(ns)]
	r.mu.RUnlock()
	start := time.Now() // NB: the age counts from the load's start (refresh.go)
	tables, err := r.cat.LoadOwned(ctx, ns)
	if err != nil {
		return nil, err
	}
	m = make(map[string]*schema.Table, len(tables))
	for _, t := range tables {
		m[t.Name] = t
	}
	r.mu.Lock()
	if cur, ok := r.owned[string(ns)]; ok {
		r.mu.Unlock()
		return cur, nil
	}
	if r.opts.MaxStale > 0 && r.gen[string(ns)] != gen {
		// NB: this process's DDL published meanwhile; the load may
		// predate it. Serve it once, cache nothing.
		r.mu.Unlock()
		return m, nil
	}
	r.owned[string(ns)] = m
	for _, t := range m {
		r.byID[t.ID] = t
	}
	if r.opts.MaxStale > 0 {
		r.loadedAt[string(ns)] = start
	}
	r.mu.Unlock()
	if r.opts.Loaded != nil && len(tables) > 0 {
		r.opts.Loaded(tables)
	}
	return m, nil
}

// Owned returns the tables owned by tenant's environment env, loading
// them on first use. The map must not be modified.
func (r *Resolver) Owned(ctx context.Context, tenant tenancy.TenantID, env string) (map[string]*schema.Table, error) {
	return r.ownedByNS(ctx, keyspace.Namespace(tenant, env))
}

// Shared returns the shared tables, in no particular order.
func (r *Resolver) Shared() []*schema.Table {
	_ = r.refreshShared(context.Background()) // a failed refresh keeps the loaded tables
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*schema.Table, 0, len(r.shared))
	for _, t := range r.shared {
		out = append(out, t)
	}
	return out
}

// ByID returns the published definition of table id, or nil if it is not
// loaded (a tenant table whose environment was not used yet) or not
// published (dropped).
func (r *Resolver) ByID(id uint64) *schema.Table {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byID[id]
}

// TableByID is ByID that first loads the tables of the tenant environment
// whose namespace is ns (background work finds tables by id and
// namespace); nil if the table is gone.
func (r *Resolver) TableByID(ctx context.Context, id uint64, ns []byte) (*schema.Table, error) {
	if t := r.ByID(id); t != nil {
		return t, nil
	}
	if _, err := r.ownedByNS(ctx, ns); err != nil {
		return nil, err
	}
	return r.ByID(id), nil
}

// Current returns the published definition of table t (which may have
// changed since t was resolved), or ResourceNotFound if t was deleted.
// Writers call it with their item locks held, so that DDL published
// before their locks is seen.
func (r *Resolver) Current(t *schema.Table) (*schema.Table, error) {
	r.mu.RLock()
	c := r.byID[t.ID]
	if c == nil {
		// A shared table published without the id index (tests do this).
		if sh := r.shared[t.Name]; sh != nil && sh.ID == t.ID {
			c = sh
		}
	}
	r.mu.RUnlock()
	if c == nil {
		return nil, NotFound(t.Name)
	}
	return c, nil
}

// Publish makes t the current definition of its table, after the backend
// persisted it. REQUIRES: DDL serialized by the backend.
func (r *Resolver) Publish(t *schema.Table) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[t.ID] = t
	if t.Shared() {
		r.gen[sharedKey]++
		r.shared[t.Name] = t
		return
	}
	ns := string(keyspace.Namespace(t.Owner, t.OwnerEnv))
	r.gen[ns]++
	cur, loaded := r.owned[ns]
	if !loaded {
		return // loaded from the catalog, with t, on first use
	}
	m := make(map[string]*schema.Table, len(cur)+1)
	for k, v := range cur {
		m[k] = v
	}
	m[t.Name] = t
	r.owned[ns] = m
}

// Unpublish removes table t, after the backend removed its definition.
// REQUIRES: DDL serialized by the backend.
func (r *Resolver) Unpublish(t *schema.Table) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byID, t.ID)
	if t.Shared() {
		r.gen[sharedKey]++
		if r.shared[t.Name] != nil && r.shared[t.Name].ID == t.ID {
			delete(r.shared, t.Name)
		}
		return
	}
	ns := string(keyspace.Namespace(t.Owner, t.OwnerEnv))
	r.gen[ns]++
	cur, loaded := r.owned[ns]
	if !loaded {
		return
	}
	m := make(map[string]*schema.Table, len(cur))
	for k, v := range cur {
		if v.ID != t.ID {
			m[k] = v
		}
	}
	r.owned[ns] = m
}

// ForgetTenant drops the cached tables of every environment of tenant
// (its deletion removes their definitions with the rest of its range).
func (r *Resolver) ForgetTenant(tenant tenancy.TenantID) {
	prefix := keyspace.Tenant(tenant)
	r.mu.Lock()
	defer r.mu.Unlock()
	for ns, tables := range r.owned {
		if !bytes.HasPrefix([]byte(ns), prefix) {
			continue
		}
		for _, t := range tables {
			delete(r.byID, t.ID)
		}
		delete(r.owned, ns)
		delete(r.loadedAt, ns)
		r.gen[ns]++
	}
}
