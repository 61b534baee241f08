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
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// BenchmarkBackgroundJobs measures, over the stand-in engine in one run,
// the item rate of the background jobs — the TTL sync after
// UpdateTimeToLive and the GSI backfill after UpdateTable — against the
// baseline of writing the same items with PutItem through the gateway
// (sequentially, as the jobs work). The jobs' times exclude their settle
// wait (1 s here: one gateway).
//
//	go test ./internal/remote -run '^$' -bench BackgroundJobs -benchtime 1x
func BenchmarkBackgroundJobs(b *testing.B) {
	const items = 2000
	engine := harness.Start(b, harness.Options{})
	db := engine.Client(engine.Default)
	ctx := context.Background()
	for i := range b.N {
		gw, err := remote.Open(ctx, remote.Options{Client: db, TablePrefix: fmt.Sprintf("bench%d-", i), Region: harness.Region})
		if err != nil {
			b.Fatal(err)
		}
		s := tenancy.SystemScope(tenancy.NewTenantID(), "test")
		if _, err := gw.CreateTable(ctx, s, &wire.CreateTableInput{TableName: "tbl",
			AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
			KeySchema:            []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
			BillingMode:          "PAY_PER_REQUEST"}); err != nil {
			b.Fatal(err)
		}
		exp := attr.Num(attr.MustNumber(strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)))
		start := time.Now()
		for k := range items {
			if _, err := gw.PutItem(ctx, s, &wire.PutItemInput{TableName: "tbl", Item: attr.Item{"pk": attr.Str(fmt.Sprintf("k%d", k)), "exp": exp, "g": attr.Str("x")}}); err != nil {
				b.Fatal(err)
			}
		}
		put := time.Since(start)
		table := gw.Table()
		wait := func(pk string) time.Duration {
			start := time.Now()
			for {
				out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: &table, KeyConditionExpression: aws.String("#p = :p"),
					ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
				if err != nil {
					b.Fatal(err)
				}
				if len(out.Items) == 0 {
					return time.Since(start) - time.Second // the settle wait
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		ttl := func(on bool) {
			if _, err := gw.UpdateTimeToLive(ctx, s, &wire.UpdateTimeToLiveInput{TableName: "tbl",
				TimeToLiveSpecification: wire.TimeToLiveSpecification{AttributeName: "exp", Enabled: on}}); err != nil {
				b.Fatal(err)
			}
		}
		ttl(true) // the items were written without TTL: every one gets its copy
		sync := wait("meta#ttl")
		ttl(false) // every copy is removed
		remove := wait("meta#ttl")
		g := "g"
		if _, err := gw.UpdateTable(ctx, s, &wire.UpdateTableInput{TableName: "tbl",
			AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: g, AttributeType: "S"}},
			GlobalSecondaryIndexUpdates: []wire.GlobalSecondaryIndexUpdate{{Create: &wire.CreateGlobalSecondaryIndexAction{
				IndexName: "byg", KeySchema: []wire.KeySchemaElement{{AttributeName: g, KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "ALL"}}}}}); err != nil {
			b.Fatal(err)
		}
		backfill := wait("meta#gsi")
		gw.Close()
		rate := func(d time.Duration) float64 { return items / d.Seconds() }
		b.ReportMetric(rate(put), "put-items/s")
		b.ReportMetric(rate(sync), "ttl-sync-items/s")
		b.ReportMetric(rate(remove), "ttl-remove-items/s")
		b.ReportMetric(rate(backfill), "gsi-backfill-items/s")
		b.ReportMetric(put.Seconds()/sync.Seconds(), "ttl-sync/put")
		b.ReportMetric(put.Seconds()/backfill.Seconds(), "backfill/put")
	}
}
