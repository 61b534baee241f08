package remote

import (
	"context"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// placeholder matches an expression's placeholders.
var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// keep returns the placeholders of names and values that the expressions
// exprs use (the key condition's are replaced by the gateway's own, and
// the engine refuses unused ones).
func keep(names map[string]string, values map[string]attr.Value, exprs ...*string) (map[string]string, map[string]types.AttributeValue) {
	used := map[string]bool{}
	for _, e := range exprs {
		if e != nil {
			for _, ph := range placeholder.FindAllString(*e, -1) {
				used[ph] = true
			}
		}
	}
	n2 := map[string]string{}
	for k, v := range names {
		if used[k] {
			n2[k] = v
		}
	}
	v2 := map[string]types.AttributeValue{}
	for k, v := range values {
		if used[k] {
			v2[k] = toAV(v)
		}
	}
	return n2, v2
}

// keyRange returns the engine key condition for a logical one, over the
// gateway's placeholders, adding their values to names and values.
func (p place) keyRange(kc *expr.KeyCondition, names map[string]string, values map[string]types.AttributeValue) (string, error) {
	t := p.tg.Table
	mismatch := apierr.Validationf("One or more parameter values were invalid: Condition parameter type does not match schema type")
	if kc.HashValue.Type != t.Hash.Type {
		return "", mismatch
	}
	for _, v := range kc.RangeValues {
		if v.Type != t.Range.Type {
			return "", mismatch
		}
	}
	if err := p.tg.CheckLeadingKey(kc.HashValue); err != nil {
		return "", err
	}
	prefix := attr.AppendKey(nil, kc.HashValue)
	if len(prefix) > maxSortKey {
		return "", apierr.Validationf("One or more parameter values were invalid: the key is too large for the remote backend (its encoding exceeds %d bytes)", maxSortKey)
	}
	names["#tenantdb_p"], names["#tenantdb_s"] = attrPK, attrSK
	values[":tenantdb_p"] = &types.AttributeValueMemberS{Value: p.pk}
	bin := func(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }
	with := func(v attr.Value) []byte { return attr.AppendKey(append([]byte(nil), prefix...), v) }
	between := func(lo, hi []byte) string {
		values[":tenantdb_lo"], values[":tenantdb_hi"] = bin(lo), bin(hi)
		return "#tenantdb_p = :tenantdb_p AND #tenantdb_s BETWEEN :tenantdb_lo AND :tenantdb_hi"
	}
	if t.Range.Name == "" {
		values[":tenantdb_s"] = bin(prefix)
		return "#tenantdb_p = :tenantdb_p AND #tenantdb_s = :tenantdb_s", nil
	}
	if kc.RangeName == "" {
		values[":tenantdb_s"] = bin(prefix)
		return "#tenantdb_p = :tenantdb_p AND begins_with(#tenantdb_s, :tenantdb_s)", nil
	}
	v := kc.RangeValues[0]
	switch kc.RangeOp {
	case expr.KeyEQ:
		values[":tenantdb_s"] = bin(with(v))
		return "#tenantdb_p = :tenantdb_p AND #tenantdb_s = :tenantdb_s", nil
	case expr.KeyLT:
		return between(prefix, pred(with(v))), nil
	case expr.KeyLE:
		return between(prefix, with(v)), nil
	case expr.KeyGT:
		return between(append(with(v), 0), top(prefix)), nil
	case expr.KeyGE:
		return between(with(v), top(prefix)), nil
	case expr.KeyBetween:
		return between(with(v), with(kc.RangeValues[1])), nil
	case expr.KeyBeginsWith:
		enc := with(v)
		// The encoding without its terminator (0x00 0x01) is the prefix of
		// every value that begins with v.
		values[":tenantdb_s"] = bin(enc[:len(enc)-2])
		return "#tenantdb_p = :tenantdb_p AND begins_with(#tenantdb_s, :tenantdb_s)", nil
	}
	return "", apierr.New(apierr.Internal, "unknown key condition operator")
}

// startKey validates a client's page token (a logical key of the table,
// within its leading keys) and returns the engine's.
func (p place) startKey(esk attr.Item) (map[string]types.AttributeValue, error) {
	if esk == nil {
		return nil, nil
	}
	if err := p.tg.Table.ValidateKey(esk); err != nil {
		return nil, apierr.Validationf("The provided starting key is invalid: %s", apierr.Message(err))
	}
	if err := p.tg.CheckStartKey(nil, esk); err != nil {
		return nil, err
	}
	return p.physKey(esk)
}

// page converts the engine's answer to a Query or Scan.
func (p place) page(res *dynamodb.QueryOutput, table, want string) (*wire.QueryOutput, error) {
	out := &wire.QueryOutput{Count: int(res.Count), ScannedCount: int(res.ScannedCount), ConsumedCapacity: capacity(res.ConsumedCapacity, table, want)}
	for _, it := range res.Items {
		out.Items = append(out.Items, strip(it))
	}
	if len(res.LastEvaluatedKey) > 0 {
		k, err := p.logicalKey(res.LastEvaluatedKey)
		if err != nil {
			return nil, err
		}
		out.LastEvaluatedKey = k
	}
	out.U = wire.Usage{ReadUnits: units(res.ConsumedCapacity), Table: table}
	return out, nil
}

func noIndex(ix *string) error {
	if ix != nil {
		return apierr.Validationf("The table does not have the specified index: %s", *ix)
	}
	return nil
}

// Query is one engine Query on the tenant's item collection, its key
// condition rewritten onto the physical sort key.
func (b *Backend) Query(ctx context.Context, s tenancy.Scope, in *wire.QueryInput) (*wire.QueryOutput, error) {
	if err := legacy("KeyConditions, QueryFilter or AttributesToGet", in.KeyConditions != nil || in.QueryFilter != nil || in.AttributesToGet != nil || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	if err := noIndex(in.IndexName); err != nil {
		return nil, err
	}
	if in.KeyConditionExpression == nil {
		return nil, apierr.Validationf("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	params := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	kc, err := params.KeyCondition(*in.KeyConditionExpression, p.tg.Table.Hash.Name, p.tg.Table.Range.Name)
	if err != nil {
		return nil, err
	}
	if in.FilterExpression != nil {
		if _, err := params.Filter(*in.FilterExpression); err != nil {
			return nil, err
		}
	}
	if in.ProjectionExpression != nil {
		if _, err := params.Projection(*in.ProjectionExpression); err != nil {
			return nil, err
		}
	}
	if err := params.CheckUnused(); err != nil {
		return nil, err
	}
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.FilterExpression, in.ProjectionExpression)
	cond, err := p.keyRange(kc, names, values)
	if err != nil {
		return nil, err
	}
	esk, err := p.startKey(in.ExclusiveStartKey)
	if err != nil {
		return nil, err
	}
	res, err := b.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &b.table,
		KeyConditionExpression:    &cond,
		FilterExpression:          str(in.FilterExpression),
		ProjectionExpression:      str(in.ProjectionExpression),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		Select:                    types.Select(in.Select),
		Limit:                     in.Limit,
		ConsistentRead:            in.ConsistentRead,
		ScanIndexForward:          in.ScanIndexForward,
		ExclusiveStartKey:         esk,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	return p.page(res, in.TableName, in.ReturnConsumedCapacity)
}

// Scan is one engine Query over the tenant's whole item collection: it
// reads no other tenant's items. Of a parallel scan's segments, segment 0
// returns every item and the others none (a valid partition of the items
// while a table has one collection).
func (b *Backend) Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error) {
	if err := legacy("ScanFilter or AttributesToGet", in.ScanFilter != nil || in.AttributesToGet != nil || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	if err := noIndex(in.IndexName); err != nil {
		return nil, err
	}
	if (in.Segment == nil) != (in.TotalSegments == nil) {
		return nil, apierr.Validationf("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
	}
	if in.TotalSegments != nil {
		if *in.TotalSegments < 1 || *in.TotalSegments > 1000000 {
			return nil, apierr.Validationf("1 validation error detected: Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value between 1 and 1000000", *in.TotalSegments)
		}
		if *in.Segment < 0 || *in.Segment >= *in.TotalSegments {
			return nil, apierr.Validationf("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", *in.Segment, *in.TotalSegments)
		}
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	params := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if in.FilterExpression != nil {
		if _, err := params.Filter(*in.FilterExpression); err != nil {
			return nil, err
		}
	}
	if in.ProjectionExpression != nil {
		if _, err := params.Projection(*in.ProjectionExpression); err != nil {
			return nil, err
		}
	}
	if err := params.CheckUnused(); err != nil {
		return nil, err
	}
	esk, err := p.startKey(in.ExclusiveStartKey)
	if err != nil {
		return nil, err
	}
	if in.Segment != nil && *in.Segment > 0 {
		return &wire.ScanOutput{}, nil
	}
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.FilterExpression, in.ProjectionExpression)
	names["#tenantdb_p"] = attrPK
	values[":tenantdb_p"] = &types.AttributeValueMemberS{Value: p.pk}
	res, err := b.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &b.table,
		KeyConditionExpression:    aws.String("#tenantdb_p = :tenantdb_p"),
		FilterExpression:          str(in.FilterExpression),
		ProjectionExpression:      str(in.ProjectionExpression),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		Select:                    types.Select(in.Select),
		Limit:                     in.Limit,
		ConsistentRead:            in.ConsistentRead,
		ExclusiveStartKey:         esk,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	return p.page(res, in.TableName, in.ReturnConsumedCapacity)
}
