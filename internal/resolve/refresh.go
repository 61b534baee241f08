package resolve

import (
	"bytes"
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/schema"
)

// Refreshing definitions that other processes change (Options.MaxStale).
//
// Gateways over one DynamoDB-API engine share its definitions: DDL through
// gateway A must reach gateway B's resolver. A namespace's tables (and
// the shared tables) loaded more than MaxStale ago are loaded again by
// the first request that finds them so; requests meanwhile use the loaded
// ones. A table unchanged keeps its *schema.Table, so Targets and
// Current's answers stay the same values. A load that raced with this
// process's own Publish or Unpublish is discarded (the generation moved),
// so a gateway never forgets its own DDL. Staleness is thus bounded by
// MaxStale plus one load, with at most one Catalog load per namespace in
// use per MaxStale.

// sharedKey is the refresh-state key of the shared tables.
const sharedKey = ""

// A name not found, and ListTables, do not wait for MaxStale: a table
// created through another gateway is used through this one at once
// (clients create a table and use it, behind a load balancer that sends
// each request to any gateway), and one dropped elsewhere is no longer
// listed. They load the namespace (and the shared tables) again, one
// Catalog load each, concurrent ones included (force). NB: so a request
// for a table that does not exist costs one engine read per namespace on
// a gateway; it is admitted by the fair gates as any request.

// claim reports whether key's tables are stale and no refresh of them is
// running, and if so marks one running (the caller must release it).
func (r *Resolver) claim(key string) bool {
	r.mu.RLock()
	at := r.loadedAt[key]
	r.mu.RUnlock()
	if time.Since(at) < r.opts.MaxStale {
		return false
	}
	_, busy := r.refreshing.LoadOrStore(key, struct{}{})
	return !busy
}

// claimFor is claim, or with force a load in any case (release is then
// whether the caller marked one running and must release it).
func (r *Resolver) claimFor(key string, force bool) (load, release bool) {
	if !force {
		ok := r.claim(key)
		return ok, ok
	}
	_, busy := r.refreshing.LoadOrStore(key, struct{}{})
	return true, !busy
}

// refreshOwned returns namespace ns's tables, loading them again first if
// they are stale (cur is what is loaded now).
func (r *Resolver) refreshOwned(ctx context.Context, ns []byte, cur map[string]*schema.Table, force bool) (map[string]*schema.Table, error) {
	key := string(ns)
	load, release := r.claimFor(key, force)
	if !load {
		return cur, nil
	}
	if release {
		defer r.refreshing.Delete(key)
	}
	r.mu.RLock()
	gen := r.gen[key]
	r.mu.RUnlock()
	// NB: the tables' age counts from when the load started: a change
	// committed after that may be missing from them (catalog.Options.Settle
	// relies on it).
	start := time.Now()
	tables, err := r.cat.LoadOwned(ctx, ns)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.owned[key]
	if !ok || r.gen[key] != gen {
		return cur, nil // forgotten, or this process's DDL published meanwhile
	}
	m := r.merge(old, tables)
	r.owned[key] = m
	r.loadedAt[key] = start
	return m, nil
}

// refreshShared loads the shared tables again if they are stale.
func (r *Resolver) refreshShared(ctx context.Context) error { return r.refreshSharedFor(ctx, false) }

// refreshSharedFor is refreshShared; force loads them even if not stale.
func (r *Resolver) refreshSharedFor(ctx context.Context, force bool) error {
	if r.opts.MaxStale <= 0 {
		return nil
	}
	load, release := r.claimFor(sharedKey, force)
	if !load {
		return nil
	}
	if release {
		defer r.refreshing.Delete(sharedKey)
	}
	r.mu.RLock()
	gen := r.gen[sharedKey]
	r.mu.RUnlock()
	start := time.Now()
	tables, err := r.cat.LoadShared(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen[sharedKey] != gen {
		return nil
	}
	r.shared = r.merge(r.shared, tables)
	r.loadedAt[sharedKey] = start
	return nil
}

// merge returns the map of tables, keeping old's value of a table that
// did not change, and updates byID. REQUIRES: r.mu held for writing.
func (r *Resolver) merge(old map[string]*schema.Table, tables []*schema.Table) map[string]*schema.Table {
	m := make(map[string]*schema.Table, len(tables))
	for _, t := range tables {
		if o := old[t.Name]; o != nil && o.ID == t.ID && sameDefinition(o, t) {
			t = o
		}
		m[t.Name] = t
		r.byID[t.ID] = t
	}
	for name, o := range old {
		if n := m[name]; n == nil || n.ID != o.ID {
			delete(r.byID, o.ID) // dropped (or dropped and created again) elsewhere
		}
	}
	return m
}

func sameDefinition(a, b *schema.Table) bool {
	ea, err1 := schema.Encode(a)
	eb, err2 := schema.Encode(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}
