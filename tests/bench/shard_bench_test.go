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
// tenant benchmark, in units per second: DynamoDB's is 1,000 WCU; on the
// shared 2-core machine the gateway and the stand-in engine together
// write a few hundred items per second (the "unlimited" case), so the
// limit is scaled down until eight shards' capacity (8 × 25) is about the
// machine's own ceiling and one shard's is far below it.
const hotLimit = 25

// BenchmarkHotTenantShards is one hot tenant writing as fast as it can
// through a gateway over the tenantdb stand-in engine with a
// per-partition-key write limit (harness.Options.RemoteWriteLimit), its
// table in 1 shard and in 8: acknowledged writes per second, and the
// share of writes refused with the engine's throttling error (after the
// gateway's engine client retried them). "unlimited" is 1 shard over the
// engine without the limit: the machine's own ceiling in the same run.
func BenchmarkHotTenantShards(b *testing.B) {
	for _, v := range []struct {
		name   string
		shards int
		limit  float64
	}{{"shards=1", 1, hotLimit}, {"shards=8", 8, hotLimit}, {"unlimited", 1, 0}} {
		shards := v.shards
		b.Run(v.name, func(b *testing.B) {
			srv := harness.Start(b, harness.Options{Remote: true, RemoteWriteLimit: v.limit})
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
