package remote

import (
	"bytes"
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Single-item operations on a collection whose shard count is changing,
// for an item whose shard differs between the two layouts (see
// DESIGN.md, "Changing the shard count"). The item lives in exactly one
// of its two partitions at any time; every write is one engine
// transaction that
//
//   - acts where the item is (read first: old partition, then new), on
//     condition of the client's condition AND that the item is still the
//     version read (or still missing), and
//   - checks that the item is absent from the other partition,
//
// so a condition is always evaluated on the item wherever it is, never on
// a missing item that exists elsewhere. A missing item is created in the
// old partition during phasePrep (gateways that have not seen the change
// yet still read only there) and in the new one during phaseMove; an item
// found in the old partition during phaseMove is moved by the write (a
// delete there and a put in the new one, in the same transaction).

// mutation is a single-item write: compute returns the item after it
// from the item before it (nil: missing); nil after means none (a delete,
// or an update that creates nothing on a missing item).
type mutation struct {
	key     attr.Item
	compute func(old attr.Item) (attr.Item, error)
	cond    *string
	names   map[string]string
	values  map[string]attr.Value
}

// moved is the outcome of a write during a move.
type movedWrite struct {
	old, neu attr.Item
	units    float64
}

// locate reads the item with logical key key in its partitions pks (old
// layout first), strongly consistent: where it is ("" if missing), the
// engine item, and the read units.
func (b *Backend) locate(ctx context.Context, p place, key attr.Item, pks []string, consistent bool) (string, map[string]types.AttributeValue, float64, error) {
	sk, err := p.sortKey(key)
	if err != nil {
		return "", nil, 0, err
	}
	var u float64
	for _, pk := range pks {
		res, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, ConsistentRead: aws.Bool(consistent),
			Key:                    map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: pk}, attrSK: &types.AttributeValueMemberB{Value: sk}},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			return "", nil, u, engineErr(err, strip)
		}
		u += units(res.ConsumedCapacity)
		if res.Item != nil {
			return pk, res.Item, u, nil
		}
	}
	return "", nil, u, nil
}

// movingPlan is a write during a move, ready for the engine: acts[0]
// carries the client's condition (and the guard), the rest check or
// complete the item's place.
type movingPlan struct {
	acts     []types.TransactWriteItem
	raw      map[string]types.AttributeValue // the engine item read (nil: missing)
	old, neu attr.Item
	units    float64 // of the reads
}

// planMoving reads the item of m (in pks: old, new) and plans m's write
// (see above); check makes it a condition check only (m.compute is then
// not used).
func (b *Backend) planMoving(ctx context.Context, p place, pks []string, m mutation, check bool) (*movingPlan, error) {
	sk, err := p.sortKey(m.key)
	if err != nil {
		return nil, err
	}
	keyIn := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: pk}, attrSK: &types.AttributeValueMemberB{Value: sk}}
	}
	at, raw, ru, err := b.locate(ctx, p, m.key, pks, true)
	if err != nil {
		return nil, err
	}
	old := strip(cloneRaw(raw))
	neu := old
	if !check {
		if neu, err = m.compute(old); err != nil {
			return nil, err
		}
	}
	if _, marked := raw[attrMoveOut]; !check && raw != nil && at == pks[0] && p.lay.phase == phaseMove && (marked || neu != nil) {
		// NB: an item written in its old shard while it moves is moved
		// first (as the migrator moves it, marked: streammove.go), then
		// written where it is: the stream shows the client's change, not
		// the move's copies.
		if _, err := b.markedMove(ctx, p, raw); err != nil {
			return nil, err
		}
		return b.planMoving(ctx, p, pks, m, check)
	}
	target := at
	if at == "" {
		target = pks[1]
		if p.lay.phase == phasePrep {
			target = pks[0]
		}
	}
	// The client's condition and the guard, on the item where it is.
	names, values := keep(m.names, m.values, m.cond)
	names["#tenantdb_p"] = attrPK
	guard := "attribute_not_exists(#tenantdb_p)"
	if raw != nil {
		names["#tenantdb_v"] = attrVersion
		guard = "attribute_exists(#tenantdb_p) AND attribute_not_exists(#tenantdb_v)"
		if v, ok := raw[attrVersion].(*types.AttributeValueMemberB); ok {
			guard = "attribute_exists(#tenantdb_p) AND #tenantdb_v = :tenantdb_v"
			values[":tenantdb_v"] = &types.AttributeValueMemberB{Value: v.Value}
		}
	}
	cond := guard
	if m.cond != nil && *m.cond != "" {
		cond = "(" + *m.cond + ") AND " + guard
	}
	if len(values) == 0 {
		values = nil
	}
	absent := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: &b.table, Key: keyIn(pk),
			ConditionExpression: aws.String("attribute_not_exists(#tenantdb_p)"), ExpressionAttributeNames: map[string]string{"#tenantdb_p": attrPK}}}
	}
	other := pks[0]
	if other == target {
		other = pks[1]
	}
	var put map[string]types.AttributeValue
	if neu != nil && !check {
		if attr.ItemSize(neu) > 400*1024 {
			return nil, apierr.Validationf("Item size has exceeded the maximum allowed size")
		}
		if put, err = p.item(neu); err != nil {
			return nil, err
		}
		put[attrVersion] = newVersion()
	}
	allOld := types.ReturnValuesOnConditionCheckFailureAllOld
	plan := &movingPlan{raw: raw, old: old, neu: neu, units: ru}
	switch {
	case check || (neu == nil && raw == nil):
		plan.acts = []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{TableName: &b.table, Key: keyIn(target), ConditionExpression: &cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: allOld}}, absent(other)}
	case neu == nil:
		plan.acts = []types.TransactWriteItem{{Delete: &types.Delete{TableName: &b.table, Key: keyIn(target), ConditionExpression: &cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: allOld}}, absent(other)}
	case raw != nil && target == pks[0] && p.lay.phase == phaseMove:
		// Found in the old partition: moved by this write.
		plan.acts = []types.TransactWriteItem{{Delete: &types.Delete{TableName: &b.table, Key: keyIn(target), ConditionExpression: &cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: allOld}},
			{Put: &types.Put{TableName: &b.table, Item: relocate(p, put, pks[1]),
				ConditionExpression: aws.String("attribute_not_exists(#tenantdb_p)"), ExpressionAttributeNames: map[string]string{"#tenantdb_p": attrPK}}}}
	default:
		plan.acts = []types.TransactWriteItem{{Put: &types.Put{TableName: &b.table, Item: relocate(p, put, target), ConditionExpression: &cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: allOld}}, absent(other)}
	}
	return plan, nil
}

