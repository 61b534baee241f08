package remote

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Moves of items between shards (a change of a collection's shard count,
// DESIGN.md "Changing the shard count") are not the tenant's changes, and
// the Streams of its table do not show them (DESIGN.md, "Streams",
// "Moves"). A move marks the copy it leaves and the copy it makes:
//
//  1. the old copy gets tenantdb:mo (and a new version, so that every
//     write that read it before fails its guard and reads it again): a
//     MODIFY of the gateway's attributes only, which readers drop;
//  2. one transaction deletes the old copy (still that version, still
//     marked) and puts the new one with tenantdb:mi and without
//     tenantdb:mo: readers drop a REMOVE whose old image has
//     tenantdb:mo and an INSERT whose new image has tenantdb:mi.
//
// NB: only a move deletes a marked copy: a client's write that finds an
// item in its old shard during the move phase (marked or not, and a
// delete of a marked one) first completes its move (planMoving), then
// writes the item where it now is, so the stream shows the client's
// change with the item's true old image. Only a move puts a copy with
// tenantdb:mi: every other put builds its item afresh.
const (
	attrMoveOut = "tenantdb:mo"
	attrMoveIn  = "tenantdb:mi"
)

// markedMove moves the engine item raw (read in its old shard) to its new
// shard, if they differ, marking both copies; moved is false if it did
// not move it (same shard, or the item was moved or deleted meanwhile). A
// concurrent write makes it read the item again.
func (b *Backend) markedMove(ctx context.Context, p place, raw map[string]types.AttributeValue) (moved bool, err error) {
	for range maxRetries {
		key, err := p.logicalKey(raw)
		if err != nil {
			return false, err
		}
		from, _ := raw[attrPK].(*types.AttributeValueMemberS)
		to := p.pkOf(key)
		if from == nil || from.Value == to {
			return false, nil
		}
		oldKey := physKeyOf(raw)
		if _, ok := raw[attrMoveOut]; !ok {
			marked, err := b.markMoving(ctx, raw)
			if err != nil {
				return false, err
			}
			if marked == nil {
				if raw, err = b.reread(ctx, oldKey); raw == nil || err != nil {
					return false, err
				}
				continue
			}
			raw = marked
		}
		put := relocate(p, cloneRaw(raw), to)
		delete(put, attrMoveOut)
		put[attrMoveIn] = raw[attrMoveOut]
		names := map[string]string{"#tenantdb_v": attrVersion, "#tenantdb_mo": attrMoveOut}
		_, err = b.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: &b.table, Key: oldKey,
				ConditionExpression:       aws.String("#tenantdb_v = :tenantdb_v AND #tenantdb_mo = :tenantdb_mo"),
				ExpressionAttributeNames:  names,
				ExpressionAttributeValues: map[string]types.AttributeValue{":tenantdb_v": raw[attrVersion], ":tenantdb_mo": raw[attrMoveOut]}}},
			{Put: &types.Put{TableName: &b.table, Item: put, ConditionExpression: aws.String("attribute_not_exists(#tenantdb_p)"), ExpressionAttributeNames: map[string]string{"#tenantdb_p": attrPK}}},
		}})
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return err == nil, engineErr(err, strip)
		}
		if raw, err = b.reread(ctx, oldKey); raw == nil || err != nil {
			return false, err // moved by a write meanwhile
		}
	}
	return false, apierr.New(apierr.ProvisionedThroughputExceeded, "an item was written concurrently %d times while it was moved to its new shard", maxRetries)
}

// markMoving marks the old copy raw as moving (a new version and
// tenantdb:mo, on condition that it is still the version read) and
// returns it as marked; nil if it changed since it was read.
func (b *Backend) markMoving(ctx context.Context, raw map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	names := map[string]string{"#tenantdb_p": attrPK, "#tenantdb_v": attrVersion, "#tenantdb_mo": attrMoveOut}
	ver, mark := newVersion(), newVersion()
	values := map[string]types.AttributeValue{":nv": ver, ":mo": mark}
	guard := "attribute_exists(#tenantdb_p) AND attribute_not_exists(#tenantdb_v)"
	if v, ok := raw[attrVersion].(*types.AttributeValueMemberB); ok {
		guard = "attribute_exists(#tenantdb_p) AND #tenantdb_v = :tenantdb_v"
		values[":tenantdb_v"] = &types.AttributeValueMemberB{Value: v.Value}
	}
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: physKeyOf(raw),
		UpdateExpression:          aws.String("SET #tenantdb_v = :nv, #tenantdb_mo = :mo"),
		ConditionExpression:       &guard,
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return nil, nil
		}
		return nil, engineErr(err, strip)
	}
	marked := cloneRaw(raw)
	marked[attrVersion], marked[attrMoveOut] = ver, mark
	return marked, nil
}

// reread reads the engine item at key (strongly consistent); nil if it
// is gone.
func (b *Backend) reread(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	got, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	return got.Item, nil
}

// moveRecord reports whether an engine stream record of event (INSERT,
// MODIFY, REMOVE) with images newImg and oldImg is one of a move's
// copies (see above); ttl: the engine's TTL deleted the item, which is a
// change even of a marked copy.
func moveRecord(event string, newImg, oldImg map[string]types.AttributeValue, ttl bool) bool {
	switch event {
	case "INSERT":
		_, ok := newImg[attrMoveIn]
		return ok
	case "REMOVE":
		_, ok := oldImg[attrMoveOut]
		return ok && !ttl
	}
	return false
}
