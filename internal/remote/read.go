package remote

import (
	"context"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/schema"
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

// coll is one ordered collection the engine queries for a Target: the
// tenant's items of a table (the engine table's key), or the entries of
// one of its indexes (the index's slot).
type coll struct {
	p              place
	ix             *schema.Index // nil: the table
	index          string        // engine index; "" for the table
	pkAttr, skAttr string
	part           string
	hash, rng      schema.KeyAttr
	slot           indexSlot
}

// coll returns the collection of the table (name nil) or of its index
// named *name. Errors: ValidationException for an unknown index.
func (p place) coll(name *string) (coll, error) {
	t := p.tg.Table
	if name == nil {
		return coll{p: p, pkAttr: attrPK, skAttr: attrSK, part: p.pk, hash: t.Hash, rng: t.Range}, nil
	}
	for i, ix := range t.Indexes {
		if ix.Name == *name {
			slot := slotOf(i)
			return coll{p: p, ix: ix, index: slot.name, pkAttr: slot.pk, skAttr: slot.sk, part: p.indexPart(ix), hash: ix.Hash, rng: ix.Range, slot: slot}, nil
		}
	}
	if len(*name) < 3 || len(*name) > 255 {
		return coll{}, apierr.Validationf("1 validation error detected: Value '%s' at 'indexName' failed to satisfy constraint: Member must have length between 3 and 255", *name)
	}
	return coll{}, apierr.Validationf("The table does not have the specified index: %s", *name)
}

// keyRange returns the engine key condition for a logical one, over the
// gateway's placeholders, adding their values to names and values.
func (c coll) keyRange(kc *expr.KeyCondition, isExpr bool, names map[string]string, values map[string]types.AttributeValue) (string, error) {
	if err := engine.CheckKeyCondition(kc, c.hash, c.rng, isExpr); err != nil {
		return "", err
	}
	if err := c.p.tg.CheckLeadingKey(kc.HashValue); err != nil {
		return "", err
	}
	prefix := attr.AppendKey(nil, kc.HashValue)
	if len(prefix) > maxSortKey {
		return "", apierr.Validationf("One or more parameter values were invalid: the key is too large for the remote backend (its encoding exceeds %d bytes)", maxSortKey)
	}
	names["#tenantdb_p"], names["#tenantdb_s"] = c.pkAttr, c.skAttr
	values[":tenantdb_p"] = &types.AttributeValueMemberS{Value: c.part}
	bin := func(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }
	with := func(v attr.Value) []byte { return attr.AppendKey(append([]byte(nil), prefix...), v) }
	between := func(lo, hi []byte) string {
		values[":tenantdb_lo"], values[":tenantdb_hi"] = bin(lo), bin(hi)
		return "#tenantdb_p = :tenantdb_p AND #tenantdb_s BETWEEN :tenantdb_lo AND :tenantdb_hi"
	}
	if c.rng.Name == "" {
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
	case expr.KeyBeginsWith: // on S or B only (CheckKeyCondition)
		enc := with(v)
		// The encoding without its terminator (0x00 0x01) is the prefix of
		// every value that begins with v.
		values[":tenantdb_s"] = bin(enc[:len(enc)-2])
		return "#tenantdb_p = :tenantdb_p AND begins_with(#tenantdb_s, :tenantdb_s)", nil
	}
	return "", apierr.New(apierr.Internal, "unknown key condition operator")
}

// startKey validates a client's page token (a logical key of the table,
// with an index's key attributes for an index, within its leading keys)
// and returns the engine's.
func (c coll) startKey(esk attr.Item) (map[string]types.AttributeValue, error) {
	if esk == nil {
		return nil, nil
	}
	t := c.p.tg.Table
	invalid := func(err error) error {
		return apierr.Validationf("The provided starting key is invalid: %s", apierr.Message(err))
	}
	tk := attr.Item{}
	for _, k := range t.KeyNames() {
		if v, ok := esk[k]; ok {
			tk[k] = v
		}
	}
	if err := t.ValidateKey(tk); err != nil {
		return nil, invalid(err)
	}
	if err := c.p.tg.CheckStartKey(c.ix, esk); err != nil {
		return nil, err
	}
	phys, err := c.p.physKey(tk)
	if err != nil {
		return nil, err
	}
	if c.ix == nil {
		if len(esk) != len(tk) {
			return nil, apierr.Validationf("The provided starting key is invalid: The provided key element does not match the schema")
		}
		return phys, nil
	}
	n := len(tk)
	var xs []byte
	for _, k := range []schema.KeyAttr{c.hash, c.rng} {
		if k.Name == "" {
			continue
		}
		v, ok := esk[k.Name]
		if !ok || v.Type != k.Type {
			return nil, apierr.Validationf("The provided starting key is invalid: The provided key element does not match the schema")
		}
		if _, dup := tk[k.Name]; !dup {
			n++
		}
		xs = attr.AppendKey(xs, v)
	}
	if len(esk) != n {
		return nil, apierr.Validationf("The provided starting key is invalid: The provided key element does not match the schema")
	}
	phys[c.pkAttr] = &types.AttributeValueMemberS{Value: c.part}
	phys[c.skAttr] = &types.AttributeValueMemberB{Value: xs}
	return phys, nil
}

// lastKey decodes the engine's LastEvaluatedKey into the logical one.
func (c coll) lastKey(lek map[string]types.AttributeValue) (attr.Item, error) {
	key, err := c.p.logicalKey(lek)
	if err != nil || c.ix == nil {
		return key, err
	}
	b, ok := lek[c.skAttr].(*types.AttributeValueMemberB)
	if !ok {
		return nil, apierr.New(apierr.Internal, "the engine answered an index page token without the index key")
	}
	rest := b.Value
	for _, k := range []schema.KeyAttr{c.hash, c.rng} {
		if k.Name == "" {
			continue
		}
		v, n, ok := attr.DecodeKey(k.Type, rest)
		if !ok {
			return nil, apierr.New(apierr.Internal, "corrupt physical index key")
		}
		key[k.Name] = v
		rest = rest[n:]
	}
	return key, nil
}

// checkSelect applies DynamoDB's rules on what a read of an index may
// return; it reports whether results must be cut down to the index's
// projection (the engine's index projects everything).
func (c coll) checkSelect(sel string, proj expr.Projection) (bool, error) {
	ix := c.ix
	if ix == nil || ix.ProjectionType == "ALL" {
		return false, nil
	}
	t := c.p.tg.Table
	switch {
	case sel == "ALL_ATTRIBUTES" && !ix.Local:
		return false, apierr.Validationf("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", ix.Name)
	case proj != nil && !ix.Local:
		var missing []string
		for _, n := range proj.TopNames() {
			if !t.Projects(ix, n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return false, apierr.Validationf("One or more parameter values were invalid: Global secondary index %s does not project [%s]", ix.Name, strings.Join(missing, ", "))
		}
	}
	return (sel == "" || sel == "ALL_PROJECTED_ATTRIBUTES") && proj == nil, nil
}

// page converts the engine's answer to a Query or Scan.
func (c coll) page(res *dynamodb.QueryOutput, table, want string, project bool) (*wire.QueryOutput, error) {
	out := &wire.QueryOutput{Count: int(res.Count), ScannedCount: int(res.ScannedCount), ConsumedCapacity: capacity(res.ConsumedCapacity, table, want)}
	t := c.p.tg.Table
	for _, it := range res.Items {
		item := strip(it)
		if project {
			for n := range item {
				if !t.Projects(c.ix, n) {
					delete(item, n)
				}
			}
		}
		out.Items = append(out.Items, item)
	}
	if len(res.LastEvaluatedKey) > 0 {
		k, err := c.lastKey(res.LastEvaluatedKey)
		if err != nil {
			return nil, err
		}
		out.LastEvaluatedKey = k
	}
	out.U = wire.Usage{ReadUnits: units(res.ConsumedCapacity), Table: table}
	return out, nil
}

// consistent refuses a strongly consistent read of an LSI, which the
// engine serves from a global index (see DESIGN.md); of a GSI the engine
// refuses it itself, as DynamoDB does.
func (c coll) consistent(cr *bool) error {
	if c.ix != nil && c.ix.Local && aws.ToBool(cr) {
		return notServed("A strongly consistent read of a local secondary index")
	}
	return nil
}

// Query is one engine Query on the tenant's item collection (or an
// index's), its key condition rewritten onto the physical sort key.
func (b *Backend) Query(ctx context.Context, s tenancy.Scope, in *wire.QueryInput) (*wire.QueryOutput, error) {
	if err := legacy("QueryFilter", in.QueryFilter != nil || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	c, err := p.coll(in.IndexName)
	if err != nil {
		return nil, err
	}
	if in.KeyConditionExpression == nil && in.KeyConditions == nil {
		return nil, apierr.Validationf("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	if in.KeyConditionExpression != nil && (in.KeyConditions != nil || in.AttributesToGet != nil) {
		l := "KeyConditions"
		if in.KeyConditions == nil {
			l = "AttributesToGet"
		}
		return nil, apierr.Validationf("Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {KeyConditionExpression}", l)
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	pe, exprNames, err := projection(in.AttributesToGet, in.ProjectionExpression, in.ExpressionAttributeNames)
	if err != nil {
		return nil, err
	}
	q := *in // the request with the legacy projection as an expression
	q.ProjectionExpression, q.ExpressionAttributeNames = pe, exprNames
	in = &q
	params := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	var kc *expr.KeyCondition
	if in.KeyConditions != nil {
		kc, err = expr.LegacyKeyConditions(in.KeyConditions, c.hash.Name, c.rng.Name)
	} else {
		kc, err = params.KeyCondition(*in.KeyConditionExpression, c.hash.Name, c.rng.Name)
	}
	if err != nil {
		return nil, err
	}
	project, err := c.readParams(params, in.FilterExpression, in.ProjectionExpression, in.Select, in.ConsistentRead)
	if err != nil {
		return nil, err
	}
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.FilterExpression, in.ProjectionExpression)
	cond, err := c.keyRange(kc, in.KeyConditions == nil, names, values)
	if err != nil {
		return nil, err
	}
	esk, err := c.startKey(in.ExclusiveStartKey)
	if err != nil {
		return nil, err
	}
	return b.query(ctx, c, &dynamodb.QueryInput{
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
	}, in.TableName, in.ReturnConsumedCapacity, project)
}

// readParams validates a Query's or Scan's filter and projection as
// DynamoDB does (placeholders included) and reports whether results must
// be cut down to an index's projection.
func (c coll) readParams(params *expr.Params, filter, projection *string, sel string, consistent *bool) (bool, error) {
	if filter != nil {
		if _, err := params.Filter(*filter); err != nil {
			return false, err
		}
	}
	var proj expr.Projection
	if projection != nil {
		var err error
		if proj, err = params.Projection(*projection); err != nil {
			return false, err
		}
	}
	if err := params.CheckUnused(); err != nil {
		return false, err
	}
	if err := c.consistent(consistent); err != nil {
		return false, err
	}
	return c.checkSelect(sel, proj)
}

// Scan is one engine Query over the tenant's whole item collection (or
// an index's): it reads no other tenant's items. Of a parallel scan's
// segments, segment 0 returns every item and the others none (a valid
// partition of the items while a table has one collection).
func (b *Backend) Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error) {
	if err := legacy("ScanFilter", in.ScanFilter != nil || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	c, err := p.coll(in.IndexName)
	if err != nil {
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
	pe, exprNames, err := projection(in.AttributesToGet, in.ProjectionExpression, in.ExpressionAttributeNames)
	if err != nil {
		return nil, err
	}
	q := *in // the request with the legacy projection as an expression
	q.ProjectionExpression, q.ExpressionAttributeNames = pe, exprNames
	in = &q
	params := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	project, err := c.readParams(params, in.FilterExpression, in.ProjectionExpression, in.Select, in.ConsistentRead)
	if err != nil {
		return nil, err
	}
	esk, err := c.startKey(in.ExclusiveStartKey)
	if err != nil {
		return nil, err
	}
	if in.Segment != nil && *in.Segment > 0 {
		return &wire.ScanOutput{}, nil
	}
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.FilterExpression, in.ProjectionExpression)
	names["#tenantdb_p"] = c.pkAttr
	values[":tenantdb_p"] = &types.AttributeValueMemberS{Value: c.part}
	return b.query(ctx, c, &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#tenantdb_p = :tenantdb_p"),
		FilterExpression:          str(in.FilterExpression),
		ProjectionExpression:      str(in.ProjectionExpression),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		Select:                    types.Select(in.Select),
		Limit:                     in.Limit,
		ConsistentRead:            in.ConsistentRead,
		ExclusiveStartKey:         esk,
	}, in.TableName, in.ReturnConsumedCapacity, project)
}

// query runs q on c's collection (or its index slot) and converts the
// engine's page for the client.
func (b *Backend) query(ctx context.Context, c coll, q *dynamodb.QueryInput, table, want string, project bool) (*wire.QueryOutput, error) {
	q.TableName, q.IndexName = &b.table, str(&c.index)
	q.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	res, err := b.db.Query(ctx, q)
	if err != nil {
		return nil, engineErr(err, strip)
	}
	return c.page(res, table, want, project)
}
