package gateways

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestStreamLifetimeAcrossGateways: a stream enabled with UpdateTable
// through one gateway on a table with items shows only the changes made
// after it (written through either gateway), in the view type asked; an
// index backfill's writes to the items (the gateway's own attributes)
// are not changes; disabled through one gateway, the other shows it
// DISABLED at once, stops its readers at the first change made after it,
// and a stream enabled again is a new stream, listed after the old one.
func TestStreamLifetimeAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := g0.NewTenant(t, "lifetime", "admin")
	d0, d1 := g0.Client(app), g1.Client(app)
	s0, s1 := g0.Streams(app), g1.Streams(app)
	const table = "lifetime_t"
	if _, err := d0.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	put := func(c *dynamodb.Client, pk, v string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}, "g": &types.AttributeValueMemberS{Value: "x"}}}); err != nil {
			t.Fatal(err)
		}
	}
	put(d0, "before", "1")
	time.Sleep(1100 * time.Millisecond) // the engine's record times have whole seconds
	up, err := d1.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
	if err != nil {
		t.Fatal(err)
	}
	arn1 := aws.ToString(up.TableDescription.LatestStreamArn)
	put(d0, "after", "1")
	put(d1, "before", "2")
	// A GSI created now backfills "before" and "after" (the gateway's
	// own attributes): no change of the logical items.
	if _, err := d0.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("by_g"), KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		d, err := d1.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Table.GlobalSecondaryIndexes) == 1 && d.Table.GlobalSecondaryIndexes[0].IndexStatus == types.IndexStatusActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index backfill did not finish")
		}
		time.Sleep(100 * time.Millisecond)
	}

	read := func(sc *dynamodbstreams.Client, arn string) (string, []*string) {
		t.Helper()
		d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var nexts []*string
		for _, sh := range d.StreamDescription.Shards {
			it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId,
				ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				t.Fatal(err)
			}
			iter := it.ShardIterator
			for iter != nil {
				r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
				if err != nil {
					t.Fatal(err)
				}
				for _, rec := range r.Records {
					if rec.Dynamodb.NewImage != nil || rec.Dynamodb.OldImage != nil || rec.Dynamodb.StreamViewType != stypes.StreamViewTypeKeysOnly {
						t.Errorf("a KEYS_ONLY record with images: %+v", rec.Dynamodb)
					}
					got = append(got, string(rec.EventName)+" "+rec.Dynamodb.Keys["pk"].(*stypes.AttributeValueMemberS).Value)
				}
				if len(r.Records) == 0 {
					nexts = append(nexts, r.NextShardIterator)
					break
				}
				iter = r.NextShardIterator
			}
		}
		return strings.Join(got, ","), nexts
	}
	want := "INSERT after,MODIFY before"
	if got, _ := read(s0, arn1); got != want {
		t.Errorf("through gateway 0: %q, want %q", got, want)
	}
	got, nexts := read(s1, arn1)
	if got != want {
		t.Errorf("through gateway 1: %q, want %q", got, want)
	}

	// Disabled through gateway 0: gateway 1 shows it at once.
	if _, err := d0.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}); err != nil {
		t.Fatal(err)
	}
	ds, err := s1.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn1)})
	if err != nil || ds.StreamDescription.StreamStatus != stypes.StreamStatusDisabled {
		t.Fatalf("gateway 1 after the disable: %+v %v", ds, err)
	}
	time.Sleep(1100 * time.Millisecond)
	put(d1, "late", "1")
	for _, it := range nexts {
		r, err := s1.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it})
		if err != nil || len(r.Records) != 0 || r.NextShardIterator != nil {
			t.Errorf("a reader of the disabled stream after a later change: %+v %v, want no record and the end", r, err)
		}
	}

	// Enabled again: a new stream; both listed, the old one first.
	time.Sleep(1100 * time.Millisecond)
	up, err = d1.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
	if err != nil {
		t.Fatal(err)
	}
	arn2 := aws.ToString(up.TableDescription.LatestStreamArn)
	if arn2 == arn1 {
		t.Fatal("re-enabling gave the old stream's ARN")
	}
	put(d0, "again", "1")
	ls, err := s0.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(table)})
	if err != nil || len(ls.Streams) != 2 || aws.ToString(ls.Streams[0].StreamArn) != arn1 || aws.ToString(ls.Streams[1].StreamArn) != arn2 {
		t.Fatalf("ListStreams: %+v %v", ls, err)
	}
	if got, _ := read(s0, arn2); got != "INSERT again" {
		t.Errorf("the new stream: %q, want only the change made after it", got)
	}
}
