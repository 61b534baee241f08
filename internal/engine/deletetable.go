package engine

import (
	"context"
	"encoding/json"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DeleteTable deletes a table and all its data: for a shared table, every
// tenant's items, index entries and counters. The definition and a drop
// record go in one batch; the data is then removed by range deletions in
// every namespace that ever held some (see DESIGN.md). Only the table's
// owner may delete it (the operator for shared tables). Errors:
// ResourceNotFoundException, ValidationException (deletion protection),
// AccessDeniedException.
func (e *Engine) DeleteTable(ctx context.Context, s tenancy.Scope, in *wire.DeleteTableInput) (*wire.DeleteTableOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	tg, err := e.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	t := tg.Table
	if err := e.res.CheckManage(s, t); err != nil {
		return nil, err
	}
	if t.DeletionProtection {
		return nil, apierr.New(apierr.Validation, "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.")
	}
	st, err := e.statsFor(ctx, tg)
	if err != nil {
		return nil, err
	}
	rec := dropRecord{Table: t.ID, Isolate: t.Isolation}
	v, err := json.Marshal(rec)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "encoding drop record")
	}
	b := e.db.NewBatch()
	defer b.Close()
	b.Delete(tableDefKey(t))
	b.Set(dropKey(t.ID, 0), v)
	if err := e.db.Apply(b); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "deleting table")
	}
	e.res.Unpublish(t)
	// NB: after the barrier no write of t can commit: writers re-read the
	// definition with their stripes held and now find it gone.
	e.locks.barrier()
	if streamEnabled(t) {
		// NB: the stream's records are not in the table's ranges: they stay
		// readable until retention trims them, as in DynamoDB.
		e.endStream(t.ID, t.LatestStream)
	}
	if t.HiddenStream != 0 {
		e.endStream(t.ID, t.HiddenStream)
	}
	if err := e.drop(rec); err != nil {
		// The record stays; the next start finishes the drop.
		e.log.Error("engine: dropping table data", "table", t.Name, "err", err)
	}
	return &wire.DeleteTableOutput{TableDescription: e.describe(t, st).Deleting()}, nil
}
