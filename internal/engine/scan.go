package engine

import (
	"context"
	"github.com/tenantdb/tenantdb/internal/readreq"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// maxTotalSegments is DynamoDB's limit on TotalSegments.
const maxTotalSegments = 1000000

// Scan reads one page of all items of a table or secondary index in the
// scope's namespace, as DynamoDB's Scan does: filter, projection, Select,
// Limit, the 1 MB page rule, ExclusiveStartKey/LastEvaluatedKey, parallel
// segments (Segment/TotalSegments: ranges of the partition hash, so the
// segments of a parallel scan together return every item exactly once),
// ConsistentRead and consumed capacity.
//
// Errors: ResourceNotFound for an unknown table; Validation for everything
// DynamoDB rejects, with its messages.
func (e *Engine) Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	h, err := e.open(ctx, s, in.TableName)
	defer h.close()
	if err != nil {
		return nil, err
	}
	ex, err := scanExprs(in)
	if err != nil {
		return nil, err
	}
	r, err := h.planScan(in, ex)
	if err != nil {
		return nil, err
	}
	res, err := r.run(ctx)
	if err != nil {
		return nil, err
	}
	return r.response(res), nil
}

// scanExprs compiles a Scan's expressions (or legacy parameters).
func scanExprs(in *wire.ScanInput) (*readreq.Exprs, error) {
	ein := readreq.ScanInput(in)
	return ein.Compile("", "")
}

// planScan validates a Scan whose expressions are compiled and resolves it
// to a readSpec.
func (h *handle) planScan(in *wire.ScanInput, ex *readreq.Exprs) (*readSpec, error) {
	t := h.Table
	seg, total, err := scanSegment(in.Segment, in.TotalSegments)
	if err != nil {
		return nil, err
	}
	ix, err := readIndex(t, in.IndexName)
	if err != nil {
		return nil, err
	}
	r := &readSpec{h: h, ix: ix, forward: true, filter: ex.Filter}
	c := readCommon{
		Index:         ix,
		Select:        in.Select,
		Consistent:    in.ConsistentRead,
		Limit:         in.Limit,
		Capacity:      in.ReturnConsumedCapacity,
		FilterNames:   ex.FilterNames,
		FilterNamesOK: ex.FilterNamesOK,
		HasFilter:     ex.Filter != nil,
		FilterParam:   ex.FilterParam,
		Proj:          ex.Proj,
		ProjParam:     ex.ProjParam,
	}
	if err := resolveCommon(h, c, r); err != nil {
		return nil, err
	}

	var p []byte
	if ix != nil {
		p = keyspace.Index(h.Namespace, t.ID, ix.No)
	} else {
		p = keyspace.Items(h.Namespace, t.ID)
	}
	r.span = segmentSpan(p, seg, total)

	if in.ExclusiveStartKey != nil {
		pos, err := h.startKey(ix, in.ExclusiveStartKey)
		if err != nil {
			return nil, err
		}
		if !startSegment(t, ix, in.ExclusiveStartKey, seg, total) {
			return nil, apierr.Validationf("The provided Exclusive start key does not map to the provided Segment and TotalSegments values.")
		}
		r.span = r.span.after(pos)
	}
	return r, nil
}

// scanSegment validates Segment and TotalSegments; a Scan without them is
// segment 0 of 1.
func scanSegment(segment, total *int32) (int, int, error) {
	switch {
	case segment == nil && total == nil:
		return 0, 1, nil
	case total == nil:
		return 0, 0, apierr.Validationf("The TotalSegments parameter is required but was not present in the request when parameter Segment is present")
	case segment == nil:
		return 0, 0, apierr.Validationf("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
	}
	seg, tot := int(*segment), int(*total)
	switch {
	case tot < 1:
		return 0, 0, apierr.Validationf("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1", tot)
	case tot > maxTotalSegments:
		return 0, 0, apierr.Validationf("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000", tot)
	case seg < 0:
		return 0, 0, apierr.Validationf("1 validation error detected: Value '%d' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0", seg)
	case seg >= tot:
		return 0, 0, apierr.Validationf("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", seg, tot)
	}
	return seg, tot, nil
}
