package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
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

// streamsClient returns a DynamoDB Streams client for c on srv's endpoint.
func streamsClient(srv *harness.Server, c harness.Credential) *dynamodbstreams.Client {
	return srv.Streams(c)
}

// createStreamTable creates table name (pk S) with a stream of view type
// view and returns its LatestStreamArn.
func createStreamTable(t *testing.T, ctx context.Context, c *dynamodb.Client, name string, view types.StreamViewType) string {
	t.Helper()
	out, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: view},
	})
	if err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
	arn := aws.ToString(out.TableDescription.LatestStreamArn)
	if arn == "" || !strings.HasSuffix(arn, "/stream/"+aws.ToString(out.TableDescription.LatestStreamLabel)) {
		t.Fatalf("CreateTable %s: LatestStreamArn %q, label %q", name, arn, aws.ToString(out.TableDescription.LatestStreamLabel))
	}
	return arn
}

// readStream reads every shard of the stream from TRIM_HORIZON, parents
// first, and returns its records.
func readStream(t *testing.T, ctx context.Context, sc *dynamodbstreams.Client, arn string) []stypes.Record {
	t.Helper()
	d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	var out []stypes.Record
	for _, sh := range d.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatalf("GetShardIterator: %v", err)
		}
		iter := it.ShardIterator
		for iter != nil {
			r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(2)})
			if err != nil {
				t.Fatalf("GetRecords: %v", err)
			}
			out = append(out, r.Records...)
			if len(r.Records) == 0 {
				break // an open shard, read to its end
			}
			iter = r.NextShardIterator
		}
	}
	return out
}

func sval(av stypes.AttributeValue) string {
	if s, ok := av.(*stypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return "?"
}

// describeRecords renders records as "EVENT pk old->new" lines.
func describeRecords(rs []stypes.Record) string {
	var b strings.Builder
	for _, r := range rs {
		img := func(m map[string]stypes.AttributeValue) string {
			if m == nil {
				return "-"
			}
			if v, ok := m["v"]; ok {
				return sval(v)
			}
			return "{}"
		}
		fmt.Fprintf(&b, "%s %s %s->%s\n", r.EventName, sval(r.Dynamodb.Keys["pk"]), img(r.Dynamodb.OldImage), img(r.Dynamodb.NewImage))
	}
	return b.String()
}

// TestStreamsSDK enables a stream with the SDK, writes with every write
// operation and reads every record back in order with aws-sdk-go-v2's
// dynamodbstreams client, for every view type.
func TestStreamsSDK(t *testing.T) {
	srv, c := start(t)
	skipRemoteStreams(t, srv)
	ctx := ctxT(t)
	sc := streamsClient(srv, srv.Default)
	want := map[types.StreamViewType]string{
		types.StreamViewTypeNewAndOldImages: "INSERT a -->1\nMODIFY a 1->2\nREMOVE a 2->-\nINSERT b -->1\nINSERT t -->1\nMODIFY b 1->2\n",
		types.StreamViewTypeNewImage:        "INSERT a -->1\nMODIFY a -->2\nREMOVE a -->-\nINSERT b -->1\nINSERT t -->1\nMODIFY b -->2\n",
		types.StreamViewTypeOldImage:        "INSERT a -->-\nMODIFY a 1->-\nREMOVE a 2->-\nINSERT b -->-\nINSERT t -->-\nMODIFY b 1->-\n",
		types.StreamViewTypeKeysOnly:        "INSERT a -->-\nMODIFY a -->-\nREMOVE a -->-\nINSERT b -->-\nINSERT t -->-\nMODIFY b -->-\n",
	}
	for view, expect := range want {
		name := "streams_" + strings.ToLower(string(view))
		arn := createStreamTable(t, ctx, c, name, view)
		put := func(pk, v string) {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item("pk", S(pk), "v", S(v))}); err != nil {
				t.Fatal(err)
			}
		}
		put("a", "1")
		put("a", "1") // changes nothing: no record, as on DynamoDB
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: item("pk", S("a")),
			UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: item(":v", S("2"))}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: item("pk", S("a"))}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: item("pk", S("none"))}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: {
			{PutRequest: &types.PutRequest{Item: item("pk", S("b"), "v", S("1"))}},
		}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(name), Item: item("pk", S("t"), "v", S("1"))}},
			{Update: &types.Update{TableName: aws.String(name), Key: item("pk", S("b")), UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: item(":v", S("2"))}},
		}}); err != nil {
			t.Fatal(err)
		}
		recs := readStream(t, ctx, sc, arn)
		if got := describeRecords(recs); got != expect {
			t.Errorf("%s: records\n%swant\n%s", view, got, expect)
		}
		for i, r := range recs {
			if aws.ToString(r.EventSource) != "aws:dynamodb" || aws.ToString(r.AwsRegion) != harness.Region || len(aws.ToString(r.EventID)) != 32 ||
				r.Dynamodb.StreamViewType != stypes.StreamViewType(view) || aws.ToInt64(r.Dynamodb.SizeBytes) <= 0 || r.Dynamodb.ApproximateCreationDateTime == nil {
				t.Errorf("%s: record %d shape %+v %+v", view, i, r, r.Dynamodb)
			}
			if i > 0 && aws.ToString(r.Dynamodb.SequenceNumber) <= aws.ToString(recs[i-1].Dynamodb.SequenceNumber) {
				t.Errorf("%s: sequence numbers do not increase at %d", view, i)
			}
		}
	}
}

