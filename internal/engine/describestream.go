package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DescribeStream describes a stream and its shards as scope s sees them:
// the same shard ids for every tenant of a shared table, each with the
// sequence numbers of the tenant's own records. Shards are paged by
// ExclusiveStartShardId (Limit at most 100). Errors: ValidationException,
// ResourceNotFoundException, AccessDeniedException.
func (e *Engine) DescribeStream(ctx context.Context, s tenancy.Scope, in *wire.DescribeStreamInput) (*wire.DescribeStreamOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 100)
	if err != nil {
		return nil, err
	}
	h, st, err := e.openStream(ctx, s, in.StreamArn)
	defer h.close()
	if err != nil {
		return nil, err
	}
	after := -1
	if in.ExclusiveStartShardId != "" {
		k, ok := e.clog.ParseShardID(st, in.ExclusiveStartShardId)
		if !ok {
			return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found: Shard: %s not found", apierr.Clip(in.ExclusiveStartShardId))
		}
		after = int(k)
	}
	shards, err := e.clog.Shards(h.db, h.Namespace, st)
	if err != nil {
		return nil, logError(err)
	}
	d := wire.StreamDescription{
		StreamArn:               e.streamARN(h.Table.Name, st),
		StreamLabel:             st.Label(),
		StreamStatus:            streamStatus(st),
		StreamViewType:          st.View.String(),
		CreationRequestDateTime: epoch(st.Created()),
		TableName:               h.Table.Name,
		KeySchema:               streamKeys(st, h),
		Shards:                  []wire.Shard{},
	}
	for _, sh := range shards {
		if int(sh.Index) <= after {
			continue
		}
		if len(d.Shards) == limit {
			d.LastEvaluatedShardId = d.Shards[limit-1].ShardId
			break
		}
		d.Shards = append(d.Shards, e.shardOf(st, sh))
	}
	return &wire.DescribeStreamOutput{StreamDescription: d}, nil
}

// shardOf is the wire form of a shard.
func (e *Engine) shardOf(st changelog.Stream, sh changelog.Shard) wire.Shard {
	w := wire.Shard{ShardId: e.clog.ShardID(st, sh.Index)}
	if sh.HasParent {
		w.ParentShardId = e.clog.ShardID(st, sh.Parent)
	}
	first, last := changelog.Position{Shard: sh.Index}, changelog.Position{Shard: sh.Index}
	if !sh.Empty {
		first.Seq, last.Seq = sh.First, sh.Last
	}
	w.SequenceNumberRange.StartingSequenceNumber = changelog.FormatSequenceNumber(first)
	if sh.Closed {
		w.SequenceNumberRange.EndingSequenceNumber = changelog.FormatSequenceNumber(last)
	}
	return w
}
