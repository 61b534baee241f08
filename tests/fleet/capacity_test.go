package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

func f64(v float64) *float64 { return &v }

func createTable(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// TestGatewayThrottlesFromTheEngine: a gateway with admission control on
// takes a tenant's capacity from the engine's bucket: the tenant's writes
// beyond its burst are refused with DynamoDB's
// ProvisionedThroughputExceededException, and the bucket is an item of
// the engine, under the tenant's id.
func TestGatewayThrottlesFromTheEngine(t *testing.T) {
	f := harness.StartCluster(t, 1, harness.Options{Fairness: true})
	gw := f.Gateways[0]
	tenant := gw.NewTenant(t, "capped", "admin")
	ctx := context.Background()
	if _, err := gw.Admin().SetQuota(ctx, tenant.TenantID, "", client.QuotaUpdate{WriteUnits: f64(5), BurstSeconds: f64(1)}); err != nil {
		t.Fatal(err)
	}
	c := gw.Client(tenant)
	createTable(t, c, "Capped")
	admitted := 0
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Capped"), Item: map[string]types.AttributeValue{"pk": s("k")}})
		if err == nil {
			admitted++
		}
	}
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) {
		t.Fatalf("after %d writes: %v, want ProvisionedThroughputExceededException", admitted, err)
	}
	// A burst of 5 units, plus what refilled meanwhile, plus one slice.
	if admitted < 5 || admitted > 20 {
		t.Errorf("%d writes of one unit admitted before the throttle, want about the burst of 5", admitted)
	}
	direct := f.Engine.Client(f.EngineKey)
	out, qerr := direct.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("gw-tenantdb"),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("meta#cap#" + tenant.TenantID)},
		ConsistentRead:            aws.Bool(true)})
	if qerr != nil {
		t.Fatal(qerr)
	}
	if out.Count == 0 {
		t.Errorf("no capacity bucket of tenant %s in the engine", tenant.TenantID)
	}
	for _, it := range out.Items {
		if _, ok := it["tenantdb:tat"].(*types.AttributeValueMemberN); !ok {
			t.Errorf("bucket item without its time: %v", it)
		}
	}
}

// TestCapacityAcrossGateways: one tenant with 20 WCU/s and a burst of 1 s
// writes through 2 gateways with 4 clients each for 2 s. Together the
// gateways admit at most its burst plus its rate over the time taken plus
// the stated overshoot (a lease slice of 2 units per gateway, and one
// request's overdraw per client), not twice that as gateways with
// buckets of their own would; and they do admit most of it.
func TestCapacityAcrossGateways(t *testing.T) {
	const (
		gateways = 2
		clients  = 4 // per gateway
		rate     = 20.0
		burst    = 1.0
		slice    = 2.0 // 100 ms of the rate
	)
	f := harness.StartCluster(t, gateways, harness.Options{Fairness: true})
	cs := sharedTenantWith(t, f, "capped", func(c harness.Credential) {
		if _, err := f.Gateways[0].Admin().SetQuota(context.Background(), c.TenantID, "", client.QuotaUpdate{WriteUnits: f64(rate), BurstSeconds: f64(burst)}); err != nil {
			t.Fatal(err)
		}
	})
	createTable(t, cs[0], "Capped")
	waitTable(t, cs, "Capped")
	var admitted, throttled atomic.Int64
	start := time.Now()
	deadline := start.Add(2 * time.Second)
	var wg sync.WaitGroup
	for g, c := range cs {
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(deadline); i++ {
					_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("Capped"),
						Item: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("g%d-w%d-%d", g, w, i))}})
					var pte *types.ProvisionedThroughputExceededException
					switch {
					case err == nil:
						admitted.Add(1)
					case errors.As(err, &pte):
						throttled.Add(1)
						time.Sleep(5 * time.Millisecond)
					default:
						t.Errorf("PutItem through gateway %d: %v", g+1, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	allowed := rate*burst + rate*elapsed
	bound := allowed + gateways*slice + gateways*clients*1
	t.Logf("%d writes of one unit admitted, %d throttled, in %.2f s through %d gateways: allowed %.0f, with the overshoot bound %.0f",
		admitted.Load(), throttled.Load(), elapsed, gateways, allowed, bound)
	if float64(admitted.Load()) > bound {
		t.Errorf("%d units admitted, more than the bound %.0f: the gateways do not share the tenant's capacity", admitted.Load(), bound)
	}
	if float64(admitted.Load()) < allowed/2 || throttled.Load() == 0 {
		t.Errorf("%d units admitted and %d throttled: want most of the %.0f allowed, and throttling beyond", admitted.Load(), throttled.Load(), allowed)
	}
}
