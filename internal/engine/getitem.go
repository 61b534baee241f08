package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// GetItem reads one item. Reads are always strongly consistent;
// ConsistentRead only changes the capacity charged. Expired items that
// the TTL sweeper has not deleted yet are returned, as in DynamoDB.
// Errors: ValidationException, ResourceNotFoundException,
// AccessDeniedException.
func (e *Engine) GetItem(ctx context.Context, s tenancy.Scope, in *wire.GetItemInput) (*wire.GetItemOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := checkConsumedMode(in.ReturnConsumedCapacity); err != nil {
		return nil, err
	}
	if err := checkExprMix(
		[]param{{"ProjectionExpression", in.ProjectionExpression != nil}},
		[]param{{"AttributesToGet", in.AttributesToGet != nil}},
		in.ExpressionAttributeNames != nil, false); err != nil {
		return nil, err
	}
	p := expr.NewParams(in.ExpressionAttributeNames, nil)
	proj, err := compileProjection(p, in.ProjectionExpression, in.AttributesToGet)
	if err != nil {
		return nil, err
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	h, err := e.open(ctx, s, in.TableName)
	defer h.close()
	if err != nil {
		return nil, err
	}
	if err := h.Table.ValidateKey(in.Key); err != nil {
		return nil, err
	}
	if err := h.CheckKey(in.Key); err != nil {
		return nil, err
	}
	item, err := h.getItem(in.Key)
	if err != nil {
		return nil, err
	}
	consistent := in.ConsistentRead != nil && *in.ConsistentRead
	size := 0
	if item != nil {
		size = attr.ItemSize(item)
	}
	var tally capTally
	tally.addRead(h.Table.Name, readUnits(size, consistent))
	out := &wire.GetItemOutput{ConsumedCapacity: tally.reportOne(in.ReturnConsumedCapacity)}
	out.U = tally.usage(false)
	if item != nil {
		if proj != nil {
			item = proj.Apply(item)
		}
		out.Item = item
	}
	return out, nil
}
