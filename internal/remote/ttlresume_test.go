package remote_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestTTLJobResumesAfterGatewayEnd: a gateway ends while it gives a
// table's existing items their TTL copies (after its first pages, as at
// kill -9 between two pages); the job stays in the engine with its
// position, another gateway's start resumes it, and in the end every
// item whose TTL attribute is a number has the copy — counted in the
// engine — and the job is gone.
func TestTTLJobResumesAfterGatewayEnd(t *testing.T) {
	g := startGatewayEnd(t, remote.Options{TablePrefix: "ttlresume-"})
	ctx, db, s := context.Background(), g.db, g.s
	b1 := g.open()
	g.createTable(b1)
	const items = 1000
	exp := attr.Num(attr.MustNumber(strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))) // not due: the engine's sweeper keeps them
	for i := range items {
		it := attr.Item{"pk": attr.Str(fmt.Sprintf("k%d", i))}
		if i%10 != 0 {
			it["exp"] = exp
		} else {
			it["exp"] = attr.Str("no number")
		}
		if _, err := b1.PutItem(ctx, s, &wire.PutItemInput{TableName: "tbl", Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b1.UpdateTimeToLive(ctx, s, &wire.UpdateTimeToLiveInput{TableName: "tbl",
		TimeToLiveSpecification: wire.TimeToLiveSpecification{AttributeName: "exp", Enabled: true}}); err != nil {
		t.Fatal(err)
	}
	table := b1.Table()
	job := func() map[string]types.AttributeValue {
		out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: &table, KeyConditionExpression: aws.String("#p = :p"),
			ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "meta#ttl"}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) == 0 {
			return nil
		}
		return out.Items[0]
	}
	synced := func(j map[string]types.AttributeValue) int {
		n, _ := j["synced"].(*types.AttributeValueMemberN)
		if n == nil {
			return 0
		}
		v, _ := strconv.Atoi(n.Value)
		return v
	}
	g.within(30*time.Second, 5*time.Millisecond, func() string { return "the TTL job synced nothing" },
		func() bool { j := job(); return j == nil || synced(j) > 0 })
	b1.Close() // the gateway ends: its job stops between two pages
	time.Sleep(300 * time.Millisecond)
	j := job()
	if j == nil || synced(j) >= items*9/10 {
		t.Fatalf("after the gateway's end: job %v, want one under way", j)
	}
	t.Logf("stopped after %d copies", synced(j))

	b2 := g.open() // resumes the job at its start
	defer b2.Close()
	var left map[string]types.AttributeValue
	g.within(60*time.Second, 50*time.Millisecond, func() string { return fmt.Sprintf("the resumed job did not end: %v", left) },
		func() bool { left = job(); return left == nil })
	copies := 0
	in := &dynamodb.ScanInput{TableName: &table, FilterExpression: aws.String("attribute_exists(#t)"),
		ExpressionAttributeNames: map[string]string{"#t": "tenantdb:ttl"}, Select: types.SelectCount, ConsistentRead: aws.Bool(true)}
	g.scan(in, func(out *dynamodb.ScanOutput) { copies += int(out.Count) })
	if copies != items*9/10 {
		t.Errorf("%d items have the TTL copy, want %d (every item whose exp is a number)", copies, items*9/10)
	}
}
