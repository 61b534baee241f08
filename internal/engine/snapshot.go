package engine

import (
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Snapshot is a consistent read view of some of a scope's tables, for
// exports: every table in the main store is read from one storage
// snapshot, taken once all tables are resolved; a silo table from one
// snapshot of its own store, taken at the same moment. Close it.
type Snapshot struct {
	e      *Engine
	tables []snapTable
	snaps  map[*storage.DB]*storage.Snapshot
}

type snapTable struct {
	h    *handle
	snap *storage.Snapshot
}

// Snapshot resolves the tables named (all tables the scope sees when
// names is empty), as a Scan would, and opens one storage snapshot over
// their items in the scope's namespace. Errors: those of Scan's table
// resolution (ResourceNotFound, AccessDenied).
func (e *Engine) Snapshot(ctx context.Context, s tenancy.Scope, names []string) (*Snapshot, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		if s.Tenant().IsZero() {
			return nil, apierr.New(apierr.AccessDenied, "The operator credential has no access to table data; use a tenant credential")
		}
		var err error
		if names, err = e.res.Visible(ctx, s); err != nil {
			return nil, err
		}
	}
	sn := &Snapshot{e: e, snaps: map[*storage.DB]*storage.Snapshot{}}
	for _, name := range names {
		h, err := e.open(ctx, s, name)
		if err != nil {
			sn.Close()
			return nil, err
		}
		sn.tables = append(sn.tables, snapTable{h: h})
	}
	// NB: all snapshots are taken after every table is resolved, back to
	// back, so the main store's tables are read as of one instant.
	for i := range sn.tables {
		db := sn.tables[i].h.db
		if sn.snaps[db] == nil {
			sn.snaps[db] = db.NewSnapshot()
		}
		sn.tables[i].snap = sn.snaps[db]
	}
	return sn, nil
}

// Tables returns the tables of the snapshot, in the order named.
func (sn *Snapshot) Tables() []*schema.Table {
	out := make([]*schema.Table, len(sn.tables))
	for i, t := range sn.tables {
		out[i] = t.h.Table
	}
	return out
}

// Items calls fn with every item of table i (of Tables) in the scope's
// namespace, in key order, as of the snapshot. fn's error stops it and is
// returned.
func (sn *Snapshot) Items(ctx context.Context, i int, fn func(attr.Item) error) error {
	t := sn.tables[i]
	lo := keyspace.Items(t.h.Namespace, t.h.Table.ID)
	it := t.snap.NewIter(lo, keyspace.PrefixEnd(lo))
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item, err := t.h.vals.decode(it.Key(), it.Value())
		if err != nil {
			return err
		}
		if err := fn(item); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading items")
	}
	return nil
}

// Close releases the snapshots.
func (sn *Snapshot) Close() error {
	var first error
	for _, s := range sn.snaps {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	sn.snaps = nil
	// NB: after the snapshots: a handle keeps its silo store open.
	for _, t := range sn.tables {
		t.h.close()
	}
	return first
}

// RawItems calls fn with the stored bytes of every item of table i, as
// Items reads them but without decoding: the raw scan rate of the store,
// the baseline of export benchmarks. value is valid only during the call.
func (sn *Snapshot) RawItems(ctx context.Context, i int, fn func(value []byte) error) error {
	t := sn.tables[i]
	lo := keyspace.Items(t.h.Namespace, t.h.Table.ID)
	it := t.snap.NewIter(lo, keyspace.PrefixEnd(lo))
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// TableKeys returns the names of the key attributes (partition key, then
// sort key if any) of table name as scope s resolves it for data access,
// without DescribeTable's statistics. Errors: those of Scan's table
// resolution.
func (e *Engine) TableKeys(ctx context.Context, s tenancy.Scope, name string) ([]string, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	tg, err := e.res.Open(ctx, s, name)
	if err != nil {
		return nil, err
	}
	return tg.Table.KeyNames(), nil
}

// logCoverageMargin is how long after a change log stream's creation its
// coverage is trusted: the stream exists before the definition naming it
// is published and every writer has read it (a DDL barrier, milliseconds).
const logCoverageMargin = time.Second

// LogCoverage returns since when table's change log, as scope s resolves
// it, holds every change of s's view with its old image, without a gap, up
// to now, counting only what s may know of: the table's own DynamoDB
// stream (a chain of visible streams whose declared view has old images,
// within the log's default retention) and the log consumers of s's own
// tenant environment (its point-in-time recovery, its subscriptions), each
// within its retention. ok is false when neither covers now.
//
// NB: hidden streams and the retention other tenants' consumers ask for are
// not counted. They exist because of another tenant's point-in-time
// recovery or subscription on a shared table; if they widened s's coverage,
// whether s's export of a past time worked would tell s that someone else
// keeps the table's log.
func (e *Engine) LogCoverage(ctx context.Context, s tenancy.Scope, table string) (since time.Time, ok bool, err error) {
	if err := check(ctx, s); err != nil {
		return time.Time{}, false, err
	}
	tg, err := e.res.Open(ctx, s, table)
	if err != nil {
		return time.Time{}, false, err
	}
	return e.logCoverage(s, tg.Table)
}

// logCoverage is LogCoverage of table t for scope s.
func (e *Engine) logCoverage(s tenancy.Scope, t *schema.Table) (since time.Time, ok bool, err error) {
	now := e.opts.Now()
	for _, c := range t.LogConsumers {
		if c.Tenant != s.Tenant() || c.Env != s.Env() || c.Since.IsZero() {
			continue
		}
		start := c.Since.Add(logCoverageMargin)
		if r := c.Retention; r > 0 {
			if w := now.Add(-r); w.After(start) {
				start = w
			}
		} else if w := now.Add(-e.clog.Retention()); w.After(start) {
			start = w
		}
		if !ok || start.Before(since) {
			since, ok = start, true
		}
	}
	streams, err := e.clog.Streams(t.ID)
	if err != nil {
		return time.Time{}, false, apierr.Wrap(apierr.Internal, err, "listing change log streams")
	}
	n := len(streams)
	if n == 0 || !streams[n-1].Enabled() || streams[n-1].Hidden || !streams[n-1].View.WantsOld() {
		return since, ok, nil
	}
	start := streams[n-1].Created()
	for i := n - 2; i >= 0; i-- {
		p := streams[i]
		// NB: a switch creates the new stream before it disables the old
		// one, so an unbroken chain overlaps.
		if p.Hidden || !p.View.WantsOld() || p.Disabled.Before(start) {
			break
		}
		start = p.Created()
	}
	start = start.Add(logCoverageMargin)
	if w := now.Add(-e.clog.Retention()); w.After(start) {
		start = w
	}
	if !ok || start.Before(since) {
		since, ok = start, true
	}
	return since, ok, nil
}