// TestStreamsIteratorsAndLifecycle: positions, errors, paging, disabling.
func TestStreamsIteratorsAndLifecycle(t *testing.T) {
	srv, c := start(t)
	skipRemoteStreams(t, srv)
	ctx := ctxT(t)
	sc := streamsClient(srv, srv.Default)
	arn := createStreamTable(t, ctx, c, "streams_life", types.StreamViewTypeNewImage)
	for i := 0; i < 5; i++ {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("streams_life"), Item: item("pk", S(fmt.Sprint(i)), "v", S("x"))}); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("streams_life")})
	if err != nil || len(ls.Streams) != 1 || aws.ToString(ls.Streams[0].StreamArn) != arn {
		t.Fatalf("ListStreams: %+v %v", ls, err)
	}
	d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	sd := d.StreamDescription
	if sd.StreamStatus != stypes.StreamStatusEnabled || sd.StreamViewType != stypes.StreamViewTypeNewImage || aws.ToString(sd.TableName) != "streams_life" || len(sd.Shards) != 1 {
		t.Fatalf("DescribeStream: %+v", sd)
	}
	shard := sd.Shards[0]
	if shard.SequenceNumberRange.EndingSequenceNumber != nil || shard.ParentShardId != nil {
		t.Errorf("open first shard: %+v", shard)
	}
	recs := readStream(t, ctx, sc, arn)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	at := func(typ stypes.ShardIteratorType, seq string) []stypes.Record {
		t.Helper()
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard.ShardId, ShardIteratorType: typ, SequenceNumber: aws.String(seq)})
		if err != nil {
			t.Fatalf("GetShardIterator %s: %v", typ, err)
		}
		r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatalf("GetRecords: %v", err)
		}
		if r.NextShardIterator == nil {
			t.Error("an open shard's NextShardIterator is null")
		}
		return r.Records
	}
	seq2 := aws.ToString(recs[2].Dynamodb.SequenceNumber)
	if got := at(stypes.ShardIteratorTypeAtSequenceNumber, seq2); len(got) != 3 || sval(got[0].Dynamodb.Keys["pk"]) != "2" {
		t.Errorf("AT_SEQUENCE_NUMBER: %s", describeRecords(got))
	}
	if got := at(stypes.ShardIteratorTypeAfterSequenceNumber, seq2); len(got) != 2 || sval(got[0].Dynamodb.Keys["pk"]) != "3" {
		t.Errorf("AFTER_SEQUENCE_NUMBER: %s", describeRecords(got))
	}
	latest, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard.ShardId, ShardIteratorType: stypes.ShardIteratorTypeLatest})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("streams_life"), Item: item("pk", S("late"), "v", S("x"))}); err != nil {
		t.Fatal(err)
	}
	r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: latest.ShardIterator})
	if err != nil || len(r.Records) != 1 || sval(r.Records[0].Dynamodb.Keys["pk"]) != "late" {
		t.Fatalf("LATEST: %v %v", r, err)
	}

	// Errors, in DynamoDB's types.
	_, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(strings.Repeat("A", 100))})
	wantCode(t, err, "ValidationException")
	tampered := []byte(aws.ToString(latest.ShardIterator))
	tampered[len(tampered)/2] ^= 1
	_, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(string(tampered))})
	wantCode(t, err, "ValidationException")
	_, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: latest.ShardIterator, Limit: aws.Int32(1001)})
	wantCode(t, err, "ValidationException")
	gone := arn[:len(arn)-len("000")] + "999"
	_, err = sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(gone)})
	wantCode(t, err, "ResourceNotFoundException")
	_, err = sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/streams_life/stream/garbage")})
	wantCode(t, err, "ValidationException")
	_, err = sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String("shardId-00000000000000000000-00000000"), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
	wantCode(t, err, "ResourceNotFoundException")
	_, err = sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard.ShardId, ShardIteratorType: stypes.ShardIteratorTypeAtSequenceNumber})
	wantCode(t, err, "ValidationException")

	// Disabling closes the shard: it is drained once read to its end.
	if _, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("streams_life"), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}); err != nil {
		t.Fatal(err)
	}
	d, err = sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if d.StreamDescription.StreamStatus != stypes.StreamStatusDisabled {
		t.Errorf("disabled stream: %+v", d.StreamDescription)
	}
	if srv.Remote {
		// A gateway's logical stream reads the engine table's stream,
		// which stays enabled: a shard's end is the engine's last record
		// of the disable's second, known once a change made after it is
		// read (or, on a quiet engine, 10 s after it): see
		// internal/remote/DESIGN.md, "Streams".
		time.Sleep(1100 * time.Millisecond)
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("streams_life"), Item: item("pk", S("after"), "v", S("x"))}); err != nil {
			t.Fatal(err)
		}
	}
	if cd := closedShards(t, ctx, sc, arn); len(cd.Shards) != 1 || aws.ToString(cd.Shards[0].ShardId) != aws.ToString(shard.ShardId) ||
		!seqLE(aws.ToString(r.Records[0].Dynamodb.SequenceNumber), aws.ToString(cd.Shards[0].SequenceNumberRange.EndingSequenceNumber)) {
		t.Errorf("the disabled stream's closed shard: %+v", cd.Shards)
	}
	r, err = sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: r.NextShardIterator})
	if err != nil || len(r.Records) != 0 || r.NextShardIterator != nil {
		t.Errorf("reading past a closed shard's end: %+v %v", r, err)
	}
	td, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("streams_life")})
	if err != nil || aws.ToString(td.Table.LatestStreamArn) != arn || td.Table.StreamSpecification != nil {
		t.Errorf("DescribeTable after disabling: %+v %v", td, err)
	}
}

