package remote_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestReshardResumesAfterGatewayEnd: a gateway ends in the middle of a
// change of shard count (its migrator stops where it is, as at kill -9
// between two pages); another gateway over the same engine resumes the
// change from the recorded progress at its start, and every item ends in
// exactly one shard, its own.
func TestReshardResumesAfterGatewayEnd(t *testing.T) {
	g := startGatewayEnd(t, remote.Options{TablePrefix: "resume-", ShardCacheTTL: 100 * time.Millisecond})
	ctx, s := context.Background(), g.s
	b1 := g.open()
	g.createTable(b1)
	const items = 1500
	for i := range items {
		if _, err := b1.PutItem(ctx, s, &wire.PutItemInput{TableName: "tbl", Item: attr.Item{"pk": attr.Str(fmt.Sprintf("k%d", i)), "v": attr.Str("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b1.SetShards(ctx, s, "tbl", 8); err != nil {
		t.Fatal(err)
	}
	status := func(b *remote.Backend) client.ShardStatus {
		out, err := b.Shards(ctx, s)
		if err != nil || len(out.Tables) != 1 {
			t.Fatalf("shards: %+v, %v", out, err)
		}
		return out.Tables[0]
	}
	var st client.ShardStatus
	g.within(30*time.Second, 5*time.Millisecond, func() string { return fmt.Sprintf("the migrator moved nothing: %+v", st) },
		func() bool { st = status(b1); return st.Moved > 0 })
	b1.Close() // the gateway ends: its migrator stops mid-change
	time.Sleep(200 * time.Millisecond)
	if st = status(b1); st.From != 1 || st.Phase != "move" || st.Moved >= items {
		t.Fatalf("after the gateway's end: %+v, want a change under way", st)
	}
	t.Logf("stopped at %+v", st)

	b2 := g.open() // resumes the change at its start
	defer b2.Close()
	g.within(60*time.Second, 50*time.Millisecond, func() string { return fmt.Sprintf("the change was not resumed: %+v", st) },
		func() bool { st = status(b2); return st.From == 0 && st.Shards == 8 })
	// In the engine: every item once, in its own shard (shards 0..7), and
	// items in every shard.
	parts := map[string]int{}
	seen := map[string]bool{}
	in := &dynamodb.ScanInput{TableName: aws.String("resume-tenantdb"), FilterExpression: aws.String("v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "x"}}}
	g.scan(in, func(out *dynamodb.ScanOutput) {
		for _, it := range out.Items {
			k := it["pk"].(*types.AttributeValueMemberS).Value
			if seen[k] {
				t.Errorf("%s is in two shards", k)
			}
			seen[k] = true
			pk := it["tenantdb:pk"].(*types.AttributeValueMemberS).Value
			parts[pk[strings.LastIndexByte(pk, '#')+1:]]++
		}
	})
	if len(seen) != items || len(parts) != 8 {
		t.Fatalf("%d items in the engine under shards %v, want %d in 8", len(seen), parts, items)
	}
	// Through the resumed gateway: every item, at its place.
	for i := range items {
		out, err := b2.GetItem(ctx, s, &wire.GetItemInput{TableName: "tbl", Key: attr.Item{"pk": attr.Str(fmt.Sprintf("k%d", i))}})
		if err != nil || out.Item == nil {
			t.Fatalf("k%d after the change: %v, %v", i, out, err)
		}
	}
	t.Logf("resumed to %+v; items per shard %v", st, parts)
}
