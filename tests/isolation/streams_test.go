package isolation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// Attacks on every DynamoDB Streams surface: stream ARNs, shard ids,
// iterators and sequence numbers of one tenant used by another, forged
// and replayed iterators, the operator. Each tenant of a shared table must
// see exactly its own records through the same stream ARN.

func streamsOf(srv *harness.Server, c harness.Credential) *dynamodbstreams.Client {
	return srv.Streams(c)
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func streamTableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}
}

// firstShard returns the stream's first shard id as c sees it.
func firstShard(t *testing.T, ctx context.Context, sc *dynamodbstreams.Client, arn string) string {
	t.Helper()
	d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil || len(d.StreamDescription.Shards) == 0 {
		t.Fatalf("DescribeStream %s: %+v %v", arn, d, err)
	}
	return aws.ToString(d.StreamDescription.Shards[0].ShardId)
}

func trimHorizon(t *testing.T, ctx context.Context, sc *dynamodbstreams.Client, arn, shard string) *string {
	t.Helper()
	it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatalf("GetShardIterator: %v", err)
	}
	return it.ShardIterator
}

func TestStreamsIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op := srv.Client(srv.Operator)
	a, b := srv.NewTenant(t, "streamA", "admin"), srv.NewTenant(t, "streamB", "admin")
	da, db := srv.Client(a), srv.Client(b)
	sa, sb, so := streamsOf(srv, a), streamsOf(srv, b), streamsOf(srv, srv.Operator)

	// A shared table: one stream ARN, each tenant its own records.
	out, err := op.CreateTable(ctx, streamTableInput("iso_streams"))
	if err != nil {
		t.Fatal(err)
	}
	shared := aws.ToString(out.TableDescription.LatestStreamArn)
	for _, w := range []struct {
		c      *dynamodb.Client
		secret string
	}{{da, "secret-of-A"}, {db, "secret-of-B"}, {da, "secret-of-A-2"}} {
		if _, err := w.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("iso_streams"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "same-key"}, "v": &types.AttributeValueMemberS{Value: w.secret}}}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(sc *dynamodbstreams.Client, iter *string) ([]stypes.Record, error) {
		r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			return nil, err
		}
		return r.Records, nil
	}
	secrets := func(rs []stypes.Record) string {
		var s []string
		for _, r := range rs {
			s = append(s, string(r.EventName)+":"+r.Dynamodb.NewImage["v"].(*stypes.AttributeValueMemberS).Value)
		}
		return strings.Join(s, ",")
	}
	shard := firstShard(t, ctx, sa, shared)
	if firstShard(t, ctx, sb, shared) != shard {
		t.Error("tenants see different shard ids of one stream")
	}
	itA := trimHorizon(t, ctx, sa, shared, shard)
	ra, err := read(sa, itA)
	if err != nil || secrets(ra) != "INSERT:secret-of-A,MODIFY:secret-of-A-2" {
		t.Errorf("A reads %q (%v); want only its own two changes", secrets(ra), err)
	}
	rb, err := read(sb, trimHorizon(t, ctx, sb, shared, shard))
	if err != nil || secrets(rb) != "INSERT:secret-of-B" {
		t.Errorf("B reads %q (%v); want only its own change", secrets(rb), err)
	}

	// A's iterator presented by B: refused, and audited as a denial.
	if _, err := read(sb, itA); errCode(err) != "AccessDeniedException" {
		t.Errorf("B with A's iterator: %v, want AccessDeniedException", err)
	}
	// A forged (altered) iterator: invalid, for B and for A.
	forged := []byte(aws.ToString(itA))
	forged[len(forged)-5] ^= 2
	for who, sc := range map[string]*dynamodbstreams.Client{"A": sa, "B": sb} {
		if _, err := read(sc, aws.String(string(forged))); errCode(err) != "ValidationException" {
			t.Errorf("%s with a forged iterator: %v, want ValidationException", who, err)
		}
	}
	// A's sequence number given by B positions B in B's records only.
	it, err := sb.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(shared), ShardId: aws.String(shard),
		ShardIteratorType: stypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: ra[0].Dynamodb.SequenceNumber})
	if err == nil {
		rs, err := read(sb, it.ShardIterator)
		if err != nil || strings.Contains(secrets(rs), "of-A") {
			t.Errorf("B at A's sequence number reads %q (%v)", secrets(rs), err)
		}
	} else if c := errCode(err); c != "ValidationException" && c != "TrimmedDataAccessException" {
		t.Errorf("B at A's sequence number: %v", err)
	}

	// A tenant-owned table: its ARN is not found for B, even when B owns
	// a table of the same name with a stream.
	out, err = da.CreateTable(ctx, streamTableInput("own_streams"))
	if err != nil {
		t.Fatal(err)
	}
	own := aws.ToString(out.TableDescription.LatestStreamArn)
	if _, err := da.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("own_streams"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "k"}, "v": &types.AttributeValueMemberS{Value: "secret-of-A"}}}); err != nil {
		t.Fatal(err)
	}
	ownShard := firstShard(t, ctx, sa, own)
	check := func(what string) {
		t.Helper()
		if _, err := sb.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(own)}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("%s: B DescribeStream of A's stream: %v", what, err)
		}
		if _, err := sb.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(own), ShardId: aws.String(ownShard), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("%s: B GetShardIterator on A's stream: %v", what, err)
		}
		ls, err := sb.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ls.Streams {
			if aws.ToString(s.StreamArn) == own {
				t.Errorf("%s: B lists A's stream", what)
			}
		}
	}
	check("B without the table")
	time.Sleep(5 * time.Millisecond) // a different stream label
	if _, err := db.CreateTable(ctx, streamTableInput("own_streams")); err != nil {
		t.Fatal(err)
	}
	check("B with its own table of that name")
	if _, err := read(sb, trimHorizon(t, ctx, sa, own, ownShard)); errCode(err) != "AccessDeniedException" {
		t.Errorf("B with A's iterator of A's own table: %v", err)
	}

	// The operator has no data access through streams either.
	if _, err := so.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(shared), ShardId: aws.String(shard), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator GetShardIterator: %v", err)
	}
	if _, err := read(so, itA); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator GetRecords: %v", err)
	}

	// B's denials are in B's audit log.
	page, err := srv.Admin().Audit(ctx, b.TenantID, client.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]int{}
	for _, r := range page.Records {
		if strings.HasPrefix(r.Outcome, "denied") {
			denied[r.Action]++
		}
	}
	// GetRecords: A's iterators (2); DescribeStream and GetShardIterator:
	// A's own table's ARN, answered "not found" but audited (2 each).
	for op, want := range map[string]int{"dynamodb:GetRecords": 2, "dynamodb:DescribeStream": 2, "dynamodb:GetShardIterator": 2} {
		if denied[op] < want {
			t.Errorf("%d %s denials audited for B, want %d (all: %v)", denied[op], op, want, denied)
		}
	}
	// No oracle in B's own log: an ARN naming a stream that exists for
	// nobody is answered and audited exactly as A's stream's ARN is, so
	// B's admin cannot tell from the log which of A's streams exist.
	nobody := own[:len(own)-3] + "999"
	_, errNobody := sb.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(nobody)})
	if errCode(errNobody) != "ResourceNotFoundException" {
		t.Errorf("B DescribeStream of a stream nobody has: %v", errNobody)
	}
	page, err = srv.Admin().Audit(ctx, b.TenantID, client.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	after := 0
	for _, r := range page.Records {
		if strings.HasPrefix(r.Outcome, "denied") && r.Action == "dynamodb:DescribeStream" {
			after++
		}
	}
	if after != denied["dynamodb:DescribeStream"]+1 {
		t.Errorf("DescribeStream of a stream nobody has: %d denials audited for B, want %d (one more than for A's stream's ARN): the log would tell B which streams A has", after, denied["dynamodb:DescribeStream"]+1)
	}
}
