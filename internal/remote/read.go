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
// one of its indexes (the index's slot). It spreads over the shards of
// the Target's place.
type coll struct {
	p              place
	ix             *schema.Index // nil: the table
	index          string        // engine index; "" for the table
	pkAttr, skAttr string
	hash, rng      schema.KeyAttr
	slot           indexSlot
}

// coll returns the collection of the table (name nil) or of its index
// named *name. Errors: ValidationException for an unknown index.
func (p place) coll(name *string) (coll, error) {
	t := p.tg.Table
	if name == nil {
		return coll{p: p, pkAttr: attrPK, skAttr: attrSK, hash: t.Hash, rng: t.Range}, nil
	}
	for i, ix := range t.Indexes {
		if ix.Name == *name {
			slot := slotOf(i)
			return coll{p: p, ix: ix, index: slot.name, pkAttr: slot.pk, skAttr: slot.sk, hash: ix.Hash, rng: ix.Range, slot: slot}, nil
		}
	}
	if len(*name) < 3 || len(*name) > 255 {
		return coll{}, apierr.Validationf("1 validation error detected: Value '%s' at 'indexName' failed to satisfy constraint: Member must have length between 3 and 255", *name)
	}
	return coll{}, apierr.Validationf("The table does not have the specified index: %s", *name)
}

// partOf is c's partition key in the shard whose partition key is pk.
func (c coll) partOf(pk string) string {
	if c.ix == nil {
		return pk
	}
	return indexPart(pk, c.ix)
}

// parts returns c's partition keys in every shard a read must consult
// (both layouts while a move is in progress; shard.go).
func (c coll) parts() []string {
	var out []string
	for _, pk := range c.p.shardPKs() {
		out = append(out, c.partOf(pk))
	}
	return out
}

// partsOf returns the partition keys a Query with partition key hv must
// consult: of the table or of a local index (whose partition key is the
// table's), its one shard (or, during a move, its shard in each layout);
// of a global index, every shard.
func (c coll) partsOf(hv attr.Value) []string {
	if c.ix != nil && !c.ix.Local {
		return c.parts()
	}
	var out []string
	for _, pk := range c.p.keyPKs(hv) {
		out = append(out, c.partOf(pk))
	}
	return out
}

// suffix is the length of what follows the encoded key in c's sort
// keys: the entry tag of an index entry (layout.go).
func (c coll) suffix() int {
	if c.ix == nil {
		return 0
	}
	return tagLen
}

// keyBounds returns the inclusive bounds on c's physical sort key of a
// logical key condition.
func (c coll) keyBounds(kc *expr.KeyCondition, isExpr bool) (lo, hi []byte, err error) {
	if err := engine.CheckKeyCondition(kc, c.hash, c.rng, isExpr); err != nil {
		return nil, nil, err
	}
	if err := c.p.tg.CheckLeadingKey(kc.HashValue); err != nil {
		return nil, nil, err
	}
	prefix := attr.AppendKey(nil, kc.HashValue)
	if len(prefix) > maxSortKey {
		return nil, nil, apierr.Validationf("One or more parameter values were invalid: the key is too large for the remote backend (its encoding exceeds %d bytes)", maxSortKey)
	}
	with := func(v attr.Value) []byte { return attr.AppendKey(append([]byte(nil), prefix...), v) }
	// last is the greatest sort key of the entries whose key encodes to
	// enc: enc itself on the table, enc and the greatest tag on an index.
	last := func(enc []byte) []byte {
		if c.suffix() == 0 {
			return enc
		}
		return top(enc)
	}
	if c.rng.Name == "" {
		return prefix, last(prefix), nil
	}
	if kc.RangeName == "" {
		return prefix, top(prefix), nil
	}
	v := kc.RangeValues[0]
	switch kc.RangeOp {
	case expr.KeyEQ:
		return with(v), last(with(v)), nil
	case expr.KeyLT:
		return prefix, pred(with(v)), nil
	case expr.KeyLE:
		return prefix, last(with(v)), nil
	case expr.KeyGT:
		return append(last(with(v)), 0), top(prefix), nil
	case expr.KeyGE:
		return with(v), top(prefix), nil
	case expr.KeyBetween:
		return with(v), last(with(kc.RangeValues[1])), nil
	case expr.KeyBeginsWith: // on S or B only (CheckKeyCondition)
		enc := with(v)
		// The encoding without its terminator (0x00 0x01) is the prefix of
		// every value that begins with v.
		return enc[:len(enc)-2], top(enc[:len(enc)-2]), nil
	}
	return nil, nil, apierr.New(apierr.Internal, "unknown key condition operator")
}

// keyCond renders the engine key condition of partition part and the
// inclusive sort-key bounds lo and hi (nil: unbounded), over the
// gateway's placeholders, adding their values to names and values.
func (c coll) keyCond(part string, lo, hi []byte, names map[string]string, values map[string]types.AttributeValue) string {
	names["#tenantdb_p"] = c.pkAttr
	values[":tenantdb_p"] = &types.AttributeValueMemberS{Value: part}
	cond := "#tenantdb_p = :tenantdb_p"
	bin := func(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }
	switch {
	case lo != nil && hi != nil:
		names["#tenantdb_s"] = c.skAttr
		values[":tenantdb_lo"], values[":tenantdb_hi"] = bin(lo), bin(hi)
		cond += " AND #tenantdb_s BETWEEN :tenantdb_lo AND :tenantdb_hi"
	case lo != nil:
		names["#tenantdb_s"] = c.skAttr
		values[":tenantdb_lo"] = bin(lo)
		cond += " AND #tenantdb_s >= :tenantdb_lo"
	case hi != nil:
		names["#tenantdb_s"] = c.skAttr
		values[":tenantdb_hi"] = bin(hi)
		cond += " AND #tenantdb_s <= :tenantdb_hi"
	}
	return cond
}

