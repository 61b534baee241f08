package remote

import (
	"context"
	"crypto/rand"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Backfilling a global secondary index created by UpdateTable (see
// DESIGN.md, "UpdateTable"). The new index takes the next position of the
// table's Indexes, so its engine slot (position + 1) held nothing for the
// table: every write from the new definition on maintains it (physItem),
// and a job — the same machinery as TTL's sync jobs (ttl.go), under
// gsiJobPK — gives every existing item of every collection of the table
// (the owner's, or every tenant environment's of a shared table) its
// entry, then marks the index ACTIVE. Until then DescribeTable reports it
// CREATING with Backfilling, and a query of it may miss items, as in
// DynamoDB.

// gsiJobPK is the collection of index backfill jobs (sort key: the table
// id, %020d; one index at a time per table, as DynamoDB allows).
const gsiJobPK = "meta#gsi"

// indexPos is the position of the index numbered no in t.Indexes (-1:
// none).
func indexPos(t *schema.Table, no uint16) int {
	for i, ix := range t.Indexes {
		if ix.No == no {
			return i
		}
	}
	return -1
}

// startIndexJob records the backfill of index ix of table t (the new
// definition), before the definition is stored.
func (b *Backend) startIndexJob(ctx context.Context, t *schema.Table, ns []byte, owner tenancy.TenantID, ix *schema.Index) (*ttlJob, error) {
	j := &ttlJob{pk: gsiJobPK, index: ix.No, iname: ix.Name, id: t.ID, gen: make([]byte, 8), name: t.Name, at: b.opts.Now()}
	if !owner.IsZero() {
		j.tenant = owner.String()
	}
	rand.Read(j.gen)
	if !t.Shared() {
		j.ns = ns
	}
	item := jobKey(gsiJobPK, t.ID)
	item["gen"] = &types.AttributeValueMemberB{Value: j.gen}
	item["name"] = &types.AttributeValueMemberS{Value: t.Name}
	item["index"] = num(int(ix.No))
	item["iname"] = &types.AttributeValueMemberS{Value: ix.Name}
	item["at"] = num64(j.at.UnixMilli())
	if j.tenant != "" {
		item["tenant"] = &types.AttributeValueMemberS{Value: j.tenant}
	}
	if j.ns != nil {
		item["ns"] = &types.AttributeValueMemberB{Value: j.ns}
	}
	if _, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: item}); err != nil {
		return nil, engineErr(err, strip)
	}
	return j, nil
}

