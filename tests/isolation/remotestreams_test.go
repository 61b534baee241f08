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

// TestRemoteStreamsIsolation attacks the streams a fleet of gateways
// serves from the engine table's one stream, which holds every tenant's
// changes (internal/remote/DESIGN.md, "Streams"): tenant B, with a table
// named like A's, reads through every shard and page of its stream and
// finds only its own changes, never A's nor a physical attribute; A's
// iterators, presented by B through either gateway, are refused (and A's
// own work through the other gateway); B cannot describe or read A's
// stream by its ARN. What B does see of the others is the engine's
// shared numbering: shard ids and sequence numbers are the engine
// table's (the same for every tenant), so the gaps between B's sequence
// numbers count the engine's other writes in that shard, as DynamoDB's
// numbers of one table's shard do — never which tenant, table or item.
func TestRemoteStreamsIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: two gateways over a stand-in engine")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	front := harness.Front(t, f.Gateways...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := front.NewTenant(t, "rsA", "admin"), front.NewTenant(t, "rsB", "admin")
	da, db := front.Client(a), front.Client(b)
	sa, sb := front.Streams(a), front.Streams(b)
	// The same through each gateway (the front alternates anyway).
	sa0, sb1 := f.Gateways[0].Streams(a), f.Gateways[1].Streams(b)

	out, err := da.CreateTable(ctx, streamTableInput("rs_same"))
	if err != nil {
		t.Fatal(err)
	}
	arnA := aws.ToString(out.TableDescription.LatestStreamArn)
	time.Sleep(5 * time.Millisecond) // another label
	out, err = db.CreateTable(ctx, streamTableInput("rs_same"))
	if err != nil {
		t.Fatal(err)
	}
	arnB := aws.ToString(out.TableDescription.LatestStreamArn)
	put := func(c *dynamodb.Client, pk, v string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("rs_same"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Interleaved writes to the same logical keys of the same table name.
	for i := range 5 {
		put(da, "k", "secret-of-A"+string(rune('0'+i)))
		put(db, "k", "b"+string(rune('0'+i)))
		put(da, "other", "secret-of-A"+string(rune('0'+i)))
	}

	// B reads every shard, one record per page, to the end.
	readAll := func(sc *dynamodbstreams.Client, arn string) (recs []stypes.Record, iters []*string) {
		t.Helper()
		d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range d.StreamDescription.Shards {
			it := trimHorizon(t, ctx, sc, arn, aws.ToString(sh.ShardId))
			for empty := 0; it != nil && empty < 3; {
				iters = append(iters, it)
				r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(1)})
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Records) == 0 {
					empty++
				}
				recs = append(recs, r.Records...)
				it = r.NextShardIterator
			}
		}
		return recs, iters
	}
	recsB, _ := readAll(sb, arnB)
	var got []string
	for _, r := range recsB {
		for _, img := range []map[string]stypes.AttributeValue{r.Dynamodb.Keys, r.Dynamodb.NewImage, r.Dynamodb.OldImage} {
			for k, v := range img {
				if strings.HasPrefix(k, "tenantdb:") {
					t.Errorf("B's record shows the physical attribute %s", k)
				}
				if s, ok := v.(*stypes.AttributeValueMemberS); ok && strings.Contains(s.Value, "of-A") {
					t.Errorf("B's stream holds A's value %q", s.Value)
				}
			}
		}
		got = append(got, string(r.EventName))
	}
	if strings.Join(got, ",") != "INSERT,MODIFY,MODIFY,MODIFY,MODIFY" {
		t.Errorf("B's records %v, want its own five changes only", got)
	}
	recsA, itersA := readAll(sa0, arnA)
	// Two items, each an INSERT and four MODIFYs.
	if len(recsA) != 10 {
		t.Fatalf("A reads %d records of its own table, want 10", len(recsA))
	}
	for _, r := range recsA {
		if v, ok := r.Dynamodb.NewImage["v"].(*stypes.AttributeValueMemberS); !ok || !strings.HasPrefix(v.Value, "secret-of-A") {
			t.Errorf("A's stream holds %+v", r.Dynamodb.NewImage)
		}
	}

	// A's iterators (first and later ones) with B's key, through either
	// gateway: refused as a cross-tenant attempt.
	for _, it := range []*string{itersA[0], itersA[len(itersA)-1]} {
		for _, sc := range []*dynamodbstreams.Client{sb, sb1} {
			if _, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}); errCode(err) != "AccessDeniedException" {
				t.Errorf("B with A's iterator: %v, want AccessDeniedException", err)
			}
		}
		if _, err := sa.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}); err != nil {
			t.Errorf("A with its own iterator through the other gateway: %v", err)
		}
	}
	// A's stream ARN for B (B has a table of that name): not found.
	if _, err := sb.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arnA)}); errCode(err) != "ResourceNotFoundException" {
		t.Errorf("B DescribeStream of A's stream: %v", err)
	}
	shard := firstShard(t, ctx, sa, arnA)
	if _, err := sb.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arnA), ShardId: aws.String(shard),
		ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}); errCode(err) != "ResourceNotFoundException" {
		t.Errorf("B GetShardIterator on A's stream: %v", err)
	}
	// A's sequence number given by B positions B in the engine's shard,
	// where B still reads only its own changes.
	it, err := sb.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arnB), ShardId: aws.String(shard),
		ShardIteratorType: stypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: recsA[0].Dynamodb.SequenceNumber})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sb.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range r.Records {
		if v, ok := rec.Dynamodb.NewImage["v"].(*stypes.AttributeValueMemberS); ok && strings.Contains(v.Value, "of-A") {
			t.Errorf("B at A's sequence number reads A's %q", v.Value)
		}
	}
	// A's table deleted: its stream is kept for A (its iterators still
	// read A's changes only), B's goes on, and B, which has a live table
	// of that name, reaches nothing of A's through it.
	if _, err := da.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("rs_same")}); err != nil {
		t.Fatal(err)
	}
	r, err = sa.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: itersA[0]})
	if err != nil {
		t.Errorf("A's iterator of its deleted table: %v", err)
	}
	for _, rec := range r.Records {
		if v, ok := rec.Dynamodb.NewImage["v"].(*stypes.AttributeValueMemberS); !ok || !strings.Contains(v.Value, "of-A") {
			t.Errorf("A's deleted table's stream shows %v", rec.Dynamodb.NewImage)
		}
	}
	for _, sc := range []*dynamodbstreams.Client{sb, sb1} {
		if _, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: itersA[0]}); errCode(err) != "AccessDeniedException" {
			t.Errorf("B with A's iterator of A's deleted table: %v, want AccessDeniedException", err)
		}
		if _, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arnA)}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("B DescribeStream of A's deleted table's stream: %v", err)
		}
		ls, err := sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("rs_same")})
		if err != nil || len(ls.Streams) != 1 || aws.ToString(ls.Streams[0].StreamArn) != arnB {
			t.Errorf("B ListStreams of its table named like A's deleted one: %+v %v", ls, err)
		}
	}
	if _, err := sb.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: trimHorizon(t, ctx, sb, arnB, shard)}); err != nil {
		t.Errorf("B's stream after A's table is deleted: %v", err)
	}
}
