package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// handle is a table as the resolver resolved it for one scope (the
// definition, the namespace that holds this scope's items, the isolation
// to keep) and the store those items live in. It is the only way
// operations reach item data.
type handle struct {
	resolve.Target
	db   *storage.DB
	vals *values // seals and opens the items (values.go)
}

// open resolves name for a data-plane operation of scope s (see
// resolve.Resolver.Open) and returns the handle through which it reads
// and writes items.
func (e *Engine) open(ctx context.Context, s tenancy.Scope, name string) (*handle, error) {
	tg, err := e.res.Open(ctx, s, name)
	if err != nil {
		return nil, err
	}
	db, err := e.storeFor(s, tg.Table)
	if err != nil {
		return nil, err
	}
	return &handle{Target: tg, db: db, vals: e.vals}, nil
}

// storeFor returns the store holding scope s's items of table t: the main
// store, or the tenant's own silo store for silo tables.
func (e *Engine) storeFor(s tenancy.Scope, t *schema.Table) (*storage.DB, error) {
	return e.storeForTenant(s.Tenant(), t)
}

// siloDir returns the directory of tenant's silo store for table id, or ""
// for in-memory silo stores.
func (e *Engine) siloDir(tenant tenancy.TenantID, id uint64) string {
	if e.opts.SiloDir == "" || e.opts.InMemory {
		return ""
	}
	return fmt.Sprintf("%s/%s/%d", e.opts.SiloDir, tenant, id)
}

// storeForTenant is storeFor without a scope. The drop of a table uses it
// with the table already unpublished; background work on a table it
// resolved earlier uses backgroundStore.
func (e *Engine) storeForTenant(tenant tenancy.TenantID, t *schema.Table) (*storage.DB, error) {
	return e.siloStore(tenant, t, false)
}

// errUnpublished vetoes opening the silo store of a table that is no
// longer published.
var errUnpublished = errors.New("engine: table no longer published")

// backgroundStore is storeForTenant for background work (TTL expiry,
// index backfill) on table t, resolved before the call: nil if t has been
// unpublished since (it is being or has been dropped), so that such work
// never re-creates the store and directory of a dropped silo table after
// the drop closed and removed them.
func (e *Engine) backgroundStore(tenant tenancy.TenantID, t *schema.Table) (*storage.DB, error) {
	db, err := e.siloStore(tenant, t, true)
	if errors.Is(err, errUnpublished) {
		return nil, nil
	}
	return db, err
}

func (e *Engine) siloStore(tenant tenancy.TenantID, t *schema.Table, published bool) (*storage.DB, error) {
	if t.Isolation != tenancy.Silo {
		return e.db, nil
	}
	key := siloKey(tenant, t.ID)
	e.mu.RLock()
	db, ok := e.silos[key]
	e.mu.RUnlock()
	if ok {
		return db, nil
	}
	dir := e.siloDir(tenant, t.ID)
	db, err := e.openSilo(key, dir, func() error {
		if e.isDropped(tenant) {
			// NB: DropTenant marks the tenant before it closes and
			// removes the silo stores, waiting for opens in flight, so
			// a straggler cannot re-create them.
			return resolve.NotFound(t.Name)
		}
		if published && e.res.ByID(t.ID) == nil {
			return errUnpublished
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db, nil
}

// getItem reads the item with key attributes key (nil if absent).
func (h *handle) getItem(key attr.Item) (attr.Item, error) {
	pk := itemKey(h.Table, h.Namespace, key)
	v, err := h.db.Get(pk)
	if err == storage.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading item")
	}
	return h.vals.decode(pk, v)
}
