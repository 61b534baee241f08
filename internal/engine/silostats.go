package engine

import (
	"context"
	"errors"
	"os"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// siloStores returns tenant t's stores of the silo tables it may hold data
// in: every shared silo table, and the silo tables it owns in environments
// envs. Stores are opened if they exist on disk and never created: a
// tenant that never wrote to a silo table has no store for it.
// TenantStorage reads their statistics counters.
func (e *Engine) siloStores(ctx context.Context, t tenancy.TenantID, envs []string) ([]*storage.DB, error) {
	if e.isDropped(t) {
		return nil, nil // NB: do not load a dropped tenant's tables again
	}
	var cands []*schema.Table
	for _, tb := range e.res.Shared() {
		if tb.Isolation == tenancy.Silo {
			cands = append(cands, tb)
		}
	}
	for _, env := range envs {
		owned, err := e.res.Owned(ctx, t, env)
		if err != nil {
			return nil, err
		}
		for _, tb := range owned {
			if tb.Isolation == tenancy.Silo {
				cands = append(cands, tb)
			}
		}
	}
	var out []*storage.DB
	for _, tb := range cands {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		db, err := e.existingSilo(t, tb)
		if err != nil {
			return nil, err
		}
		if db != nil {
			out = append(out, db)
		}
	}
	return out, nil
}

// existingSilo returns tenant's store of silo table tb if it is open or on
// disk, opening it in the latter case; nil if there is none or tb's table
// is no longer published (it is being dropped: the drop closes the stores
// it finds in e.silos after unpublishing and waits for opens in flight, so
// a store opened here while the table is published is closed by it).
func (e *Engine) existingSilo(tenant tenancy.TenantID, tb *schema.Table) (*storage.DB, error) {
	key := siloKey(tenant, tb.ID)
	dir := e.siloDir(tenant, tb.ID)
	errNone := errors.New("no store")
	db, err := e.openSilo(key, dir, func() error {
		if cur := e.res.ByID(tb.ID); cur == nil || cur.Isolation != tenancy.Silo || e.isDropped(tenant) {
			return errNone
		}
		if dir == "" {
			return errNone // in-memory stores exist only while open
		}
		if _, err := os.Stat(dir); err != nil {
			if os.IsNotExist(err) {
				return errNone
			}
			return apierr.Wrap(apierr.Internal, err, "looking for a silo store")
		}
		return nil
	})
	if err == errNone {
		return nil, nil
	}
	return db, err
}