// TestStreamsCLI reads a stream with `aws dynamodbstreams`.
func TestStreamsCLI(t *testing.T) {
	needAWSCLI(t)
	srv, c := start(t)
	skipRemoteStreams(t, srv)
	ctx := ctxT(t)
	arn := createStreamTable(t, ctx, c, "streams_cli", types.StreamViewTypeNewAndOldImages)
	for _, v := range []string{"1", "2"} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("streams_cli"), Item: item("pk", S("k"), "v", S(v))}); err != nil {
			t.Fatal(err)
		}
	}
	cli := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.CommandContext(ctxT(t), "aws", append([]string{"dynamodbstreams", "--endpoint-url", srv.Endpoint, "--output", "json"}, args...)...)
		cmd.Env = srv.Env(srv.Default)
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("aws dynamodbstreams %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("aws dynamodbstreams %s: %v\n%s", args[0], err, out)
		}
		return v
	}
	ls := cli("list-streams", "--table-name", "streams_cli")
	if s, _ := ls["Streams"].([]any); len(s) != 1 || s[0].(map[string]any)["StreamArn"] != arn {
		t.Fatalf("list-streams: %v", ls)
	}
	d := cli("describe-stream", "--stream-arn", arn)["StreamDescription"].(map[string]any)
	shard := d["Shards"].([]any)[0].(map[string]any)["ShardId"].(string)
	it := cli("get-shard-iterator", "--stream-arn", arn, "--shard-id", shard, "--shard-iterator-type", "TRIM_HORIZON")["ShardIterator"].(string)
	recs := cli("get-records", "--shard-iterator", it)["Records"].([]any)
	var got []string
	for _, r := range recs {
		m := r.(map[string]any)
		ddb := m["dynamodb"].(map[string]any)
		got = append(got, fmt.Sprintf("%s %v %v", m["eventName"], ddb["OldImage"] != nil, ddb["NewImage"] != nil))
	}
	sort.Strings(got[:0])
	if strings.Join(got, ";") != "INSERT false true;MODIFY true true" {
		t.Errorf("get-records: %v", got)
	}
}

// skipRemoteStreams used to skip the streams tests on the remote
// backend; it serves them now, from the engine's stream (README), except
// over dynalite, which has none and where these tests are not run.
func skipRemoteStreams(t *testing.T, srv *harness.Server) {
	t.Helper()
}
