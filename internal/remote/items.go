package remote

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// open resolves a data-plane table for s: the resolver decides policy,
// visibility and the namespace; the place is where the Target's items
// live.
func (b *Backend) open(ctx context.Context, s tenancy.Scope, name string) (place, error) {
	if err := check(ctx, s); err != nil {
		return place{}, err
	}
	tg, err := b.res.Open(ctx, s, name)
	if err != nil {
		return place{}, err
	}
	lay, err := b.layoutOf(ctx, tg.Namespace, tg.Table.ID)
	if err != nil {
		return place{}, err
	}
	if lay.fence != "" {
		return place{}, errRewinding(tg.Table.Name, lay)
	}
	return placeOf(tg, lay), nil
}

// openW is open for a write: the collection is registered first, so that
// a deleted tenant's data can be found (tenants.go).
func (b *Backend) openW(ctx context.Context, s tenancy.Scope, name string) (place, error) {
	p, err := b.open(ctx, s, name)
	if err != nil {
		return place{}, err
	}
	fresh, err := b.registerColl(ctx, p.tg)
	if err != nil {
		return place{}, err
	}
	if fresh {
		// NB: the layout read before may predate the entry, which has the
		// shard count set for the collection.
		return b.open(ctx, s, name)
	}
	return p, nil
}

// key validates a logical key a request names (schema and leading keys)
// and returns its engine key.
func (p place) key(key attr.Item) (map[string]types.AttributeValue, error) {
	if err := p.tg.Table.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := p.tg.CheckKey(key); err != nil {
		return nil, err
	}
	return p.physKey(key)
}

// item validates an item being written and returns its engine item.
func (p place) item(item attr.Item) (map[string]types.AttributeValue, error) {
	if err := p.tg.Table.ValidateItemKeys(item); err != nil {
		return nil, err
	}
	if err := p.tg.CheckItem(item); err != nil {
		return nil, err
	}
	return p.physItem(item)
}

// The placeholders the gateway adds to a client's expressions; a client
// may not use them.
const (
	phPrefixName  = "#tenantdb_"
	phPrefixValue = ":tenantdb_"
)

func checkPlaceholders(names map[string]string, values map[string]attr.Value) error {
	for n := range names {
		if len(n) >= len(phPrefixName) && n[:len(phPrefixName)] == phPrefixName {
			return apierr.Validationf("ExpressionAttributeNames contains invalid key: %s is reserved by tenantdb", n)
		}
	}
	for n := range values {
		if len(n) >= len(phPrefixValue) && n[:len(phPrefixValue)] == phPrefixValue {
			return apierr.Validationf("ExpressionAttributeValues contains invalid key: %s is reserved by tenantdb", n)
		}
	}
	return nil
}

func legacy(name string, used bool) error {
	if used {
		return notServed("The legacy parameter " + name)
	}
	return nil
}

// capacity is what the engine reported, as the client sees it (the
// logical table's name) and as quotas and metering count it.
func capacity(cc *types.ConsumedCapacity, table, want string) *wire.ConsumedCapacity {
	if cc == nil || (want != "TOTAL" && want != "INDEXES") {
		return nil
	}
	units := aws.ToFloat64(cc.CapacityUnits)
	out := &wire.ConsumedCapacity{TableName: table, CapacityUnits: units}
	if want == "INDEXES" {
		out.Table = &wire.Capacity{CapacityUnits: units}
	}
	return out
}

func units(cc *types.ConsumedCapacity) float64 {
	if cc == nil {
		return 0
	}
	return aws.ToFloat64(cc.CapacityUnits)
}

func str(p *string) *string {
	if p == nil || *p == "" {
		return nil
	}
	return p
}

