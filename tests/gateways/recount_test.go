package gateways

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// engineRecounts is the recounts (rc) of tenant's counters in the engine,
// summed over its collections.
func engineRecounts(t *testing.T, f *harness.Cluster, tenant string) int64 {
	t.Helper()
	id, err := tenancy.ParseTenantID(tenant)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.EngineClient(t).Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(f.EngineTable()),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": sv("stat#" + hex.EncodeToString(keyspace.Tenant(id)))},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, it := range out.Items {
		if v, ok := it["rc"].(*types.AttributeValueMemberN); ok {
			var x int64
			fmt.Sscan(v.Value, &x)
			n += x
		}
	}
	return n
}

// TestStorageBatchDuringRecount: a batch and a transaction written while
// the gateways that write them are recounting the collection for a usage
// report (counters never recounted are stale) are still recounted
// RecountDelay after they are acknowledged: the report's recount, whose
// Query may have begun before them, does not stand in for theirs.
// (TestStorageAcrossGateways hit this now and then: the hourly storage
// sample of each gateway is such a report.)
func TestStorageBatchDuringRecount(t *testing.T) {
	// NB: not parallel, as TestStorageAcrossGateways.
	f := harness.StartCluster(t, 2, harness.Options{})
	gws := f.Gateways
	ctx := context.Background()
	createIndexedTable(t, gws[0], "during")
	a := gws[0].NewTenant(t, "recount-a", "app")
	ca := []*dynamodb.Client{gws[0].Client(a), gws[1].Client(a)}
	within(t, "the table on the second gateway", func() bool {
		return errCode(put(ctx, ca[1], "during", "probe")) != "ResourceNotFoundException"
	})
	for i := range 10 {
		if err := put(ctx, ca[i%2], "during", fmt.Sprintf("a-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	want := recount(t, ca[0], "during")
	within(t, "A's flushed deltas equal a recount", func() bool { return engineCounters(t, f, a.TenantID) == want })

	// A report through each gateway finds the counters never recounted
	// and recounts them (each gateway at its next flush); once one of the
	// recounts is written, both have begun.
	for _, g := range gws {
		reported(t, g, a.TenantID, "during")
	}
	for start := time.Now(); engineRecounts(t, f, a.TenantID) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("no recount of A's counters 15 s after a report through each gateway")
		}
	}

	var reqs []types.WriteRequest
	for i := range 5 {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": sv(fmt.Sprintf("b-%d", i)), "v": sv("batch")}}})
	}
	if _, err := ca[1].BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"during": reqs}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca[0].TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("during"), Item: map[string]types.AttributeValue{"pk": sv("tx"), "g": sv("even"), "v": sv(strings.Repeat("t", 700))}}},
		{Delete: &types.Delete{TableName: aws.String("during"), Key: map[string]types.AttributeValue{"pk": sv("a-3")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	want = recount(t, ca[1], "during")
	// RecountDelay (2 s), then a recount of at least two flush intervals,
	// on a loaded machine: well within RecountEvery (30 s), which a
	// report's recount used to impose on the batch's.
	start := time.Now()
	for got := engineCounters(t, f, a.TenantID); got != want; got = engineCounters(t, f, a.TenantID) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("A's counters after a batch and a transaction written during a report's recount: %v, a recount %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("A's counters after a batch and a transaction during a report's recount equal a recount after %v", time.Since(start).Round(time.Millisecond))
}