// backfillPage gives up to ttlJobPage items of partition pk after sort
// key after (nil: its start) their entry of the index numbered no — or
// removes the entry of an item that has no index key (written by a
// gateway that did not know the index yet over one that did) — on
// condition that the index key attributes are still what was read (a
// write since has maintained the entry itself). It returns the entries
// written and the sort key to resume after (nil: the partition is done).
// An item whose index key is too large for the engine gets no entry (it
// is logged).
func (b *Backend) backfillPage(ctx context.Context, t *schema.Table, no uint16, pk string, after []byte) (int, []byte, error) {
	pos := indexPos(t, no)
	ix := t.Indexes[pos]
	slot := slotOf(pos)
	in := b.partitionQuery(pk)
	names := in.ExpressionAttributeNames
	names["#x"], names["#h"] = slot.pk, ix.Hash.Name
	filter := "attribute_exists(#x) OR attribute_exists(#h)"
	if ix.Range.Name != "" {
		names["#r"] = ix.Range.Name
		filter = "attribute_exists(#x) OR (attribute_exists(#h) AND attribute_exists(#r))"
	}
	in.FilterExpression, in.Limit = &filter, aws.Int32(ttlJobPage)
	if after != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{attrPK: in.ExpressionAttributeValues[":p"], attrSK: &types.AttributeValueMemberB{Value: after}}
	}
	res, err := b.db.Query(ctx, in)
	if err != nil {
		return 0, nil, engineErr(err, strip)
	}
	n := 0
	for _, raw := range res.Items {
		sk, ok := raw[attrSK].(*types.AttributeValueMemberB)
		if !ok {
			continue
		}
		key := physKeyOf(raw)
		oldXS, _ := raw[slot.sk].(*types.AttributeValueMemberB)
		item := strip(raw)
		hv, hok := item[ix.Hash.Name]
		rv, rok := item[ix.Range.Name]
		if !hok || hv.Type != ix.Hash.Type || (ix.Range.Name != "" && (!rok || rv.Type != ix.Range.Type)) {
			// Not indexed (DynamoDB skips an item whose index key is
			// missing or of another type): a stale entry is removed.
			if oldXS == nil {
				continue
			}
			un := map[string]string{"#x": slot.pk, "#y": slot.sk, "#v": attrVersion, "#h": ix.Hash.Name}
			vals := map[string]types.AttributeValue{":old": oldXS, ":v": newVersion(), ":ht": &types.AttributeValueMemberS{Value: ix.Hash.Type.String()}}
			indexed := "attribute_type(#h, :ht)"
			if ix.Range.Name != "" {
				un["#r"] = ix.Range.Name
				vals[":rt"] = &types.AttributeValueMemberS{Value: ix.Range.Type.String()}
				indexed += " AND attribute_type(#r, :rt)"
			}
			if err := b.backfillUpdate(ctx, key, "REMOVE #x, #y SET #v = :v", "#y = :old AND NOT ("+indexed+")", un, vals); err != nil {
				return n, nil, err
			}
			n++
			continue
		}
		xs := attr.AppendKey(nil, hv)
		cond := "#h = :h"
		values := map[string]types.AttributeValue{":h": toAV(hv), ":v": newVersion()}
		if ix.Range.Name != "" {
			xs = attr.AppendKey(xs, rv)
			cond += " AND #r = :r"
			values[":r"] = toAV(rv)
		}
		xs = append(xs, entryTag(sk.Value)...)
		if oldXS != nil && string(oldXS.Value) == string(xs) {
			continue // maintained by a write already
		}
		if len(xs) > maxSortKey {
			b.log.Warn("backfilling an index: an item's index key is too large for the remote backend", "table", t.ID, "index", ix.Name)
			continue
		}
		values[":xp"] = &types.AttributeValueMemberS{Value: indexPart(pk, ix)}
		values[":xs"] = &types.AttributeValueMemberB{Value: xs}
		un := map[string]string{"#h": ix.Hash.Name, "#x": slot.pk, "#y": slot.sk, "#v": attrVersion}
		if ix.Range.Name != "" {
			un["#r"] = ix.Range.Name
		}
		if err := b.backfillUpdate(ctx, key, "SET #x = :xp, #y = :xs, #v = :v", cond, un, values); err != nil {
			return n, nil, err
		}
		n++
	}
	var last []byte
	if s, ok := res.LastEvaluatedKey[attrSK].(*types.AttributeValueMemberB); ok {
		last = s.Value
	}
	return n, last, nil
}

// indexBackfilled marks j's index ACTIVE in the definition t read from
// the engine (a conditional put: a concurrent change makes the job's next
// step try again).
func (b *Backend) indexBackfilled(ctx context.Context, j *ttlJob, t *schema.Table) error {
	pos := indexPos(t, j.index)
	if pos < 0 || !t.Indexes[pos].Backfilling {
		return nil
	}
	c := t.Clone()
	c.Indexes[pos].Status, c.Indexes[pos].Backfilling = "ACTIVE", false
	if err := b.putDef(ctx, c, j.ns, t); err != nil {
		return err
	}
	b.res.Publish(c)
	return nil
}

// backfillUpdate applies one item's backfill update; a failed condition
// (the item changed since it was read, and the write maintained the
// entry) is no error.
func (b *Backend) backfillUpdate(ctx context.Context, key map[string]types.AttributeValue, upd, cond string, names map[string]string, values map[string]types.AttributeValue) error {
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &b.table,
		Key:                       key,
		UpdateExpression:          &upd,
		ConditionExpression:       &cond,
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return engineErr(err, strip)
	}
	return nil
}
