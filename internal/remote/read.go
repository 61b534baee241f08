package remote

import (
	"context"
	"github.com/tenantdb/tenantdb/internal/readreq"
	"regexp"

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

// page converts the engine's answer to a Query or Scan.
func (c coll) page(res *dynamodb.QueryOutput, table, want string, project bool, gw *gatewayFilter) (*wire.QueryOutput, error) {
	out := &wire.QueryOutput{Count: int(res.Count), ScannedCount: int(res.ScannedCount), ConsumedCapacity: capacity(res.ConsumedCapacity, table, want)}
	t := c.p.tg.Table
	if gw != nil {
		out.Count, out.ScannedCount = 0, len(res.Items)
	}
	for _, it := range res.Items {
		item := strip(it)
		if project || gw != nil {
			for n := range item {
				if !t.Projects(c.ix, n) {
					delete(item, n)
				}
			}
		}
		if gw != nil {
			if ok, err := gw.filter.Eval(item); err != nil || !ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			out.Count++
			if gw.count {
				continue
			}
			if gw.proj != nil {
				item = gw.proj.Apply(item)
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
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	c, err := p.coll(in.IndexName)
	if err != nil {
		return nil, err
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	ex, err := readreq.QueryInput(in).Compile(c.hash.Name, c.rng.Name)
	if err != nil {
		return nil, err
	}
	project, err := c.check(ex, readreq.Params{Select: in.Select, Consistent: in.ConsistentRead, Limit: in.Limit,
		Capacity: in.ReturnConsumedCapacity, QueryKeyFilter: true})
	if err != nil {
		return nil, err
	}
	if err := legacy("QueryFilter", in.QueryFilter != nil || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	pe, exprNames, err := projection(in.AttributesToGet, in.ProjectionExpression, in.ExpressionAttributeNames)
	if err != nil {
		return nil, err
	}
	q := *in // the request with the legacy projection as an expression
	q.ProjectionExpression, q.ExpressionAttributeNames = pe, exprNames
	in = &q
	gw := c.gatewayFilterFor(ex, in.Select)
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, usedBy(gw, in.FilterExpression, in.ProjectionExpression)...)
	cond, err := c.keyRange(ex.KC, in.KeyConditions == nil, names, values)
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
	}, in.TableName, in.ReturnConsumedCapacity, project, gw)
}

// check applies DynamoDB's rules on a read's parameters (package
// readreq, the embedded engine's too) to the compiled expressions ex and
// p, and reports whether results must be cut down to an index's
// projection (the engine's index slots project everything).
func (c coll) check(ex *readreq.Exprs, p readreq.Params) (bool, error) {
	if err := c.consistent(p.Consistent); err != nil {
		return false, err
	}
	p.Index = c.ix
	ex.Fill(&p)
	rules, err := readreq.Check(c.p.tg.Table, p)
	if err != nil {
		return false, err
	}
	return rules.Select == readreq.Projected && c.ix.ProjectionType != "ALL", nil
}

// Scan is one engine Query over the tenant's whole item collection (or
// an index's): it reads no other tenant's items. Of a parallel scan's
// segments, segment 0 returns every item and the others none (a valid
// partition of the items while a table has one collection).
func (b *Backend) Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error) {
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
	ex, err := readreq.ScanInput(in).Compile("", "")
	if err != nil {
		return nil, err
	}
	project, err := c.check(ex, readreq.Params{Select: in.Select, Consistent: in.ConsistentRead, Limit: in.Limit,
		Capacity: in.ReturnConsumedCapacity})
	if err != nil {
		return nil, err
	}
	if err := legacy("ScanFilter", in.ScanFilter != nil || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	pe, exprNames, err := projection(in.AttributesToGet, in.ProjectionExpression, in.ExpressionAttributeNames)
	if err != nil {
		return nil, err
	}
	q := *in // the request with the legacy projection as an expression
	q.ProjectionExpression, q.ExpressionAttributeNames = pe, exprNames
	in = &q
	esk, err := c.startKey(in.ExclusiveStartKey)
	if err != nil {
		return nil, err
	}
	if in.Segment != nil && *in.Segment > 0 {
		return &wire.ScanOutput{}, nil
	}
	gw := c.gatewayFilterFor(ex, in.Select)
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, usedBy(gw, in.FilterExpression, in.ProjectionExpression)...)
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
	}, in.TableName, in.ReturnConsumedCapacity, project, gw)
}

// query runs q on c's collection (or its index slot) and converts the
// engine's page for the client.
func (b *Backend) query(ctx context.Context, c coll, q *dynamodb.QueryInput, table, want string, project bool, gw *gatewayFilter) (*wire.QueryOutput, error) {
	q.TableName, q.IndexName = &b.table, str(&c.index)
	q.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	if gw != nil {
		// The engine returns what the index holds; the gateway filters,
		// projects and counts.
		q.FilterExpression, q.ProjectionExpression, q.Select = nil, nil, ""
	}
	res, err := b.db.Query(ctx, q)
	if err != nil {
		return nil, engineErr(err, strip)
	}
	return c.page(res, table, want, project, gw)
}

// gatewayFilter is a filter the gateway evaluates itself: on a global
// secondary index that does not project every attribute, DynamoDB
// evaluates a filter on what the index holds (an attribute it does not
// project is absent), while the engine's index slots hold whole items.
type gatewayFilter struct {
	filter expr.Condition
	proj   expr.Projection // the client's projection, applied after the filter
	count  bool            // Select COUNT
}

// gatewayFilterFor returns the gateway's filter for a read of c with the
// compiled expressions ex and Select sel, or nil if the engine can filter.
func (c coll) gatewayFilterFor(ex *readreq.Exprs, sel string) *gatewayFilter {
	if ex.Filter == nil || c.ix == nil || c.ix.Local || c.ix.ProjectionType == "ALL" {
		return nil
	}
	return &gatewayFilter{filter: ex.Filter, proj: ex.Proj, count: sel == "COUNT"}
}

// usedBy returns exprs without the filter if gw filters at the gateway:
// the engine refuses placeholders no expression it receives uses.
func usedBy(gw *gatewayFilter, filter, projection *string) []*string {
	if gw != nil {
		return nil
	}
	return []*string{filter, projection}
}
