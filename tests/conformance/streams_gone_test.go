package conformance

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
)

// closedShards describes the disabled stream arn until every shard shows
// an EndingSequenceNumber (at once embedded; a gateway knows a shard's
// end once it has read past the disable, internal/remote/DESIGN.md,
// "Streams") and returns its description.
func closedShards(t *testing.T, ctx context.Context, sc *dynamodbstreams.Client, arn string) *stypes.StreamDescription {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		if err != nil {
			t.Fatalf("DescribeStream: %v", err)
		}
		open := 0
		for _, sh := range d.StreamDescription.Shards {
			if sh.SequenceNumberRange == nil || sh.SequenceNumberRange.EndingSequenceNumber == nil {
				open++
			}
		}
		if open == 0 {
			return d.StreamDescription
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeStream of a disabled stream: %d shards still without an end after 30 s: %+v", open, d.StreamDescription.Shards)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// seqLE reports whether sequence number a is at most b (decimal strings).
func seqLE(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a <= b
}

// readClosed reads every shard of d from TRIM_HORIZON, one record per
// page, until its NextShardIterator is null (each must end: d's shards
// are closed), and checks that every record lies within its shard's
// sequence number range.
func readClosed(t *testing.T, ctx context.Context, sc *dynamodbstreams.Client, d *stypes.StreamDescription) []stypes.Record {
	t.Helper()
	var out []stypes.Record
	for _, sh := range d.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: d.StreamArn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatalf("GetShardIterator: %v", err)
		}
		end := aws.ToString(sh.SequenceNumberRange.EndingSequenceNumber)
		pages := 0
		for iter := it.ShardIterator; iter != nil; pages++ {
			if pages > 1000 {
				t.Fatalf("shard %s with EndingSequenceNumber %s never ends", aws.ToString(sh.ShardId), end)
			}
			r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1)})
			if err != nil {
				t.Fatalf("GetRecords: %v", err)
			}
			for _, rec := range r.Records {
				if seq := aws.ToString(rec.Dynamodb.SequenceNumber); !seqLE(seq, end) {
					t.Errorf("record %s after its shard's EndingSequenceNumber %s", seq, end)
				}
			}
			out = append(out, r.Records...)
			iter = r.NextShardIterator
		}
		// Past the end: nothing, and no iterator.
		after, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: d.StreamArn, ShardId: sh.ShardId,
			ShardIteratorType: stypes.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(end)})
		if err != nil {
			t.Fatalf("GetShardIterator AFTER the shard's end: %v", err)
		}
		r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: after.ShardIterator})
		if err != nil || len(r.Records) != 0 || r.NextShardIterator != nil {
			t.Errorf("GetRecords after the shard's end: %d records, next %v, %v", len(r.Records), r.NextShardIterator != nil, err)
		}
	}
	return out
}

// TestStreamsDisabledShardsEnd: a disabled stream's shards are closed:
// DescribeStream shows each one's EndingSequenceNumber, a reader gets
// every record written before the disable and then a null
// NextShardIterator, and nothing written after it.
func TestStreamsDisabledShardsEnd(t *testing.T) {
	srv, c := start(t)
	ctx := ctxT(t)
	sc := streamsClient(srv, srv.Default)
	const name = "streams_ends"
	arn := createStreamTable(t, ctx, c, name, types.StreamViewTypeNewImage)
	put := func(pk string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item("pk", S(pk), "v", S(pk))}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pk := range []string{"a", "b", "c"} {
		put(pk)
	}
	if _, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(name), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // NB: a gateway's records carry whole seconds
	put("after")
	d := closedShards(t, ctx, sc, arn)
	if d.StreamStatus != stypes.StreamStatusDisabled || len(d.Shards) == 0 {
		t.Fatalf("disabled stream: %+v", d)
	}
	if got := describeRecords(readClosed(t, ctx, sc, d)); got != "INSERT a -->a\nINSERT b -->b\nINSERT c -->c\n" {
		t.Errorf("records of the disabled stream:\n%s", got)
	}
	// The same ends on a second look.
	again := closedShards(t, ctx, sc, arn)
	for i := range d.Shards {
		if i >= len(again.Shards) || aws.ToString(again.Shards[i].SequenceNumberRange.EndingSequenceNumber) != aws.ToString(d.Shards[i].SequenceNumberRange.EndingSequenceNumber) {
			t.Errorf("shard %d's end moved: %+v then %+v", i, d.Shards, again.Shards)
		}
	}
}

