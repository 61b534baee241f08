package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// handle is a table as the resolver resolved it for one scope (the
// definition, the namespace that holds this scope's items, the isolation
// to keep) and the store those items live in. It is the only way
// operations reach item data. NB: it holds a reference to its store (a
// silo store is not closed while held): whoever opens a handle closes it
// once done with it and everything read through it (iterators, batches).
type handle struct {
	resolve.Target
	db      *storage.DB
	vals    *values // seals and opens the items (values.go)
	release releaser
	// gen is the placement generation the handle's store was chosen in;
	// untrack ends a request handle's count in it (movegate.go).
	gen     uint64
	untrack func()
}

// close gives back the handle's reference to its store. It is idempotent
// and safe on a nil handle.
func (h *handle) close() {
	if h == nil {
		return
	}
	if h.untrack != nil {
		h.untrack()
		h.untrack = nil
	}
	if h.release == nil {
		return
	}
	h.release()
	h.release = nil
}

// open resolves name for a data-plane operation of scope s (see
// resolve.Resolver.Open) and returns the handle through which it reads
// and writes items. The caller closes it. A table being restored in
// place for the scope's namespace is refused (ResourceInUse; rewind.go).
func (e *Engine) open(ctx context.Context, s tenancy.Scope, name string) (*handle, error) {
	tg, err := e.res.Open(ctx, s, name)
	if err != nil {
		return nil, err
	}
	if err := e.fenced(tg.Namespace, tg.Table); err != nil {
		return nil, err
	}
	return e.openTarget(ctx, s, tg)
}

// openLog is open for reading a table's change log, which a restore in
// place does not fence (its own changes are in it).
func (e *Engine) openLog(ctx context.Context, s tenancy.Scope, name string) (*handle, error) {
	tg, err := e.res.Open(ctx, s, name)
	if err != nil {
		return nil, err
	}
	return e.openTarget(ctx, s, tg)
}

func (e *Engine) openTarget(ctx context.Context, s tenancy.Scope, tg resolve.Target) (*handle, error) {
	// NB: counted before the store is chosen: a move deletes the data it
	// left only once the handles of earlier generations are closed.
	gen, untrack := e.trackHandle()
	db, rel, err := e.storeFor(ctx, s, tg.Table)
	if err != nil {
		untrack()
		return nil, err
	}
	return &handle{Target: tg, db: db, vals: e.vals, release: rel, gen: gen, untrack: untrack}, nil
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
