package remote_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestReshardHiddenFromStreams: changing a collection's shard count
// (1 → 4 → 2) while clients add to its items through two gateways moves
// every item between engine partition keys, and the table's stream shows
// none of it: each item's INSERT once, then exactly one MODIFY per
// acknowledged addition, each with the item's true old image, and no
// REMOVE.
func TestReshardHiddenFromStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two gateways over the stand-in engine")
	}
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	cred := gws[0].NewTenant(t, "moves", "admin")
	cs := []*dynamodb.Client{gws[0].Client(cred), gws[1].Client(cred)}
	ctx := context.Background()
	out, err := cs[0].CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("moved"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		BillingMode:         types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(out.TableDescription.LatestStreamArn)
	const items = 60
	key := func(i int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(fmt.Sprintf("p%d", i%17)), "sk": n(strconv.Itoa(i))}
	}
	name := func(i int) string { return fmt.Sprintf("p%d/%d", i%17, i) }
	for i := range items {
		it := key(i)
		it["v"] = n("0")
		if _, err := cs[i%2].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("moved"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu    sync.Mutex
		added = map[string]int{}
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; !stop.Load(); i += 7 {
				k := i % items
				_, err := cs[i%2].UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("moved"), Key: key(k),
					UpdateExpression: aws.String("ADD v :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}})
				switch {
				case err == nil:
					mu.Lock()
					added[name(k)]++
					mu.Unlock()
				case strings.Contains(err.Error(), "ProvisionedThroughputExceeded") || strings.Contains(err.Error(), "TransactionConflict"):
				default:
					t.Errorf("ADD: %v", err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	setShards(t, gws[1], cred.TenantID, "moved", 4)
	setShards(t, gws[0], cred.TenantID, "moved", 2)
	stop.Store(true)
	wg.Wait()

	// Read the stream to its present end.
	sc := gws[0].Streams(cred)
	d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	type change struct{ event, old, neu string }
	got := map[string][]change{}
	val := func(m map[string]stypes.AttributeValue) string {
		if v, ok := m["v"].(*stypes.AttributeValueMemberN); ok {
			return v.Value
		}
		return "-"
	}
	for _, sh := range d.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		for iter, empty := it.ShardIterator, 0; iter != nil && empty < 3; {
			r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Records) == 0 {
				empty++
			}
			for _, rec := range r.Records {
				k := rec.Dynamodb.Keys
				id := k["pk"].(*stypes.AttributeValueMemberS).Value + "/" + k["sk"].(*stypes.AttributeValueMemberN).Value
				got[id] = append(got[id], change{string(rec.EventName), val(rec.Dynamodb.OldImage), val(rec.Dynamodb.NewImage)})
				for a := range rec.Dynamodb.NewImage {
					if strings.HasPrefix(a, "tenantdb:") {
						t.Errorf("a record shows %s", a)
					}
				}
			}
			iter = r.NextShardIterator
		}
	}
	total := 0
	for i := range items {
		id := name(i)
		want := []change{{"INSERT", "-", "0"}}
		for j := 1; j <= added[id]; j++ {
			want = append(want, change{"MODIFY", strconv.Itoa(j - 1), strconv.Itoa(j)})
		}
		total += added[id]
		if fmt.Sprint(got[id]) != fmt.Sprint(want) {
			t.Errorf("item %s: stream %v, want %v", id, got[id], want)
		}
	}
	if total == 0 {
		t.Error("no addition was acknowledged during the changes: the test checks nothing of writes that move items")
	}
	if len(got) != items {
		t.Errorf("the stream shows %d items, want %d", len(got), items)
	}
}
