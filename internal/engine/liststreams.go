package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// ListStreams lists the streams of the tables scope s can see (or of the
// one table named), by table name and then age, paged by
// ExclusiveStartStreamArn. Streams of a table stay listed after they are
// disabled, and after the table is deleted, until retention removes them
// (as DynamoDB keeps them 24 hours). Errors: ValidationException,
// ResourceNotFoundException (TableName, neither a table nor one with
// streams still readable), AccessDeniedException (the operator, which has
// no access to table data).
func (e *Engine) ListStreams(ctx context.Context, s tenancy.Scope, in *wire.ListStreamsInput) (*wire.ListStreamsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 100)
	if err != nil {
		return nil, err
	}
	names := []string{in.TableName}
	if in.TableName == "" {
		if names, err = e.res.Visible(ctx, s); err != nil {
			return nil, err
		}
	}
	type listed struct {
		name string
		st   changelog.Stream
	}
	var all []listed
	live := map[string]uint64{} // name -> id of the live table
	var openErr error
	for _, name := range names {
		h, err := e.openLog(ctx, s, name)
		defer h.close()
		if err != nil {
			if apierr.Is(err, apierr.ResourceNotFound) {
				openErr = err // the named table may have been deleted
				continue
			}
			return nil, err
		}
		live[name] = h.Table.ID
		streams, err := e.clog.Streams(h.Table.ID)
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "listing streams")
		}
		for _, st := range streams {
			if !e.streamShown(st) {
				continue // hidden (the log's own) or long disabled
			}
			all = append(all, listed{name, st})
		}
	}
	// The streams of deleted tables (and of earlier tables of a name),
	// from the index of the shared tables' and the caller's own.
	var gone []changelog.Stream
	if !s.Tenant().IsZero() { // NB: the operator has no access to table data
		if gone, err = e.clog.VisibleStreams(resolve.Namespace(s)); err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "listing streams")
		}
	}
	for _, st := range gone {
		if in.TableName != "" && st.TableName != in.TableName || live[st.TableName] == st.Table ||
			!resolve.MayReadGone(s, st.Owner, st.TableName) || !e.streamShown(st) {
			continue
		}
		all = append(all, listed{st.TableName, st})
	}
	if len(all) == 0 && in.TableName != "" && openErr != nil {
		return nil, openErr
	}
	slices.SortStableFunc(all, func(a, b listed) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		switch {
		case a.st.ID < b.st.ID:
			return -1
		case a.st.ID > b.st.ID:
			return 1
		}
		return 0
	})
	sums := make([]wire.StreamSummary, len(all))
	for i, l := range all {
		sums[i] = wire.StreamSummary{StreamArn: e.streamARN(l.name, l.st), StreamLabel: l.st.Label(), TableName: l.name}
	}
	return PageStreams(sums, in.ExclusiveStartStreamArn, limit), nil
}

// PageStreams is ListStreams' page of sums (in their order) after the
// stream exclusiveStart ("" from the first), at most limit of them; both
// backends list their streams through it.
func PageStreams(sums []wire.StreamSummary, exclusiveStart string, limit int) *wire.ListStreamsOutput {
	out := &wire.ListStreamsOutput{Streams: []wire.StreamSummary{}}
	started := exclusiveStart == ""
	for _, sum := range sums {
		if !started {
			started = sum.StreamArn == exclusiveStart
			continue
		}
		if len(out.Streams) == limit {
			out.LastEvaluatedStreamArn = out.Streams[limit-1].StreamArn
			return out
		}
		out.Streams = append(out.Streams, sum)
	}
	return out
}
