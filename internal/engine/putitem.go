package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// PutItem creates or replaces an item, if its condition (ConditionExpression
// or Expected) holds. Errors: ValidationException, ResourceNotFoundException,
// ConditionalCheckFailedException (with the old item as Detail when
// ReturnValuesOnConditionCheckFailure is ALL_OLD), AccessDeniedException.
func (e *Engine) PutItem(ctx context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := checkReturnValues(in.ReturnValues, false); err != nil {
		return nil, err
	}
	if err := checkWriteOptions(in.ReturnConsumedCapacity, in.ReturnItemCollectionMetrics, in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	if err := checkExprMix(
		[]param{{"ConditionExpression", in.ConditionExpression != nil}},
		[]param{{"Expected", in.Expected != nil}, {"ConditionalOperator", in.ConditionalOperator != ""}},
		in.ExpressionAttributeNames != nil, in.ExpressionAttributeValues != nil); err != nil {
		return nil, err
	}
	p := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	cond, err := compileCondition(p, in.ConditionExpression, in.Expected, in.ConditionalOperator)
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
	if err := h.Table.ValidateItemKeys(in.Item); err != nil {
		return nil, err
	}
	if err := checkItemSize(in.Item, false); err != nil {
		return nil, err
	}
	if err := h.CheckItem(in.Item); err != nil {
		return nil, err
	}

	w := newWrite(h, h.Table.KeyOf(in.Item))
	w.sizeOnly = cond == nil && in.ReturnValues != rvAllOld
	var staged bool
	err = e.locked([]*itemWrite{w}, nil, func() error {
		ok, err := evalCondition(cond, w.old)
		if err != nil {
			return err
		}
		if !ok {
			return condFailed(in.ReturnValuesOnConditionCheckFailure, w.old)
		}
		w.put, w.new = true, in.Item
		ws := []*itemWrite{w}
		return e.commit(ws, e.metered(s, "PutItem", ws, 1, &staged, nil))
	})
	if err != nil {
		return nil, err
	}
	var tally capTally
	tally.addWrite(h.Table.Name, w.cost, 1)
	out := &wire.PutItemOutput{ConsumedCapacity: tally.reportOne(in.ReturnConsumedCapacity)}
	out.U = tally.usage(true)
	out.U.Committed = staged
	if in.ReturnValues == rvAllOld && w.old != nil {
		out.Attributes = w.old
	}
	out.ItemCollectionMetrics = itemCollectionMetrics(h, in.ReturnItemCollectionMetrics, w.key)
	return out, nil
}
