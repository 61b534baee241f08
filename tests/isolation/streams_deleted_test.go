package isolation

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

// TestDeletedTableStreamsIsolation: the streams of deleted tables stay
// listed and readable until retention, to whoever could read them only.
// B never lists, describes or reads A's deleted table's stream (not by
// ListStreams, not by TableName, not with a table of that name of its
// own); a deleted shared silo table's stream, whose records moved out of
// each tenant's silo store into the main store, still shows each tenant
// only its own records.
func TestDeletedTableStreamsIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op := srv.Client(srv.Operator)
	a, b := srv.NewTenant(t, "goneA", "admin"), srv.NewTenant(t, "goneB", "admin")
	da, db := srv.Client(a), srv.Client(b)
	sa, sb := streamsOf(srv, a), streamsOf(srv, b)
	put := func(c *dynamodb.Client, table, pk, v string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	records := func(sc *dynamodbstreams.Client, arn string) (string, error) {
		d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		if err != nil {
			return "", err
		}
		var got []string
		for _, sh := range d.StreamDescription.Shards {
			it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				return "", err
			}
			for iter := it.ShardIterator; iter != nil; {
				r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
				if err != nil {
					return "", err
				}
				for _, rec := range r.Records {
					got = append(got, rec.Dynamodb.NewImage["v"].(*stypes.AttributeValueMemberS).Value)
				}
				iter = r.NextShardIterator
			}
		}
		return strings.Join(got, ","), nil
	}
	listed := func(sc *dynamodbstreams.Client, table, arn string) (bool, error) {
		in := &dynamodbstreams.ListStreamsInput{}
		if table != "" {
			in.TableName = aws.String(table)
		}
		ls, err := sc.ListStreams(ctx, in)
		if err != nil {
			return false, err
		}
		for _, s := range ls.Streams {
			if aws.ToString(s.StreamArn) == arn {
				return true, nil
			}
		}
		return false, nil
	}

	// A's own table, deleted.
	out, err := da.CreateTable(ctx, streamTableInput("gone_own"))
	if err != nil {
		t.Fatal(err)
	}
	own := aws.ToString(out.TableDescription.LatestStreamArn)
	put(da, "gone_own", "k", "secret-of-A")
	// A shared silo table: each tenant's records in its own silo store.
	in := streamTableInput("gone_silo")
	in.Tags = []types.Tag{{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")}}
	out, err = op.CreateTable(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	silo := aws.ToString(out.TableDescription.LatestStreamArn)
	put(da, "gone_silo", "same-key", "silo-secret-of-A")
	put(db, "gone_silo", "same-key", "silo-secret-of-B")
	if _, err := da.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("gone_own")}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("gone_silo")}); err != nil {
		t.Fatal(err)
	}

	// A still lists and reads both; each tenant reads only its own records.
	for _, arn := range []string{own, silo} {
		if ok, err := listed(sa, "", arn); !ok || err != nil {
			t.Errorf("A does not list its deleted table's stream %s (%v)", arn, err)
		}
	}
	if got, err := records(sa, own); got != "secret-of-A" || err != nil {
		t.Errorf("A reads its deleted table's stream: %q (%v)", got, err)
	}
	if got, err := records(sa, silo); got != "silo-secret-of-A" || err != nil {
		t.Errorf("A reads the deleted silo table's stream: %q (%v)", got, err)
	}
	if got, err := records(sb, silo); got != "silo-secret-of-B" || err != nil {
		t.Errorf("B reads the deleted silo table's stream: %q (%v)", got, err)
	}
	// B never reaches A's deleted table's stream, also with a table of
	// that name of its own.
	check := func(what string) {
		t.Helper()
		if ok, err := listed(sb, "", own); ok || err != nil {
			t.Errorf("%s: B lists A's deleted table's stream (%v)", what, err)
		}
		if ok, _ := listed(sb, "gone_own", own); ok {
			t.Errorf("%s: B lists A's deleted table's stream by its name", what)
		}
		if got, err := records(sb, own); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("%s: B reads A's deleted table's stream: %q (%v)", what, got, err)
		}
	}
	check("B without such a table")
	if _, err := sb.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("gone_own")}); errCode(err) != "ResourceNotFoundException" {
		t.Errorf("B ListStreams by the name of A's deleted table: %v, want ResourceNotFoundException", err)
	}
	time.Sleep(5 * time.Millisecond) // a different stream label
	out, err = db.CreateTable(ctx, streamTableInput("gone_own"))
	if err != nil {
		t.Fatal(err)
	}
	check("B with its own table of that name")
	// B's table of that name shows B's changes only, and A's iterator of
	// its deleted table is refused to B.
	put(db, "gone_own", "k", "own-of-B")
	arnB := aws.ToString(out.TableDescription.LatestStreamArn)
	dB, err := sb.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arnB)})
	if err != nil {
		t.Fatal(err)
	}
	var gotB []string
	for _, sh := range dB.StreamDescription.Shards {
		it, err := sb.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arnB), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		// NB: an enabled stream's shard is open: read until an empty page.
		for iter := it.ShardIterator; iter != nil; {
			r, err := sb.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range r.Records {
				gotB = append(gotB, rec.Dynamodb.NewImage["v"].(*stypes.AttributeValueMemberS).Value)
			}
			if len(r.Records) == 0 {
				break
			}
			iter = r.NextShardIterator
		}
	}
	if got := strings.Join(gotB, ","); got != "own-of-B" {
		t.Errorf("B's table named like A's deleted one shows %q, want B's own change only", got)
	}
	d, err := sa.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(own)})
	if err != nil || len(d.StreamDescription.Shards) == 0 {
		t.Fatalf("A DescribeStream of its deleted table's stream: %v", err)
	}
	itA, err := sa.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(own), ShardId: d.StreamDescription.Shards[0].ShardId,
		ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: itA.ShardIterator}); errCode(err) != "AccessDeniedException" {
		t.Errorf("B with A's iterator of A's deleted table's stream: %v, want AccessDeniedException", err)
	}
	if _, err := sb.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(own), ShardId: d.StreamDescription.Shards[0].ShardId,
		ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}); errCode(err) != "ResourceNotFoundException" {
		t.Errorf("B GetShardIterator on A's deleted table's stream: %v, want ResourceNotFoundException", err)
	}
}
