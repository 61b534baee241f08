package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// SnapshotLog calls each for every item of table in the scope's namespace
// as of one consistent snapshot, and returns that snapshot's position in
// the table's change log: every change at or before at is in it, and of
// the later ones exactly those whose cursors are in included (see
// changelog.Log.SnapshotAt). It is how a log consumer (an aggregate's
// rebuild) starts from the items without counting a change twice or
// missing one. The table's log must be retained (RetainLog) for the
// position to mean anything. Every change the snapshot holds is durable
// when each is first called (the store's WAL is synced after the
// snapshot is taken). Errors: as FollowLog, each's error, ctx's.
func (e *Engine) SnapshotLog(ctx context.Context, s tenancy.Scope, table string, each func(attr.Item) error) (at changelog.Cursor, included []changelog.Cursor, err error) {
	if err := check(ctx, s); err != nil {
		return at, nil, err
	}
	h, err := e.open(ctx, s, table)
	if err != nil {
		return at, nil, err
	}
	defer h.close() // NB: deferred first, so it runs after snap.Close
	snap, at, included, err := e.clog.SnapshotAt(h.db, h.Namespace, h.Table.ID)
	if err != nil {
		return at, nil, logError(err)
	}
	defer snap.Close()
	// NB: the snapshot may hold batches that are visible but not yet
	// synced (Pebble publishes a batch before its WAL fsync returns). A
	// caller builds durable state on what it reads here (an aggregate's
	// rebuild, a synced batch in the main store); for a silo table that
	// is another store than this one, whose fsync would not cover these
	// batches. So they are made durable first: a kill -9 can then never
	// keep the rebuild and lose a change it counted.
	if err := h.db.SyncWAL(); err != nil {
		return at, nil, apierr.Wrap(apierr.Internal, err, "syncing the change log")
	}
	lo := keyspace.Items(h.Namespace, h.Table.ID)
	hi := keyspace.PrefixEnd(lo)
	it := snap.NewIter(lo, hi)
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n&255 == 0 {
			if err := ctx.Err(); err != nil {
				return at, nil, err
			}
		}
		item, err := h.vals.decode(it.Key(), it.Value())
		if err != nil {
			return at, nil, err
		}
		if err := each(item); err != nil {
			return at, nil, err
		}
	}
	if err := it.Error(); err != nil {
		return at, nil, apierr.Wrap(apierr.Internal, err, "reading items")
	}
	return at, included, nil
}

// SharedTableNamespaces returns the namespaces (keyspace.Namespace of a
// tenant environment) that have held data of the shared table name, for
// the server's work on every tenant of a shared table (an aggregate the
// operator defines for all of them), resolved for scope s (the
// operator's: a tenant scope resolves its own table of that name first).
// Errors: ResourceNotFoundException (no shared table of that name visible
// to s).
func (e *Engine) SharedTableNamespaces(ctx context.Context, s tenancy.Scope, table string) ([][]byte, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	tg, err := e.res.Lookup(ctx, s, table)
	if err != nil {
		return nil, err
	}
	if !tg.Table.Shared() {
		return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found: Table: %s not found", apierr.Clip(table))
	}
	return e.namespacesOf(tg.Table.ID)
}
