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
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// An update that moves a secondary index's key cannot be left to the
// engine: the index entry's physical key (an encoding of the new value,
// see layout.go) must change with it, and only the gateway can compute
// it. Such an update is computed by the gateway from the item it reads
// and written back with a put conditioned on the client's condition AND
// the version it read (attrVersion, which every write of a table with
// indexes renews). The engine's condition, not a gateway lock, makes it
// atomic: a concurrent write changes the version, the put fails, and the
// gateway reads again.

var errIndexKey = errors.New("the update changes a secondary index key")

// maxRetries bounds the read-compute-put rounds of one update under
// contention.
const maxRetries = 32

// computed is an update computed by the gateway.
type computed struct {
	old, neu attr.Item
	paths    []expr.Path
	put      map[string]types.AttributeValue
	// cond, names and values condition the put on the client's condition
	// and on the version read.
	cond   string
	names  map[string]string
	values map[string]types.AttributeValue
	ver    []byte // the version read (nil: none, or no item)
	exists bool
	units  float64 // of the read
}

// compute reads the item (strongly consistent) and applies the update.
func (b *Backend) compute(ctx context.Context, p place, key map[string]types.AttributeValue, logicalKey attr.Item, upd string, cond *string, names map[string]string, values map[string]attr.Value) (*computed, error) {
	params := expr.NewParams(names, values)
	u, err := params.Update(upd)
	if err != nil {
		return nil, err
	}
	if cond != nil && *cond != "" {
		if _, err := params.Condition(*cond); err != nil {
			return nil, err
		}
	}
	if err := params.CheckUnused(); err != nil {
		return nil, err
	}
	res, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	c := &computed{exists: res.Item != nil, units: units(res.ConsumedCapacity)}
	if v, ok := res.Item[attrVersion].(*types.AttributeValueMemberB); ok {
		c.ver = v.Value
	}
	c.old = strip(res.Item)
	base := c.old
	if base == nil {
		base = attr.CloneItem(logicalKey)
	}
	if c.neu, c.paths, err = u.Apply(base); err != nil {
		return nil, err
	}
	if attr.ItemSize(c.neu) > schema.MaxItemBytes {
		return nil, apierr.Validationf("Item size to update has exceeded the maximum allowed size")
	}
	if c.put, err = p.item(c.neu); err != nil {
		return nil, err
	}
	c.names, c.values = keep(names, values, cond)
	var guard string
	switch {
	case !c.exists:
		guard = "attribute_not_exists(#tenantdb_p)"
		c.names["#tenantdb_p"] = attrPK
	case c.ver == nil:
		guard = "attribute_not_exists(#tenantdb_v)"
		c.names["#tenantdb_v"] = attrVersion
	default:
		c.names["#tenantdb_v"] = attrVersion
		guard = "#tenantdb_v = :tenantdb_v"
		c.values[":tenantdb_v"] = &types.AttributeValueMemberB{Value: c.ver}
	}
	if len(c.values) == 0 {
		c.values = nil // the engine refuses an empty map
	}
	c.cond = guard
	if cond != nil && *cond != "" {
		c.cond = "(" + *cond + ") AND " + guard
	}
	return c, nil
}

// moved reports whether the item the engine holds now (an ALL_OLD of a
// failed condition) is not the one c was computed from.
func (c *computed) moved(cur map[string]types.AttributeValue) bool {
	if (cur != nil) != c.exists {
		return true
	}
	if cur == nil {
		return false
	}
	v, _ := cur[attrVersion].(*types.AttributeValueMemberB)
	if v == nil {
		return c.ver != nil
	}
	return !bytes.Equal(v.Value, c.ver)
}

// updateItem serves an UpdateItem that moves an index key (see above).
func (b *Backend) updateItem(ctx context.Context, p place, key map[string]types.AttributeValue, in *wire.UpdateItemInput) (*wire.UpdateItemOutput, error) {
	for range maxRetries {
		c, err := b.compute(ctx, p, key, in.Key, aws.ToString(in.UpdateExpression), in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
		if err != nil {
			return nil, err
		}
		res, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           &b.table,
			Item:                                c.put,
			ConditionExpression:                 &c.cond,
			ExpressionAttributeNames:            c.names,
			ExpressionAttributeValues:           c.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			cur := ccf.Item
			if cur == nil {
				// An engine that does not return the item (dynalite, older
				// Alternator): read it to tell a conflict from the client's
				// condition failing.
				got, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
				if err != nil {
					return nil, engineErr(err, strip)
				}
				cur = got.Item
			}
			if c.moved(cur) {
				continue // a concurrent write: read again
			}
			ccf.Item = cur
			e := apierr.New(apierr.ConditionalCheckFailed, "The conditional request failed")
			if in.ReturnValuesOnConditionCheckFailure == "ALL_OLD" && ccf.Item != nil {
				e.Detail = &wire.ConditionalCheckFailedDetail{Item: strip(ccf.Item)}
			}
			return nil, e
		}
		if err != nil {
			return nil, engineErr(err, strip)
		}
		b.meterWrite(p, c.old, c.neu)
		out := &wire.UpdateItemOutput{ConsumedCapacity: capacity(res.ConsumedCapacity, in.TableName, in.ReturnConsumedCapacity)}
		switch in.ReturnValues {
		case "ALL_OLD":
			out.Attributes = c.old
		case "ALL_NEW":
			out.Attributes = c.neu
		case "UPDATED_OLD":
			out.Attributes = expr.ProjectPaths(c.old, c.paths)
		case "UPDATED_NEW":
			out.Attributes = expr.ProjectPaths(c.neu, c.paths)
		}
		if len(out.Attributes) == 0 {
			out.Attributes = nil
		}
		out.U = wire.Usage{ReadUnits: c.units, WriteUnits: units(res.ConsumedCapacity), Table: in.TableName}
		return out, nil
	}
	return nil, apierr.New(apierr.ProvisionedThroughputExceeded, "The item was updated concurrently %d times while this update was computed; retry", maxRetries)
}
