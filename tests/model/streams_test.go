package model

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// Every table of the model has a NEW_AND_OLD_IMAGES stream. At the end,
// each actor replays its own view of each table's stream, shard after
// shard from TRIM_HORIZON, onto an empty table: the result must be the
// actor's model of the table exactly (every committed change recorded, in
// per-key order, nothing of another tenant or environment, nothing of a
// failed write), and every record's old image must be the new image of
// the key's previous record.

// verifyStream replays a's records of table tb and compares them with
// a's model.
func (a *actor) verifyStream(ctx context.Context, srv *harness.Server, cred harness.Credential, tb string) error {
	d, err := a.c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb)})
	if err != nil {
		return a.fail("DescribeTable %s: %v", tb, err)
	}
	arn := aws.ToString(d.Table.LatestStreamArn)
	sc := srv.Streams(cred)
	ds, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		return a.fail("DescribeStream %s: %v", tb, err)
	}
	replay := map[string]item{}
	n := 0
	for _, sh := range ds.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return a.fail("GetShardIterator %s: %v", tb, err)
		}
		for iter := it.ShardIterator; iter != nil; {
			r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				return a.fail("GetRecords %s: %v", tb, err)
			}
			for _, rec := range r.Records {
				n++
				k := keyStr(fromStream(rec.Dynamodb.Keys))
				prev := replay[k]
				old, nu := fromStream(rec.Dynamodb.OldImage), fromStream(rec.Dynamodb.NewImage)
				what := fmt.Sprintf("stream of %s, record %d (%s %s)", tb, n, rec.EventName, k)
				switch {
				case (prev == nil) != (rec.EventName == stypes.OperationTypeInsert):
					return a.fail("%s: the key's previous record says it %s", what, map[bool]string{true: "was absent", false: "existed"}[prev == nil])
				case prev != nil && canon(old) != canon(prev):
					return a.fail("%s: old image %s, previous new image %s", what, describe(old), describe(prev))
				}
				for _, img := range []item{old, nu} {
					if img != nil {
						if err := a.own(what, img); err != nil {
							return err
						}
					}
				}
				if rec.EventName == stypes.OperationTypeRemove {
					delete(replay, k)
				} else {
					replay[k] = nu
				}
			}
			if len(r.Records) == 0 {
				break
			}
			iter = r.NextShardIterator
		}
	}
	a.stats["stream records"] += n
	return a.checkSet("replayed stream of "+tb, replay, a.model[tb])
}

// fromStream converts a streams attribute map to the DynamoDB client's.
func fromStream(m map[string]stypes.AttributeValue) item {
	if m == nil {
		return nil
	}
	out := make(item, len(m))
	for k, v := range m {
		out[k] = fromStreamValue(v)
	}
	return out
}

func fromStreamValue(v stypes.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *stypes.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *stypes.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *stypes.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: v.Value}
	case *stypes.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *stypes.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *stypes.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: v.Value}
	case *stypes.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: v.Value}
	case *stypes.AttributeValueMemberBS:
		return &types.AttributeValueMemberBS{Value: v.Value}
	case *stypes.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: fromStream(v.Value)}
	case *stypes.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = fromStreamValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	return nil
}