// PutItem writes an item with the engine's conditional put.
func (b *Backend) PutItem(ctx context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error) {
	if err := legacy("Expected", len(in.Expected) > 0 || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	p, err := b.openW(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	item, err := p.item(in.Item)
	if err != nil {
		return nil, err
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	if pks := p.keyPKs(in.Item[p.tg.Table.Hash.Name]); len(pks) > 1 {
		w, err := b.movingWrite(ctx, p, pks, putMutation(in))
		if err != nil {
			return nil, err
		}
		out := &wire.PutItemOutput{ConsumedCapacity: capacity(&types.ConsumedCapacity{CapacityUnits: aws.Float64(w.units)}, in.TableName, in.ReturnConsumedCapacity)}
		if in.ReturnValues == "ALL_OLD" {
			out.Attributes = w.old
		}
		out.U = wire.Usage{WriteUnits: w.units, Table: in.TableName}
		return out, nil
	}
	res, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           &b.table,
		Item:                                item,
		ConditionExpression:                 str(in.ConditionExpression),
		ExpressionAttributeNames:            in.ExpressionAttributeNames,
		ExpressionAttributeValues:           toValues(in.ExpressionAttributeValues),
		ReturnValues:                        types.ReturnValueAllOld, // storage metering (storage.go); no extra capacity
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure),
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, b.observe(p))
	if err != nil {
		return nil, b.oldOnFailure(ctx, engineErr(err, strip), physKeyOf(item), in.ReturnValuesOnConditionCheckFailure)
	}
	old := strip(res.Attributes)
	b.meterWrite(p, old, in.Item)
	out := &wire.PutItemOutput{Attributes: returned(in.ReturnValues, old), ConsumedCapacity: capacity(res.ConsumedCapacity, in.TableName, in.ReturnConsumedCapacity)}
	out.U = wire.Usage{WriteUnits: units(res.ConsumedCapacity), Table: in.TableName}
	return out, nil
}

// GetItem reads an item by its engine key.
func (b *Backend) GetItem(ctx context.Context, s tenancy.Scope, in *wire.GetItemInput) (*wire.GetItemOutput, error) {
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	key, err := p.key(in.Key)
	if err != nil {
		return nil, err
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, nil); err != nil {
		return nil, err
	}
	pe, names, err := projection(in.AttributesToGet, in.ProjectionExpression, in.ExpressionAttributeNames)
	if err != nil {
		return nil, err
	}
	if pks := p.keyPKs(in.Key[p.tg.Table.Hash.Name]); len(pks) > 1 {
		// NB: old partition first: an item only moves from old to new.
		_, raw, u, err := b.locate(ctx, p, in.Key, pks, aws.ToBool(in.ConsistentRead))
		if err != nil {
			return nil, err
		}
		item := strip(raw)
		if pe != nil && *pe != "" && item != nil {
			proj, err := expr.NewParams(names, nil).Projection(*pe)
			if err != nil {
				return nil, err
			}
			item = proj.Apply(item)
		}
		out := &wire.GetItemOutput{Item: item, ConsumedCapacity: capacity(&types.ConsumedCapacity{CapacityUnits: aws.Float64(u)}, in.TableName, in.ReturnConsumedCapacity)}
		out.U = wire.Usage{ReadUnits: u, Table: in.TableName}
		return out, nil
	}
	res, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &b.table,
		Key:                      key,
		ConsistentRead:           in.ConsistentRead,
		ProjectionExpression:     str(pe),
		ExpressionAttributeNames: names,
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	out := &wire.GetItemOutput{Item: strip(res.Item), ConsumedCapacity: capacity(res.ConsumedCapacity, in.TableName, in.ReturnConsumedCapacity)}
	out.U = wire.Usage{ReadUnits: units(res.ConsumedCapacity), Table: in.TableName}
	return out, nil
}

// DeleteItem deletes an item with the engine's conditional delete.
func (b *Backend) DeleteItem(ctx context.Context, s tenancy.Scope, in *wire.DeleteItemInput) (*wire.DeleteItemOutput, error) {
	if err := legacy("Expected", len(in.Expected) > 0 || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	key, err := p.key(in.Key)
	if err != nil {
		return nil, err
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	if pks := p.keyPKs(in.Key[p.tg.Table.Hash.Name]); len(pks) > 1 {
		w, err := b.movingWrite(ctx, p, pks, deleteMutation(in))
		if err != nil {
			return nil, err
		}
		out := &wire.DeleteItemOutput{ConsumedCapacity: capacity(&types.ConsumedCapacity{CapacityUnits: aws.Float64(w.units)}, in.TableName, in.ReturnConsumedCapacity)}
		if in.ReturnValues == "ALL_OLD" {
			out.Attributes = w.old
		}
		out.U = wire.Usage{WriteUnits: w.units, Table: in.TableName}
		return out, nil
	}
	res, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           &b.table,
		Key:                                 key,
		ConditionExpression:                 str(in.ConditionExpression),
		ExpressionAttributeNames:            in.ExpressionAttributeNames,
		ExpressionAttributeValues:           toValues(in.ExpressionAttributeValues),
		ReturnValues:                        types.ReturnValueAllOld, // storage metering (storage.go); no extra capacity
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure),
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, b.observe(p))
	if err != nil {
		return nil, b.oldOnFailure(ctx, engineErr(err, strip), key, in.ReturnValuesOnConditionCheckFailure)
	}
	old := strip(res.Attributes)
	b.meterWrite(p, old, nil)
	out := &wire.DeleteItemOutput{Attributes: returned(in.ReturnValues, old), ConsumedCapacity: capacity(res.ConsumedCapacity, in.TableName, in.ReturnConsumedCapacity)}
	out.U = wire.Usage{WriteUnits: units(res.ConsumedCapacity), Table: in.TableName}
	return out, nil
}

// setKeyword finds the SET clause of an update expression (SET is a
// reserved word, so outside a placeholder it is always the keyword).
var setKeyword = regexp.MustCompile(`(?i)(^|[^#:\w])SET\b`)

// update rewrites an update expression for the engine: the logical key
// attributes are set too (to the values they already have), so that an
// UpdateItem creating the item stores them as DynamoDB does. It refuses
// an update of a key attribute, which the engine, seeing only physical
// keys, would allow.
//
// It reports errIndexKey when the update changes a secondary index's key
// attribute: the gateway must then compute the item itself (update.go).
func (p place) update(key attr.Item, upd string, names map[string]string, values map[string]attr.Value) (string, map[string]string, map[string]types.AttributeValue, error) {
	if upd != "" {
		params := expr.NewParams(names, values)
		u, err := params.Update(upd)
		if err != nil {
			return "", nil, nil, err
		}
		for _, path := range u.Paths() {
			if strings.HasPrefix(path.Top(), reservedPrefix) {
				return "", nil, nil, reservedName(path.Top())
			}
			for _, k := range p.tg.Table.KeyNames() {
				if path.Top() == k {
					return "", nil, nil, apierr.Validationf("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", k)
				}
			}
		}
		for _, path := range u.Paths() {
			for _, ix := range p.tg.Table.Indexes {
				if path.Top() == ix.Hash.Name || (ix.Range.Name != "" && path.Top() == ix.Range.Name) {
					return "", nil, nil, errIndexKey
				}
			}
		}
	}
	n2 := make(map[string]string, len(names)+2)
	for k, v := range names {
		n2[k] = v
	}
	v2 := toValues(values)
	if v2 == nil {
		v2 = make(map[string]types.AttributeValue, 2)
	}
	upd, err := p.mirrorUpdate(upd, expr.NewParams(names, values), n2, v2)
	if err != nil {
		return "", nil, nil, err
	}
	set := ""
	for i, k := range p.tg.Table.KeyNames() {
		ph := strconv.Itoa(i)
		n2[phPrefixName+ph] = k
		v2[phPrefixValue+ph] = toAV(key[k])
		if set != "" {
			set += ", "
		}
		set += phPrefixName + ph + " = " + phPrefixValue + ph
	}
	if len(p.tg.Table.Indexes) > 0 {
		n2[phPrefixName+"v"] = attrVersion
		v2[phPrefixValue+"v"] = newVersion()
		set += ", " + phPrefixName + "v = " + phPrefixValue + "v"
	}
	if loc := setKeyword.FindStringIndex(upd); loc != nil {
		upd = upd[:loc[1]] + " " + set + "," + upd[loc[1]:]
	} else {
		upd = "SET " + set + " " + upd
	}
	return upd, n2, v2, nil
}

// UpdateItem is the engine's UpdateItem on the engine key: its
// arithmetic and condition are atomic in the engine.
func (b *Backend) UpdateItem(ctx context.Context, s tenancy.Scope, in *wire.UpdateItemInput) (*wire.UpdateItemOutput, error) {
	if err := legacy("AttributeUpdates", len(in.AttributeUpdates) > 0); err != nil {
		return nil, err
	}
	if err := legacy("Expected", len(in.Expected) > 0 || in.ConditionalOperator != ""); err != nil {
		return nil, err
	}
	p, err := b.openW(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	key, err := p.key(in.Key)
	if err != nil {
		return nil, err
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	upd, names, values, err := p.update(in.Key, aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil && err != errIndexKey {
		return nil, err
	}
	if pks := p.keyPKs(in.Key[p.tg.Table.Hash.Name]); len(pks) > 1 {
		return b.movingUpdate(ctx, p, pks, in)
	}
	if err == errIndexKey {
		return b.updateItem(ctx, p, key, in)
	}
	cond, onFailure := str(in.ConditionExpression), in.ReturnValuesOnConditionCheckFailure
	deletesOnly := deletesOnly(in)
	if deletesOnly {
		// NB: DynamoDB creates nothing when an update that only removes
		// attributes or deletes from sets meets a missing item; the
		// gateway's SET of the key attributes would create it, so such an
		// update requires the item to exist, and a missing item is then
		// answered here (missingItemUpdate).
		names[phPrefixName+"e"] = attrPK
		exists := "attribute_exists(" + phPrefixName + "e)"
		if cond != nil {
			exists = "(" + *cond + ") AND " + exists
		}
		cond = &exists
	}
	res, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &b.table,
		Key:                                 key,
		UpdateExpression:                    &upd,
		ConditionExpression:                 cond,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllOld, // storage metering (storage.go); no extra capacity
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(onFailure),
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, b.observe(p))
	if err != nil && deletesOnly {
		if out, ok, merr := b.missingItemUpdate(ctx, err, key, in); ok {
			return out, merr
		}
	}
	if err != nil {
		return nil, b.oldOnFailure(ctx, engineErr(err, strip), key, in.ReturnValuesOnConditionCheckFailure)
	}
	attrs, err := b.meterUpdate(ctx, p, key, in, strip(res.Attributes))
	if err != nil {
		return nil, err
	}
	out := &wire.UpdateItemOutput{Attributes: attrs, ConsumedCapacity: capacity(res.ConsumedCapacity, in.TableName, in.ReturnConsumedCapacity)}
	out.U = wire.Usage{WriteUnits: units(res.ConsumedCapacity), Table: in.TableName}
	return out, nil
}

// movingUpdate serves an UpdateItem during a change of shard count
// (move.go), computed by the gateway.
func (b *Backend) movingUpdate(ctx context.Context, p place, pks []string, in *wire.UpdateItemInput) (*wire.UpdateItemOutput, error) {
	var paths []expr.Path
	m, err := updateMutation(in, &paths)
	if err != nil {
		return nil, err
	}
	w, err := b.movingWrite(ctx, p, pks, m)
	if err != nil {
		return nil, err
	}
	out := &wire.UpdateItemOutput{ConsumedCapacity: capacity(&types.ConsumedCapacity{CapacityUnits: aws.Float64(w.units)}, in.TableName, in.ReturnConsumedCapacity)}
	switch in.ReturnValues {
	case "ALL_OLD":
		out.Attributes = w.old
	case "ALL_NEW":
		out.Attributes = w.neu
	case "UPDATED_OLD":
		out.Attributes = expr.ProjectPaths(w.old, paths)
	case "UPDATED_NEW":
		out.Attributes = expr.ProjectPaths(w.neu, paths)
	}
	if len(out.Attributes) == 0 {
		out.Attributes = nil
	}
	out.U = wire.Usage{WriteUnits: w.units, Table: in.TableName}
	return out, nil
}

// deletesOnly reports whether in's update only removes attributes or
// deletes from sets (an update DynamoDB applies to a missing item by
// creating nothing). in's expressions were validated already.
func deletesOnly(in *wire.UpdateItemInput) bool {
	return in.UpdateExpression != nil && deletesOnlyUpdate(*in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
}

// deletesOnlyUpdate reports whether the (validated) update expression upd
// only removes attributes or deletes from sets.
func deletesOnlyUpdate(upd string, names map[string]string, values map[string]attr.Value) bool {
	if upd == "" {
		return false
	}
	u, err := expr.NewParams(names, values).Update(upd)
	if err != nil {
		return false
	}
	d, ok := u.(interface{ DeletesOnly() bool })
	return ok && d.DeletesOnly()
}

// missingItemUpdate answers a deletes-only update whose existence
// condition failed (err, from the engine) when the item is missing: the
// client's own condition decides on the missing item, and nothing is
// written, as in DynamoDB. ok is false if the item exists (the client's
// condition failed on it; the caller reports err).
func (b *Backend) missingItemUpdate(ctx context.Context, err error, key map[string]types.AttributeValue, in *wire.UpdateItemInput) (*wire.UpdateItemOutput, bool, error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || ccf.Item != nil {
		return nil, false, nil
	}
	got, gerr := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
	if gerr != nil {
		return nil, true, engineErr(gerr, strip)
	}
	if got.Item != nil {
		return nil, false, nil
	}
	params := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if in.ConditionExpression != nil {
		c, err := params.Condition(*in.ConditionExpression)
		if err != nil {
			return nil, true, err
		}
		if ok, err := c.Eval(attr.Item{}); err != nil || !ok {
			if err == nil {
				err = apierr.New(apierr.ConditionalCheckFailed, "The conditional request failed")
			}
			return nil, true, err
		}
	}
	// An invalid path is refused as on an existing item (the embedded
	// engine's decision: the update is applied to the empty item).
	u, err := params.Update(*in.UpdateExpression)
	if err != nil {
		return nil, true, err
	}
	if _, _, err := u.Apply(attr.Item{}); err != nil {
		return nil, true, err
	}
	// NB: DynamoDB charges the write it did not need to make.
	out := &wire.UpdateItemOutput{ConsumedCapacity: capacity(&types.ConsumedCapacity{CapacityUnits: aws.Float64(1)}, in.TableName, in.ReturnConsumedCapacity)}
	out.U = wire.Usage{WriteUnits: 1, Table: in.TableName}
	return out, true, nil
}

// oldOnFailure completes a ConditionalCheckFailed error for a client that
// asked for the old item (ReturnValuesOnConditionCheckFailure ALL_OLD)
// when the engine did not return it (dynalite, older Alternator): the
// gateway reads the item after the failure. DynamoDB itself returns it.
func (b *Backend) oldOnFailure(ctx context.Context, err error, key map[string]types.AttributeValue, want string) error {
	if want != "ALL_OLD" || !apierr.Is(err, apierr.ConditionalCheckFailed) {
		return err
	}
	var e *apierr.Error
	if !errors.As(err, &e) || e.Detail != nil {
		return err
	}
	got, gerr := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
	if gerr == nil && got.Item != nil {
		e.Detail = &wire.ConditionalCheckFailedDetail{Item: strip(got.Item)}
	}
	return err
}

// physKeyOf returns the engine key of an engine item.
func physKeyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: item[attrPK], attrSK: item[attrSK]}
}

// check refuses a request no guard admitted, and one already cancelled.
func check(ctx context.Context, s tenancy.Scope) error {
	if !s.Valid() {
		return apierr.New(apierr.AccessDenied, "request is not scoped to a tenant")
	}
	return ctx.Err()
}
