package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// ListStreams lists the streams of the tables scope s can see (or of the
// one table named), by table name and then age, paged by
// ExclusiveStartStreamArn. Streams of a table stay listed after they are
// disabled, until retention removes them. Errors: ValidationException,
// ResourceNotFoundException (TableName), AccessDeniedException (the
// operator, which has no access to table data).
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
	out := &wire.ListStreamsOutput{Streams: []wire.StreamSummary{}}
	started := in.ExclusiveStartStreamArn == ""
	for _, name := range names {
		h, err := e.open(ctx, s, name)
		if err != nil {
			if in.TableName == "" && apierr.Is(err, apierr.ResourceNotFound) {
				continue // dropped meanwhile
			}
			return nil, err
		}
		streams, err := e.clog.Streams(h.Table.ID)
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "listing streams")
		}
		for _, st := range streams {
			if !e.streamShown(st) {
				continue // hidden (the log's own) or long disabled
			}
			arn := e.streamARN(name, st)
			if !started {
				started = arn == in.ExclusiveStartStreamArn
				continue
			}
			if len(out.Streams) == limit {
				out.LastEvaluatedStreamArn = out.Streams[limit-1].StreamArn
				return out, nil
			}
			out.Streams = append(out.Streams, wire.StreamSummary{StreamArn: arn, StreamLabel: st.Label(), TableName: name})
		}
	}
	return out, nil
}
