package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// UpdateItem edits an item's attributes (UpdateExpression or the legacy
// AttributeUpdates), creating the item if it does not exist, if its
// condition holds. ReturnValues may be any of NONE, ALL_OLD, UPDATED_OLD,
// ALL_NEW, UPDATED_NEW. Errors: ValidationException (also for an update
// that fails on the item's content, such as ADD to a string),
// ResourceNotFoundException, ConditionalCheckFailedException,
// AccessDeniedException.
func (e *Engine) UpdateItem(ctx context.Context, s tenancy.Scope, in *wire.UpdateItemInput) (*wire.UpdateItemOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := checkReturnValues(in.ReturnValues, true); err != nil {
		return nil, err
	}
	if err := checkWriteOptions(in.ReturnConsumedCapacity, in.ReturnItemCollectionMetrics, in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	if err := checkExprMix(
		[]param{{"UpdateExpression", in.UpdateExpression != nil}, {"ConditionExpression", in.ConditionExpression != nil}},
		[]param{{"AttributeUpdates", in.AttributeUpdates != nil}, {"Expected", in.Expected != nil}, {"ConditionalOperator", in.ConditionalOperator != ""}},
		in.ExpressionAttributeNames != nil, in.ExpressionAttributeValues != nil); err != nil {
		return nil, err
	}
	p := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	var upd expr.Update
	var err error
	switch {
	case in.UpdateExpression != nil:
		upd, err = p.Update(*in.UpdateExpression)
	case in.AttributeUpdates != nil:
		upd, err = expr.LegacyAttributeUpdates(in.AttributeUpdates)
	}
	if err != nil {
		return nil, err
	}
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
	if err := checkUpdateKeys(h.Table, upd); err != nil {
		return nil, err
	}
	if err := h.CheckKey(in.Key); err != nil {
		return nil, err
	}

	w := newWrite(h, in.Key)
	var paths []expr.Path
	var staged bool
	err = e.locked([]*itemWrite{w}, nil, func() error {
		ok, err := evalCondition(cond, w.old)
		if err != nil {
			return err
		}
		if !ok {
			return condFailed(in.ReturnValuesOnConditionCheckFailure, w.old)
		}
		if w.old == nil && legacyDeleteOnly(in.AttributeUpdates) {
			return nil // DELETE actions on a missing item create nothing
		}
		var nu attr.Item
		if nu, paths, err = applyUpdate(h, upd, w.old, w.key); err != nil {
			return err
		}
		if w.old == nil && deletesOnly(upd) {
			// NB: after applying, so that an invalid path is refused as
			// on an existing item; then nothing is created or returned.
			return nil
		}
		w.put, w.new = true, nu
		ws := []*itemWrite{w}
		return e.commit(ws, e.metered(s, "UpdateItem", ws, 1, &staged, nil))
	})
	if err != nil {
		return nil, err
	}
	if w.cost.table == 0 {
		w.cost.table = writeUnits(0) // nothing written still costs a unit
	}
	var tally capTally
	tally.addWrite(h.Table.Name, w.cost, 1)
	out := &wire.UpdateItemOutput{ConsumedCapacity: tally.reportOne(in.ReturnConsumedCapacity)}
	out.U = tally.usage(true)
	out.U.Committed = staged
	out.Attributes = updateReturn(in.ReturnValues, w.old, w.new, paths)
	out.ItemCollectionMetrics = itemCollectionMetrics(h, in.ReturnItemCollectionMetrics, w.key)
	return out, nil
}

// legacyDeleteOnly reports whether AttributeUpdates consists only of
// DELETE actions (which, unlike PUT and ADD, do not create a missing item).
func legacyDeleteOnly(upd map[string]wire.AttributeValueUpdate) bool {
	if len(upd) == 0 {
		return false
	}
	for _, u := range upd {
		if u.Action != "DELETE" {
			return false
		}
	}
	return true
}

// deletesOnly reports whether upd only removes attributes or deletes from
// sets (REMOVE and DELETE clauses), which on a missing item create
// nothing, as DynamoDB does. An empty update still creates the item.
func deletesOnly(upd expr.Update) bool {
	d, ok := upd.(interface{ DeletesOnly() bool })
	return ok && d.DeletesOnly()
}

// checkUpdateKeys rejects updates that would change a key attribute.
func checkUpdateKeys(t *schema.Table, upd expr.Update) error {
	if upd == nil {
		return nil
	}
	for _, p := range upd.Paths() {
		top := p.Top()
		if top == t.Hash.Name || top == t.Range.Name {
			return apierr.Validationf("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", top)
		}
	}
	return nil
}

// applyUpdate applies upd (nil: no change) to the item old (nil: absent,
// the update starts from the key) and validates the result.
func applyUpdate(h *handle, upd expr.Update, old, key attr.Item) (attr.Item, []expr.Path, error) {
	base := old
	if base == nil {
		base = keyOnly(key)
	}
	nu, paths := base, []expr.Path(nil)
	if upd != nil {
		var err error
		if nu, paths, err = upd.Apply(base); err != nil {
			return nil, nil, err
		}
		// NB: a value may be set at a nested path, deeper than it was
		// parsed; the walk does not allocate.
		if attr.TooDeep(nu) {
			return nil, nil, attr.ErrDepth
		}
	}
	if err := h.Table.ValidateItemKeys(nu); err != nil {
		return nil, nil, err
	}
	if err := checkItemSize(nu, true); err != nil {
		return nil, nil, err
	}
	if err := h.CheckItem(nu); err != nil {
		return nil, nil, err
	}
	return nu, paths, nil
}

// updateReturn returns UpdateItem's Attributes for ReturnValues rv.
func updateReturn(rv string, old, nu attr.Item, paths []expr.Path) attr.Item {
	var out attr.Item
	switch rv {
	case rvAllOld:
		out = old
	case rvAllNew:
		out = nu
	case rvUpdatedOld:
		if old != nil {
			out = expr.ProjectPaths(old, paths)
		}
	case rvUpdatedNew:
		out = expr.ProjectPaths(nu, paths)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
