package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Resolution of what a DynamoDB Streams request names (a stream ARN, a
// shard id, a shard iterator) for a scope. A stream is found through its
// table, resolved by name for the scope like any data-plane request: a
// tenant finds only streams of tables it can see, and reads only its own
// namespace's records of them. Whatever does not resolve for the scope is
// "not found", the same whether or not it exists for someone else.

// streamNotFound is the error for a stream ARN that does not resolve.
func streamNotFound(arn string) *apierr.Error {
	return apierr.New(apierr.ResourceNotFound, "Requested resource not found: Stream: %s not found", apierr.Clip(arn))
}

// openStream resolves a stream ARN for scope s: the handle of its table
// (which must still be the table the stream belongs to) and the stream.
// The caller closes the handle.
func (e *Engine) openStream(ctx context.Context, s tenancy.Scope, arn string) (*handle, changelog.Stream, error) {
	if arn == "" {
		return nil, changelog.Stream{}, apierr.Validationf("1 validation error detected: Value null at 'streamArn' failed to satisfy constraint: Member must not be null")
	}
	if len(arn) < 37 || len(arn) > 1024 {
		return nil, changelog.Stream{}, apierr.Validationf("1 validation error detected: Value '%s' at 'streamArn' failed to satisfy constraint: Member must have length between 37 and 1024", apierr.Clip(arn))
	}
	a, ok := changelog.ParseStreamARN(arn)
	if !ok {
		return nil, changelog.Stream{}, apierr.Validationf("Invalid StreamArn: %s", apierr.Clip(arn))
	}
	if a.Region != e.opts.Region || a.Account != e.opts.Account {
		return nil, changelog.Stream{}, streamNotFound(arn)
	}
	var live uint64 // the id of the live table of that name, if any
	h, err := e.openLog(ctx, s, a.Table)
	switch {
	case err == nil:
		live = h.Table.ID
		st, err := e.clog.Stream(h.Table.ID, a.Stream)
		if err == nil && e.streamShown(st) {
			return h, st, nil
		}
		h.close()
		if err != nil && !errors.Is(err, changelog.ErrStreamNotFound) {
			return nil, changelog.Stream{}, apierr.Wrap(apierr.Internal, err, "reading stream")
		}
	case !apierr.Is(err, apierr.ResourceNotFound):
		return nil, changelog.Stream{}, err
	}
	// The stream of a deleted table (or of an earlier table of that name)
	// stays readable until retention removes it, as in DynamoDB: the
	// stream's descriptor says which namespaces may read it.
	found, err := e.clog.FindStreams(a.Table, a.Stream, resolve.Namespace(s))
	if err != nil {
		return nil, changelog.Stream{}, apierr.Wrap(apierr.Internal, err, "reading stream")
	}
	for _, st := range found {
		if st.Table != live && e.streamShown(st) {
			return e.goneTableHandle(s, st), st, nil
		}
	}
	// NB: every well-formed stream ARN this scope cannot read is answered
	// "not found" and audited as a denial in the caller's own log, whether
	// or not the stream exists for another tenant or environment: auditing
	// only the ones that exist elsewhere would let the caller's admin learn
	// from its own audit log that someone else has such a stream.
	nf := streamNotFound(arn)
	nf.Denial = true
	return nil, changelog.Stream{}, nf
}

// goneTableHandle is the handle through which scope s reads its records
// of stream st of a deleted table: they are in the main store (a silo
// table's drop moves them there), or still in the tenant's silo store
// while the drop that moves them is under way (the drop holds the store
// open meanwhile). The caller closes the handle.
func (e *Engine) goneTableHandle(s tenancy.Scope, st changelog.Stream) *handle {
	t := &schema.Table{ID: st.Table, Name: st.TableName, Status: "DELETED"}
	h := &handle{Target: resolve.Target{Table: t, Namespace: resolve.Namespace(s), Scope: s}, db: e.db, vals: e.vals}
	if sl := e.holdIfOpen(s.Tenant()); sl != nil {
		lo, hi := keyspace.ChangeTableRange(h.Namespace, st.Table)
		it := sl.db.NewIter(lo, hi)
		there := it.First()
		it.Close()
		if there {
			h.db, h.release = sl.db, func() { e.releaseSilo(sl, false) }
		} else {
			e.releaseSilo(sl, false)
		}
	}
	return h
}

// streamKeys returns the key schema of stream st's table, as recorded
// when the stream was created.
func streamKeys(st changelog.Stream, h *handle) []wire.KeySchemaElement {
	var ks []wire.KeySchemaElement
	if json.Unmarshal(st.Meta, &ks) == nil && len(ks) > 0 {
		return ks
	}
	return keySchema(h.Table.Hash, h.Table.Range)
}

// streamARN returns the ARN of stream st of the table named name.
func (e *Engine) streamARN(name string, st changelog.Stream) string {
	return changelog.FormatStreamARN(e.opts.Region, e.opts.Account, name, st)
}

// logError maps an error of the change log to the client's.
func logError(err error) error {
	switch {
	case errors.Is(err, changelog.ErrTrimmed):
		return apierr.New(apierr.TrimmedDataAccess, "The operation attempted to read past the oldest stream record in a shard.")
	case errors.Is(err, changelog.ErrExpiredIterator):
		return apierr.New(apierr.ExpiredIterator, "Iterator expired. The iterator was created more than 15 minutes ago.")
	case errors.Is(err, changelog.ErrBadIterator):
		return apierr.Validationf("Invalid ShardIterator")
	case errors.Is(err, changelog.ErrForeignIterator):
		// NB: AccessDenied, so the server audits the cross-tenant attempt.
		return apierr.New(apierr.AccessDenied, "Not authorized to use this shard iterator")
	}
	return apierr.Wrap(apierr.Internal, err, "reading the change log")
}

// streamStatus is a stream's StreamStatus.
func streamStatus(st changelog.Stream) string {
	if st.Enabled() {
		return "ENABLED"
	}
	return "DISABLED"
}

// pageLimit validates an optional Limit of at most max (default max).
func pageLimit(l *int64, max int64) (int, error) {
	if l == nil {
		return int(max), nil
	}
	if *l < 1 {
		return 0, apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *l)
	}
	if *l > max {
		return 0, apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to %d", *l, max)
	}
	return int(*l), nil
}
