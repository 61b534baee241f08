package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// hotLimit is the engine's per-partition-key write limit in the hot
// tenant benchmark, in units per second: DynamoDB's is 1,000 WCU; this
// machine's gateway and engine together write a few thousand items per
// second, so the limit is scaled down to stay the bottleneck of one shard
// and not of eight.
const hotLimit = 150

// BenchmarkHotTenantShards is one hot tenant writing as fast as it can
// through a gateway over the tenantdb stand-in engine with a
// per-partition-key write limit (harness.Options.RemoteWriteLimit), its
// table in 1 shard and in 8: acknowledged writes per second, and the
// share of writes refused with the engine's throttling error (after the
// gateway's engine client retried them).
func BenchmarkHotTenantShards(b *testing.B) {
	for _, shards := range []int{1, 8} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			srv := harness.Start(b, harness.Options{Remote: true, RemoteWriteLimit: hotLimit})
			ctx := context.Background()
			cred := srv.NewTenant(b, "hot", "admin")
			if _, err := srv.Admin().SetShards(ctx, cred.TenantID, client.ShardRequest{Shards: shards, Table: "hot"}); err != nil {
				b.Fatal(err)
			}
			c := srv.Client(cred)
			if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
				TableName:            aws.String("hot"),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
				BillingMode:          types.BillingModePayPerRequest,
			}); err != nil {
				b.Fatal(err)
			}
			pad := strings.Repeat("x", 200)
			var next, ok, throttled atomic.Int64
			b.SetParallelism(16) // 32 writers on 2 cores
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("hot"), Item: map[string]types.AttributeValue{
						"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("order-%d", i)},
						"v":  &types.AttributeValueMemberS{Value: pad},
					}})
					switch {
					case err == nil:
						ok.Add(1)
					case strings.Contains(err.Error(), "ProvisionedThroughputExceeded"), strings.Contains(err.Error(), "Throttling"):
						throttled.Add(1)
					default:
						b.Error(err)
						return
					}
				}
			})
			el := time.Since(start).Seconds()
			b.StopTimer()
			b.ReportMetric(float64(ok.Load())/el, "writes/s")
			b.ReportMetric(float64(throttled.Load())/float64(ok.Load()+throttled.Load()), "throttled/op")
			b.ReportMetric(0, "ns/op")
		})
	}
}