// startKey validates a client's page token (a logical key of the table,
// with an index's key attributes for an index, within its leading keys)
// and returns the engine's key in partition part (its partition key
// attribute(s) set for part) and the token's position: the physical sort
// key of c it names, after which a read resumes in every shard.
func (c coll) startKey(esk attr.Item, part string) (map[string]types.AttributeValue, []byte, error) {
	if esk == nil {
		return nil, nil, nil
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
		return nil, nil, invalid(err)
	}
	if err := c.p.tg.CheckStartKey(c.ix, esk); err != nil {
		return nil, nil, err
	}
	tsk, err := c.p.sortKey(tk)
	if err != nil {
		return nil, nil, err
	}
	phys := map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: part},
		attrSK: &types.AttributeValueMemberB{Value: tsk},
	}
	if c.ix == nil {
		if len(esk) != len(tk) {
			return nil, nil, apierr.Validationf("The provided starting key is invalid: The provided key element does not match the schema")
		}
		return phys, tsk, nil
	}
	n := len(tk)
	var xs []byte
	for _, k := range []schema.KeyAttr{c.hash, c.rng} {
		if k.Name == "" {
			continue
		}
		v, ok := esk[k.Name]
		if !ok || v.Type != k.Type {
			return nil, nil, apierr.Validationf("The provided starting key is invalid: The provided key element does not match the schema")
		}
		if _, dup := tk[k.Name]; !dup {
			n++
		}
		xs = attr.AppendKey(xs, v)
	}
	if len(esk) != n {
		return nil, nil, apierr.Validationf("The provided starting key is invalid: The provided key element does not match the schema")
	}
	xs = append(xs, entryTag(tsk)...)
	// NB: the index entry's table key stays in its own shard's partition
	// key: the engine takes it from the token's table key attributes.
	phys[attrPK] = &types.AttributeValueMemberS{Value: c.p.pkOf(tk)}
	phys[c.pkAttr] = &types.AttributeValueMemberS{Value: part}
	phys[c.skAttr] = &types.AttributeValueMemberB{Value: xs}
	return phys, xs, nil
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

// Query is one engine Query on the shard of the tenant's item collection
// holding the queried partition key, its key condition rewritten onto the
// physical sort key; an index query gathers every shard (gather.go).
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
	lo, hi, err := c.keyBounds(ex.KC, in.KeyConditions == nil)
	if err != nil {
		return nil, err
	}
	parts := c.partsOf(ex.KC.HashValue)
	if len(parts) > 1 {
		return b.gather(ctx, c, parts, lo, hi, in.ExclusiveStartKey, gatherReq{forward: in.ScanIndexForward == nil || *in.ScanIndexForward,
			limit: in.Limit, consistent: in.ConsistentRead, table: in.TableName, want: in.ReturnConsumedCapacity,
			project: project, ex: ex, count: in.Select == "COUNT"})
	}
	gw := c.gatewayFilterFor(ex, in.Select)
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, usedBy(gw, in.FilterExpression, in.ProjectionExpression)...)
	cond := c.keyCond(parts[0], lo, hi, names, values)
	esk, _, err := c.startKey(in.ExclusiveStartKey, parts[0])
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

// Scan is one engine Query of each shard of the tenant's item collection
// (or an index's), gathered (gather.go): it reads no other tenant's
// items. A parallel scan's segment reads the shards j with j mod
// TotalSegments = Segment.
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
	parts := segment(c.parts(), in.Segment, in.TotalSegments)
	if len(parts) == 0 {
		// NB: the page token is still validated, as for any segment.
		if _, _, err := c.startKey(in.ExclusiveStartKey, ""); err != nil {
			return nil, err
		}
		return &wire.ScanOutput{}, nil
	}
	if len(parts) > 1 {
		return b.gather(ctx, c, parts, nil, nil, in.ExclusiveStartKey, gatherReq{forward: true,
			limit: in.Limit, consistent: in.ConsistentRead, table: in.TableName, want: in.ReturnConsumedCapacity,
			project: project, ex: ex, count: in.Select == "COUNT"})
	}
	esk, _, err := c.startKey(in.ExclusiveStartKey, parts[0])
	if err != nil {
		return nil, err
	}
	gw := c.gatewayFilterFor(ex, in.Select)
	names, values := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, usedBy(gw, in.FilterExpression, in.ProjectionExpression)...)
	cond := c.keyCond(parts[0], nil, nil, names, values)
	return b.query(ctx, c, &dynamodb.QueryInput{
		KeyConditionExpression:    &cond,
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

// segment returns the partitions of a parallel scan's segment: shard j
// belongs to segment j mod total, so that segments split the shards
// evenly (segments beyond the shard count read nothing); without
// segments, every partition.
func segment(parts []string, seg, total *int32) []string {
	if total == nil {
		return parts
	}
	var out []string
	for j, p := range parts {
		if int32(j)%*total == *seg {
			out = append(out, p)
		}
	}
	return out
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
