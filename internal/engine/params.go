package engine

import (
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Request parameter checks shared by the item operations.

// param is a request parameter and whether the request set it.
type param struct {
	name string
	set  bool
}

// checkExprMix enforces DynamoDB's rules on expression parameters: a
// request uses expressions or the legacy parameters, never both;
// ExpressionAttributeNames needs an expression, ExpressionAttributeValues
// an expression other than a projection.
func checkExprMix(exprs, legacy []param, hasNames, hasValues bool) error {
	var e, l []string
	for _, p := range exprs {
		if p.set {
			e = append(e, p.name)
		}
	}
	for _, p := range legacy {
		if p.set {
			l = append(l, p.name)
		}
	}
	if len(e) > 0 && len(l) > 0 {
		return apierr.Validationf("Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}",
			strings.Join(l, ", "), strings.Join(e, ", "))
	}
	if hasNames && len(e) == 0 {
		return apierr.Validationf("ExpressionAttributeNames can only be specified when using expressions")
	}
	if hasValues {
		var valueExprs []string
		used := false
		for _, p := range exprs {
			if p.name == "ProjectionExpression" {
				continue
			}
			valueExprs = append(valueExprs, p.name)
			used = used || p.set
		}
		if !used {
			verb := "is"
			if len(valueExprs) > 1 {
				verb = "are"
			}
			return apierr.Validationf("ExpressionAttributeValues can only be specified when using expressions: %s %s null", strings.Join(valueExprs, " and "), verb)
		}
	}
	return nil
}

// compileCondition compiles a ConditionExpression or the legacy Expected
// (nil, nil when the request has neither).
func compileCondition(p *expr.Params, ce *string, expected map[string]wire.ExpectedAttributeValue, op string) (expr.Condition, error) {
	if ce != nil {
		return p.Condition(*ce)
	}
	if op != "" && op != "AND" && op != "OR" {
		return nil, enumErr(op, "conditionalOperator", "AND, OR")
	}
	if expected != nil {
		return expr.LegacyExpected(expected, op)
	}
	if op != "" {
		return nil, apierr.Validationf("ConditionalOperator can only be used when Expected or QueryFilter or ScanFilter are present")
	}
	return nil, nil
}

// compileProjection compiles a ProjectionExpression or AttributesToGet
// (nil when the request has neither: the whole item).
func compileProjection(p *expr.Params, pe *string, names []string) (expr.Projection, error) {
	if pe != nil {
		return p.Projection(*pe)
	}
	if names != nil {
		return expr.LegacyAttributesToGet(names)
	}
	return nil, nil
}

// returnValues values.
const (
	rvNone       = "NONE"
	rvAllOld     = "ALL_OLD"
	rvUpdatedOld = "UPDATED_OLD"
	rvAllNew     = "ALL_NEW"
	rvUpdatedNew = "UPDATED_NEW"
)

// checkReturnValues validates ReturnValues for an operation that allows
// only ALL_OLD and NONE (PutItem, DeleteItem) unless all is set.
func checkReturnValues(rv string, all bool) error {
	switch rv {
	case "", rvNone, rvAllOld:
		return nil
	case rvUpdatedOld, rvAllNew, rvUpdatedNew:
		if all {
			return nil
		}
		return apierr.Validationf("ReturnValues can only be ALL_OLD or NONE")
	}
	return enumErr(rv, "returnValues", "ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW")
}

// checkWriteOptions validates the options every single-item write has.
func checkWriteOptions(rcc, ricm, rvOnFail string) error {
	if err := checkConsumedMode(rcc); err != nil {
		return err
	}
	switch ricm {
	case "", "NONE", "SIZE":
	default:
		return enumErr(ricm, "returnItemCollectionMetrics", "SIZE, NONE")
	}
	return checkRVOnFailure(rvOnFail, "returnValuesOnConditionCheckFailure")
}

func checkRVOnFailure(v, field string) error {
	switch v {
	case "", rvNone, rvAllOld:
		return nil
	}
	return enumErr(v, field, "ALL_OLD, NONE")
}

// condFailed returns the ConditionalCheckFailedException of a write whose
// condition did not hold, with the item when ALL_OLD was asked for.
func condFailed(rvOnFail string, old attr.Item) error {
	err := apierr.New(apierr.ConditionalCheckFailed, "The conditional request failed")
	if rvOnFail == rvAllOld && old != nil {
		err.Detail = &wire.ConditionalCheckFailedDetail{Item: old}
	}
	return err
}

// evalCondition evaluates c (nil: no condition) on the current item.
func evalCondition(c expr.Condition, old attr.Item) (bool, error) {
	if c == nil {
		return true, nil
	}
	return c.Eval(old)
}

// itemCollectionMetrics returns the metrics DynamoDB reports for a write
// to a table with LSIs when SIZE is requested (nil otherwise). tenantdb
// does not limit item collections; the estimate is the smallest range.
func itemCollectionMetrics(h *handle, ricm string, key attr.Item) *wire.ItemCollectionMetrics {
	if ricm != "SIZE" {
		return nil
	}
	hasLSI := false
	for _, ix := range h.Table.Indexes {
		hasLSI = hasLSI || ix.Local
	}
	if !hasLSI {
		return nil
	}
	return &wire.ItemCollectionMetrics{
		ItemCollectionKey:   attr.Item{h.Table.Hash.Name: key[h.Table.Hash.Name]},
		SizeEstimateRangeGB: []float64{0, 1},
	}
}

// checkItemSize enforces the attribute name limits and the 400 KB item
// limit.
func checkItemSize(it attr.Item, update bool) error {
	if err := schema.CheckItemNames(it); err != nil {
		return err
	}
	if attr.ItemSize(it) <= schema.MaxItemBytes {
		return nil
	}
	if update {
		return apierr.Validationf("Item size to update has exceeded the maximum allowed size")
	}
	return apierr.Validationf("Item size has exceeded the maximum allowed size")
}

// keyOnly returns a copy of key as a fresh item (the base of an update of
// a missing item).
func keyOnly(key attr.Item) attr.Item {
	out := make(attr.Item, len(key))
	for k, v := range key {
		out[k] = v
	}
	return out
}
