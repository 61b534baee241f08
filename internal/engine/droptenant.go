package engine

import (
	"slices"

	"bytes"
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// DropTenant forgets everything the engine keeps about the scope's tenant
// outside the tenant's own key range: its entries in the table/namespace registry,
// its cached tenant-owned tables, and its silo store (closed and removed
// from disk). Afterwards no write of the tenant commits, even of a request
// admitted before the deletion began. The caller (tenant deletion in the
// catalog) deletes the tenant's key range itself. It is idempotent.
func (e *Engine) DropTenant(ctx context.Context, s tenancy.Scope) error {
	t := s.Tenant()
	if !s.Valid() || t.IsZero() {
		return apierr.New(apierr.Validation, "no tenant to drop")
	}
	prefix := keyspace.Tenant(t)

	// Requests admitted before the tenant's deletion may still be running:
	// mark the tenant, then wait out every write that holds stripes. Later
	// writes find the mark under their stripes and fail (see locked), so
	// nothing lands in the tenant's range after DropTenant returns.
	e.dropped.Store(t, struct{}{})
	e.anyDropped.Store(true)
	e.locks.barrier()

	pairs, err := e.registryPairs()
	if err != nil {
		return err
	}
	b := e.db.NewBatch()
	defer b.Close()
	for _, p := range pairs {
		if bytes.HasPrefix(p.ns, prefix) {
			b.Delete(p.key)
			e.registered.Delete(string(p.key))
		}
	}
	if b.Len() > 0 {
		if err := e.db.Apply(b); err != nil {
			return apierr.Wrap(apierr.Internal, err, "dropping tenant registry entries")
		}
	}
	if err := e.dropRewinds(prefix); err != nil {
		return err
	}
	// The tenant's change records are in its range, which the caller
	// deletes; the log forgets the entries that list them for trimming.
	if err := e.clog.DropTenant(e.db, t); err != nil {
		return apierr.Wrap(apierr.Internal, err, "dropping tenant change log entries")
	}

	if err := e.releaseTenantLogs(t); err != nil {
		return err
	}
	if err := e.forgetPlacements(t); err != nil {
		return err
	}

	// A store of the tenant being opened when it was marked is closed
	// below once open; none can start opening after the mark.
	e.res.ForgetTenant(t)
	e.dropSilo(t)
	if err := e.removeSiloData(t); err != nil {
		return apierr.Wrap(apierr.Internal, err, "removing silo store of dropped tenant")
	}
	return ctx.Err()
}

// ReviveTenant undoes DropTenant's refusal of writes for the scope's
// tenant. The tenant lifecycle calls it when a tenant is created again
// with a deleted tenant's id (the seeding path), after the deletion has
// completed.
func (e *Engine) ReviveTenant(s tenancy.Scope) { e.dropped.Delete(s.Tenant()) }

// releaseTenantLogs ends every hold tenant t's consumers have on the
// change log of shared tables (its own tables go with it).
func (e *Engine) releaseTenantLogs(t tenancy.TenantID) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	for _, tb := range e.res.Shared() {
		keep := slices.DeleteFunc(slices.Clone(tb.LogConsumers), func(c schema.LogConsumer) bool { return c.Tenant == t })
		if len(keep) == len(tb.LogConsumers) {
			continue
		}
		c := tb.Clone()
		c.LogConsumers = keep
		if len(keep) == 0 {
			c.LogConsumers, c.HiddenStream = nil, 0
		}
		if err := e.publishLog(tb, c); err != nil {
			return err
		}
	}
	return nil
}
