package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DeleteItem deletes an item, if its condition holds. Deleting an absent
// item succeeds (and costs a write unit). Errors: ValidationException,
// ResourceNotFoundException, ConditionalCheckFailedException,
// AccessDeniedException.
func (e *Engine) DeleteItem(ctx context.Context, s tenancy.Scope, in *wire.DeleteItemInput) (*wire.DeleteItemOutput, error) {
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
	if err := h.Table.ValidateKey(in.Key); err != nil {
		return nil, err
	}
	if err := h.CheckKey(in.Key); err != nil {
		return nil, err
	}

	w := newWrite(h, in.Key)
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
		w.del = true
		ws := []*itemWrite{w}
		return e.commit(ws, e.metered(s, "DeleteItem", ws, 1, &staged, nil))
	})
	if err != nil {
		return nil, err
	}
	var tally capTally
	tally.addWrite(h.Table.Name, w.cost, 1)
	out := &wire.DeleteItemOutput{ConsumedCapacity: tally.reportOne(in.ReturnConsumedCapacity)}
	out.U = tally.usage(true)
	out.U.Committed = staged
	if in.ReturnValues == rvAllOld && w.old != nil {
		out.Attributes = w.old
	}
	out.ItemCollectionMetrics = itemCollectionMetrics(h, in.ReturnItemCollectionMetrics, w.key)
	return out, nil
}
