package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// GetShardIterator returns an iterator at a position of a shard of a
// stream for scope s: TRIM_HORIZON (the oldest record kept), LATEST
// (after the newest), AT_ or AFTER_SEQUENCE_NUMBER. The iterator is
// sealed and bound to the scope's tenant and environment, and expires
// after 15 minutes. Errors: ValidationException, ResourceNotFoundException
// (stream or shard), TrimmedDataAccessException (a position or shard past
// retention), AccessDeniedException.
func (e *Engine) GetShardIterator(ctx context.Context, s tenancy.Scope, in *wire.GetShardIteratorInput) (*wire.GetShardIteratorOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if in.ShardId == "" {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'shardId' failed to satisfy constraint: Member must not be null")
	}
	h, st, err := e.openStream(ctx, s, in.StreamArn)
	defer h.close()
	if err != nil {
		return nil, err
	}
	k, ok := e.clog.ParseShardID(st, in.ShardId)
	if !ok {
		return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found: Shard does not exist")
	}
	var pos changelog.Position
	switch in.ShardIteratorType {
	case "TRIM_HORIZON":
		pos, err = e.clog.TrimHorizon(h.db, h.Namespace, st, k)
	case "LATEST":
		pos, err = e.clog.Latest(h.db, h.Namespace, st, k)
	case "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER":
		if in.SequenceNumber == "" {
			return nil, apierr.Validationf("Must specify a sequence number for iterator type %s", in.ShardIteratorType)
		}
		p, ok := changelog.ParseSequenceNumber(in.SequenceNumber)
		if !ok || p.Shard != k {
			return nil, apierr.Validationf("Invalid SequenceNumber for ShardId %s", apierr.Clip(in.ShardId))
		}
		if pos = p; in.ShardIteratorType == "AFTER_SEQUENCE_NUMBER" {
			pos.Seq++
		}
		err = e.clog.CheckKept(h.db, h.Namespace, st, pos)
	default:
		return nil, enumErr(in.ShardIteratorType, "shardIteratorType", "AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, LATEST, TRIM_HORIZON")
	}
	if err != nil {
		return nil, logError(err)
	}
	tok := e.clog.SealIterator(changelog.Iterator{
		NS: h.Namespace, Name: h.Table.Name, Table: h.Table.ID, Stream: st.ID, Pos: pos, Issued: e.opts.Now(),
	})
	return &wire.GetShardIteratorOutput{ShardIterator: tok}, nil
}
