package engine

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/tenantdb/tenantdb/internal/readreq"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Query reads one page of the items of one partition of a table or of a
// secondary index, in sort key order, as DynamoDB's Query does: key
// condition, filter, projection, Select, Limit, the 1 MB page rule,
// ExclusiveStartKey/LastEvaluatedKey, ConsistentRead and consumed capacity.
// It reads only the scope's namespace.
//
// Errors: ResourceNotFound for an unknown table; Validation for everything
// DynamoDB rejects (with its messages); AccessDenied for a leading-keys
// table whose key condition names another tenant's partition.
func (e *Engine) Query(ctx context.Context, s tenancy.Scope, in *wire.QueryInput) (*wire.QueryOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	h, err := e.open(ctx, s, in.TableName)
	defer h.close()
	if err != nil {
		return nil, err
	}
	ix, err := readIndex(h.Table, in.IndexName)
	if err != nil {
		return nil, err
	}
	ex, err := queryExprs(h.Table, ix, in)
	if err != nil {
		return nil, err
	}
	r, err := h.planQuery(in, ix, ex)
	if err != nil {
		return nil, err
	}
	res, err := r.run(ctx)
	if err != nil {
		return nil, err
	}
	return r.response(res), nil
}

// queryKey returns the key schema a Query of ix (nil: the table) reads.
func queryKey(t *schema.Table, ix *schema.Index) (hashKey, rangeKey schema.KeyAttr) {
	if ix != nil {
		return ix.Hash, ix.Range
	}
	return t.Hash, t.Range
}

// queryExprs compiles a Query's expressions (or legacy parameters).
func queryExprs(t *schema.Table, ix *schema.Index, in *wire.QueryInput) (*readreq.Exprs, error) {
	hashKey, rangeKey := queryKey(t, ix)
	ein := readreq.QueryInput(in)
	return ein.Compile(hashKey.Name, rangeKey.Name)
}

// planQuery validates a Query whose expressions are compiled and resolves
// it to a readSpec.
func (h *handle) planQuery(in *wire.QueryInput, ix *schema.Index, ex *readreq.Exprs) (*readSpec, error) {
	t := h.Table
	hashKey, rangeKey := queryKey(t, ix)
	kc := ex.KC
	if err := checkKeyCondition(kc, hashKey, rangeKey, in.KeyConditionExpression != nil); err != nil {
		return nil, err
	}
	if err := h.CheckLeadingKey(kc.HashValue); err != nil {
		return nil, err
	}

	r := &readSpec{h: h, ix: ix, forward: in.ScanIndexForward == nil || *in.ScanIndexForward}
	c := readCommon{
		Index:          ix,
		Select:         in.Select,
		Consistent:     in.ConsistentRead,
		Limit:          in.Limit,
		Capacity:       in.ReturnConsumedCapacity,
		FilterNames:    ex.FilterNames,
		FilterNamesOK:  ex.FilterNamesOK,
		HasFilter:      ex.Filter != nil,
		FilterParam:    ex.FilterParam,
		Proj:           ex.Proj,
		ProjParam:      ex.ProjParam,
		QueryKeyFilter: true,
	}
	if err := resolveCommon(h, c, r); err != nil {
		return nil, err
	}
	r.filter = ex.Filter

	var p []byte
	if ix != nil {
		p = keyspace.Index(h.Namespace, t.ID, ix.No)
	} else {
		p = keyspace.Items(h.Namespace, t.ID)
	}
	p = keyspace.AppendPartition(p, attr.AppendKey(nil, kc.HashValue))
	var op expr.KeyOp
	if kc.RangeName != "" {
		op = kc.RangeOp
	}
	r.span = sortKeySpan(p, op, kc.RangeValues)

	if in.ExclusiveStartKey != nil {
		pos, err := h.startKey(ix, in.ExclusiveStartKey)
		if err != nil {
			return nil, err
		}
		esk := in.ExclusiveStartKey
		if !attr.Equal(esk[hashKey.Name], kc.HashValue) {
			return nil, apierr.Validationf("The provided starting key is outside query boundaries based on provided conditions")
		}
		if op != 0 && !sortKeyMatches(esk[rangeKey.Name], op, kc.RangeValues) {
			return nil, apierr.Validationf("The provided starting key does not match the range key predicate")
		}
		if r.forward {
			r.span = r.span.after(pos)
		} else {
			r.span = r.span.before(pos)
		}
	}
	return r, nil
}

// checkKeyCondition validates a compiled key condition against the key
// schema of the table or index queried: the key attributes, the types of
// the values, begins_with only on S and B, BETWEEN bounds in order.
func checkKeyCondition(kc *expr.KeyCondition, hashKey, rangeKey schema.KeyAttr, isExpr bool) error {
	if kc == nil || kc.HashName != hashKey.Name {
		return apierr.Validationf("Query condition missed key schema element: %s", hashKey.Name)
	}
	if kc.RangeName != "" && kc.RangeName != rangeKey.Name {
		return apierr.Validationf("Query condition missed key schema element: %s", rangeKey.Name)
	}
	mismatch := apierr.Validationf("One or more parameter values were invalid: Condition parameter type does not match schema type")
	if kc.HashValue.Type != hashKey.Type {
		return mismatch
	}
	if err := schema.CheckKeyValue(hashKey, kc.HashValue, true, false); err != nil {
		return err
	}
	if kc.RangeName == "" {
		return nil
	}
	want := 1
	if kc.RangeOp == expr.KeyBetween {
		want = 2
	}
	if len(kc.RangeValues) != want {
		return apierr.Validationf("The attempted filter operation is not supported for the provided filter argument count")
	}
	for _, v := range kc.RangeValues {
		if v.Type != rangeKey.Type {
			return mismatch
		}
		if err := schema.CheckKeyValue(rangeKey, v, true, true); err != nil {
			return err
		}
	}
	switch kc.RangeOp {
	case expr.KeyBeginsWith:
		if rangeKey.Type == attr.N {
			if isExpr {
				return apierr.Validationf("Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N")
			}
			return apierr.Validationf("One or more parameter values were invalid: ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type")
		}
	case expr.KeyBetween:
		if c, _ := attr.Compare(kc.RangeValues[0], kc.RangeValues[1]); c > 0 {
			msg := fmt.Sprintf("The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s",
				keyValueString(kc.RangeValues[0]), keyValueString(kc.RangeValues[1]))
			if isExpr {
				msg = "Invalid KeyConditionExpression: " + msg
			}
			return apierr.Validationf("%s", msg)
		}
	case expr.KeyEQ, expr.KeyLT, expr.KeyLE, expr.KeyGT, expr.KeyGE:
	default:
		return apierr.Validationf("Attempted conditional constraint is not an indexable operation")
	}
	return nil
}

// keyValueString formats a key value the way DynamoDB's messages do
// ("{S:abc}", "{N:5}").
func keyValueString(v attr.Value) string {
	switch v.Type {
	case attr.S:
		return "{S:" + v.S + "}"
	case attr.N:
		return "{N:" + v.N.String() + "}"
	case attr.B:
		return "{B:" + base64.StdEncoding.EncodeToString(v.B) + "}"
	}
	return "{}"
}