// TestStreamsOfDeletedTable: the stream of a deleted table stays listed
// (with the table's name), described (DISABLED, closed shards, the
// table's key schema) and readable (every change made before the
// deletion, none of the deletion's own) until retention; a new table of
// the same name has a stream of its own, and neither shows the other's
// changes.
func TestStreamsOfDeletedTable(t *testing.T) {
	srv, c := start(t)
	ctx := ctxT(t)
	sc := streamsClient(srv, srv.Default)
	const name = "streams_gone"
	old := createStreamTable(t, ctx, c, name, types.StreamViewTypeNewAndOldImages)
	put := func(pk, v string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item("pk", S(pk), "v", S(v))}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "1")
	put("b", "1")
	put("a", "2")
	if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	listed := func(table string) []string {
		t.Helper()
		in := &dynamodbstreams.ListStreamsInput{}
		if table != "" {
			in.TableName = aws.String(table)
		}
		ls, err := sc.ListStreams(ctx, in)
		if err != nil {
			t.Fatalf("ListStreams %q: %v", table, err)
		}
		var out []string
		for _, s := range ls.Streams {
			if aws.ToString(s.TableName) == name {
				out = append(out, aws.ToString(s.StreamArn))
			}
		}
		return out
	}
	if got := listed(""); len(got) != 1 || got[0] != old {
		t.Errorf("ListStreams after the deletion: %q, want [%s]", got, old)
	}
	if got := listed(name); len(got) != 1 || got[0] != old {
		t.Errorf("ListStreams of the deleted table: %q, want [%s]", got, old)
	}
	d := closedShards(t, ctx, sc, old)
	if d.StreamStatus != stypes.StreamStatusDisabled || aws.ToString(d.TableName) != name || len(d.KeySchema) != 1 ||
		aws.ToString(d.KeySchema[0].AttributeName) != "pk" || d.KeySchema[0].KeyType != stypes.KeyTypeHash {
		t.Errorf("DescribeStream of the deleted table's stream: %+v", d)
	}
	const before = "INSERT a -->1\nINSERT b -->1\nMODIFY a 1->2\n"
	if got := describeRecords(readClosed(t, ctx, sc, d)); got != before {
		t.Errorf("the deleted table's stream:\n%swant\n%s", got, before)
	}

	// A new table of the name: its own stream, and the old one unchanged.
	time.Sleep(5 * time.Millisecond) // another label
	var cur string
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
		})
		if err == nil {
			cur = aws.ToString(out.TableDescription.LatestStreamArn)
			break
		}
		if code(err) != "ResourceInUseException" || time.Now().After(deadline) {
			t.Fatalf("CreateTable again: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	put("a", "new")
	if got := listed(name); len(got) != 2 || got[0] != old || got[1] != cur {
		t.Errorf("ListStreams of the name: %q, want [%s %s]", got, old, cur)
	}
	if got := describeRecords(readClosed(t, ctx, sc, closedShards(t, ctx, sc, old))); got != before {
		t.Errorf("the deleted table's stream after a new table of its name:\n%swant\n%s", got, before)
	}
	if got := describeRecords(readStream(t, ctx, sc, cur)); got != "INSERT a -->new\n" {
		t.Errorf("the new table's stream:\n%s", got)
	}
	td, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil || aws.ToString(td.Table.LatestStreamArn) != cur {
		t.Errorf("DescribeTable of the new table: %v %v", td, err)
	}
	// A name that never had a table is still not found.
	_, err = sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("streams_never")})
	wantCode(t, err, "ResourceNotFoundException")
}