// movingWrite applies m to an item in two partitions (pks: old, new).
func (b *Backend) movingWrite(ctx context.Context, p place, pks []string, m mutation) (*movedWrite, error) {
	for range maxRetries {
		plan, err := b.planMoving(ctx, p, pks, m, false)
		if err != nil {
			return nil, err
		}
		res, err := b.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: plan.acts, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		var tce *types.TransactionCanceledException
		if errors.As(err, &tce) {
			if len(tce.CancellationReasons) > 0 && aws.ToString(tce.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
				r := tce.CancellationReasons[0]
				if changed(plan.raw, r.Item) {
					continue // written or moved concurrently: read again
				}
				e := apierr.New(apierr.ConditionalCheckFailed, "The conditional request failed")
				if plan.old != nil {
					e.Detail = &wire.ConditionalCheckFailedDetail{Item: plan.old}
				}
				return nil, e
			}
			continue // the item appeared in the other partition, or a conflict
		}
		if err != nil {
			return nil, engineErr(err, strip)
		}
		var wu float64
		for _, cc := range res.ConsumedCapacity {
			wu += aws.ToFloat64(cc.CapacityUnits)
		}
		b.meterWrite(p, plan.old, plan.neu)
		return &movedWrite{old: plan.old, neu: plan.neu, units: plan.units + wu}, nil
	}
	return nil, apierr.New(apierr.ProvisionedThroughputExceeded, "The item was written concurrently %d times while its shard changed; retry", maxRetries)
}

// changed reports whether the engine item cur (of a failed condition)
// is not the item read (raw): another write or a move came between.
func changed(raw, cur map[string]types.AttributeValue) bool {
	if (raw == nil) != (cur == nil) {
		return true
	}
	if raw == nil {
		return false
	}
	a, _ := raw[attrVersion].(*types.AttributeValueMemberB)
	c, _ := cur[attrVersion].(*types.AttributeValueMemberB)
	if a == nil || c == nil {
		return a != c
	}
	return !bytes.Equal(a.Value, c.Value)
}

// relocate returns engine item it with its partition key (and its index
// entries') set for the shard whose partition key is pk.
func relocate(p place, it map[string]types.AttributeValue, pk string) map[string]types.AttributeValue {
	if it == nil {
		return nil
	}
	it[attrPK] = &types.AttributeValueMemberS{Value: pk}
	for i, ix := range p.tg.Table.Indexes {
		slot := slotOf(i)
		if _, ok := it[slot.pk]; ok {
			it[slot.pk] = &types.AttributeValueMemberS{Value: indexPart(pk, ix)}
		}
	}
	return it
}

func cloneRaw(m map[string]types.AttributeValue) map[string]types.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// putMutation, deleteMutation and updateMutation are the client's writes.
func putMutation(in *wire.PutItemInput) mutation {
	return mutation{key: in.Item, compute: func(attr.Item) (attr.Item, error) { return in.Item, nil },
		cond: str(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
}

func deleteMutation(in *wire.DeleteItemInput) mutation {
	return mutation{key: in.Key, compute: func(attr.Item) (attr.Item, error) { return nil, nil },
		cond: str(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
}

// updateMutation applies the update expression as DynamoDB does: to the
// item, or to its key when it is missing, creating nothing when the
// update only removes attributes or deletes from sets.
func updateMutation(in *wire.UpdateItemInput, paths *[]expr.Path) (mutation, error) {
	params := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	var u expr.Update
	if upd := aws.ToString(in.UpdateExpression); upd != "" {
		var err error
		if u, err = params.Update(upd); err != nil {
			return mutation{}, err
		}
	}
	if in.ConditionExpression != nil && *in.ConditionExpression != "" {
		if _, err := params.Condition(*in.ConditionExpression); err != nil {
			return mutation{}, err
		}
	}
	if err := params.CheckUnused(); err != nil {
		return mutation{}, err
	}
	only := deletesOnly(in)
	return mutation{key: in.Key, cond: str(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues,
		compute: func(old attr.Item) (attr.Item, error) {
			base := old
			if base == nil {
				base = attr.CloneItem(in.Key)
			}
			if u == nil {
				return base, nil
			}
			neu, ps, err := u.Apply(base)
			if err != nil {
				return nil, err
			}
			*paths = ps
			if old == nil && only {
				return nil, nil
			}
			return neu, nil
		}}, nil
}
