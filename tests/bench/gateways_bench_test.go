package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// BenchmarkGateways measures gateways over a DynamoDB-API engine (issue
// 14), in one run, with the built binary (TENANTDB_BIN, or built here):
// the engine is a tenantdb process pinned to CPU 1 (taskset -c 1, on-disk
// synced store, admission control off), the gateways are tenantdb
// processes (`serve --backend dynamodb`, admission control on, so their
// capacity leases are in the numbers) pinned to CPU 0, and the load comes
// from this process, which the command pins to CPU 0 as well:
//
//	go build -o /tmp/tenantdb ./cmd/tenantdb
//	TENANTDB_BIN=/tmp/tenantdb taskset -c 0 go test ./tests/bench -run '^$' -bench BenchmarkGateways -benchtime 1x
//
// One tenant's clients use every gateway. It prints (and BENCHMARKS.md
// §23 shows):
//   - throughput of PutItem and GetItem from 32 clients spread over 1, 2
//     and 3 gateways, and from the same clients talking to the engine
//     directly, 3 s each, two rounds interleaved;
//   - engine calls and capacity units per logical PutItem, GetItem and
//     Query through a gateway, against the same operations sent to the
//     engine directly (from the engine's own usage report);
//   - the latency the gateway hop adds, p50 and p99, from one client
//     sending GetItem alternately through a gateway and directly.
func BenchmarkGateways(b *testing.B) {
	if _, err := exec.LookPath("taskset"); err != nil {
		b.Skip("taskset is not installed; the benchmark pins the engine and the gateways to CPUs of their own")
	}
	bin := os.Getenv(harness.BinEnv)
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "tenantdb")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/tenantdb/tenantdb/cmd/tenantdb")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
	}
	for range b.N {
		benchmarkGateways(b, bin)
	}
}

const (
	gwClients  = 32
	gwPhase    = 3 * time.Second
	gwRounds   = 2
	gwCostOps  = 200
	gwLatency  = 2000
	gwPreload  = 1000
	gwQueryLen = 10
)

// gwTarget is where a client sends requests: a gateway or the engine, with
// a tenant's credential there, and that tenant's id for usage reports.
type gwTarget struct {
	name   string
	c      *dynamodb.Client
	tenant string
}

func benchmarkGateways(b *testing.B, bin string) {
	ctx := context.Background()
	f := harness.StartBinaryEngine(b, bin, b.TempDir(), harness.Options{CPUs: "1"})
	// One tenant, served by every gateway (its control plane is in the
	// engine), as behind a load balancer.
	var gws []gwTarget
	var tenant harness.Credential
	for i := range 3 {
		gw := f.StartBinaryGateway(b, bin, b.TempDir(), harness.Options{Fairness: true, CPUs: "0"})
		if i == 0 {
			tenant = gw.NewTenant(b, "bench", "admin")
		}
		gws = append(gws, gwTarget{fmt.Sprintf("gateway %d", i+1), gw.Client(tenant), tenant.TenantID})
	}
	dc := f.Engine.NewTenant(b, "direct", "admin")
	direct := gwTarget{"engine directly", f.Engine.Client(dc), dc.TenantID}
	for _, tg := range []gwTarget{direct, gws[0]} {
		if err := gwSetup(ctx, tg.c); err != nil {
			b.Fatalf("%s: %v", tg.name, err)
		}
	}

	// Throughput.
	type cell struct{ put, get []float64 }
	configs := []struct {
		name    string
		targets []gwTarget
	}{{"engine directly", []gwTarget{direct}}, {"1 gateway", gws[:1]}, {"2 gateways", gws[:2]}, {"3 gateways", gws[:3]}}
	res := make([]cell, len(configs))
	var errs atomic.Int64
	for range gwRounds {
		for i, cf := range configs {
			res[i].put = append(res[i].put, gwLoad(cf.targets, "put", &errs))
			res[i].get = append(res[i].get, gwLoad(cf.targets, "get", &errs))
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nthroughput, %d clients, %s per phase, %d rounds (median; each round's value):\n", gwClients, gwPhase, gwRounds)
	fmt.Fprintf(&out, "| | PutItem/s | GetItem/s |\n|---|---|---|\n")
	for i, cf := range configs {
		fmt.Fprintf(&out, "| %s | %.0f %v | %.0f %v |\n", cf.name, median(res[i].put), round0(res[i].put), median(res[i].get), round0(res[i].get))
		b.ReportMetric(median(res[i].put), strings.ReplaceAll(cf.name, " ", "-")+"-put/s")
	}
	fmt.Fprintf(&out, "errors during the load: %d\n", errs.Load())

	// Engine calls and capacity per logical operation.
	admin := f.Engine.Admin()
	usage := func(tenant string) client.UsageReport {
		u, err := admin.Usage(ctx, tenant, time.Time{}, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		return u
	}
	fmt.Fprintf(&out, "\nengine calls and capacity units per logical operation (%d sequential requests each, the engine's usage report):\n", gwCostOps)
	fmt.Fprintf(&out, "| operation | client | engine calls (by operation) | engine RCU | engine WCU |\n|---|---|---|---|---|\n")
	for _, op := range []string{"put", "get", "query"} {
		for _, tg := range []gwTarget{gws[0], direct} {
			before := usage(f.EngineKey.TenantID)
			if tg.tenant == direct.tenant {
				before = usage(direct.tenant)
			}
			for i := range gwCostOps {
				if err := gwOp(ctx, tg.c, op, rand.N(gwPreload), fmt.Sprintf("cost-%d", i)); err != nil {
					b.Fatalf("%s %s: %v", tg.name, op, err)
				}
			}
			after := usage(f.EngineKey.TenantID)
			if tg.tenant == direct.tenant {
				after = usage(direct.tenant)
			}
			var calls []string
			var total int64
			for name, a := range after.ByOperation {
				if d := a.Requests - before.ByOperation[name].Requests; d > 0 {
					calls = append(calls, fmt.Sprintf("%s %.3f", name, float64(d)/gwCostOps))
					total += d
				}
			}
			slices.Sort(calls)
			fmt.Fprintf(&out, "| %s | %s | %.3f (%s) | %.3f | %.3f |\n", op, tg.name, float64(total)/gwCostOps, strings.Join(calls, ", "),
				(after.ConsumedReadUnits-before.ConsumedReadUnits)/gwCostOps, (after.ConsumedWriteUnits-before.ConsumedWriteUnits)/gwCostOps)
		}
	}

	// Latency of the gateway hop.
	var viaGW, viaEngine []time.Duration
	for i := range gwLatency {
		for _, tg := range []gwTarget{gws[0], direct} {
			start := time.Now()
			if err := gwOp(ctx, tg.c, "get", i%gwPreload, ""); err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			if tg.tenant == direct.tenant {
				viaEngine = append(viaEngine, d)
			} else {
				viaGW = append(viaGW, d)
			}
		}
	}
	p := func(ds []time.Duration, q float64) time.Duration {
		slices.Sort(ds)
		return ds[int(q*float64(len(ds)-1))]
	}
	fmt.Fprintf(&out, "\nGetItem latency, one client, %d requests each, alternating:\n| | p50 | p99 |\n|---|---|---|\n", gwLatency)
	fmt.Fprintf(&out, "| engine directly | %v | %v |\n| through a gateway | %v | %v |\n| added by the hop | %v | %v |\n",
		p(viaEngine, .5), p(viaEngine, .99), p(viaGW, .5), p(viaGW, .99), p(viaGW, .5)-p(viaEngine, .5), p(viaGW, .99)-p(viaEngine, .99))
	b.ReportMetric(float64(p(viaGW, .5)-p(viaEngine, .5))/1e3, "hop-p50-µs")
	// NB: printed, not logged: the testing package truncates a
	// benchmark's long log.
	fmt.Println(out.String())
}

// gwSetup creates the benchmark's table and preloads the items GetItem
// and Query read.
func gwSetup(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("Bench"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		return err
	}
	for i := range gwPreload {
		if err := gwOp(ctx, c, "put", 0, fmt.Sprintf("g%04d", i)); err != nil {
			return err
		}
	}
	for i := range gwQueryLen {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Bench"), Item: gwItem("q", i)}); err != nil {
			return err
		}
	}
	return nil
}

var gwPayload = strings.Repeat("x", 100)

func gwItem(pk string, sk int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberN{Value: fmt.Sprint(sk)}, "v": &types.AttributeValueMemberS{Value: gwPayload}}
}

// gwOp sends one logical operation: put writes item (key, 0), get reads
// preloaded item i, query reads the 10 items of one partition.
func gwOp(ctx context.Context, c *dynamodb.Client, op string, i int, key string) error {
	var err error
	switch op {
	case "put":
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Bench"), Item: gwItem(key, 0)})
	case "get":
		var out *dynamodb.GetItemOutput
		out, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Bench"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("g%04d", i)}, "sk": &types.AttributeValueMemberN{Value: "0"}}})
		if err == nil && out.Item == nil {
			err = fmt.Errorf("item g%04d missing", i)
		}
	case "query":
		var out *dynamodb.QueryOutput
		out, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Bench"), KeyConditionExpression: aws.String("pk = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "q"}}})
		if err == nil && out.Count != gwQueryLen {
			err = fmt.Errorf("query: %d items", out.Count)
		}
	}
	return err
}

// gwLoad runs gwClients clients, spread round robin over targets, sending
// op for gwPhase, and returns the requests completed per second.
func gwLoad(targets []gwTarget, op string, errs *atomic.Int64) float64 {
	ctx := context.Background()
	var done atomic.Int64
	deadline := time.Now().Add(gwPhase)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range gwClients {
		tg := targets[w%len(targets)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				if err := gwOp(ctx, tg.c, op, rand.N(gwPreload), fmt.Sprintf("load-%d-%d", w, i)); err != nil {
					errs.Add(1)
					continue
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func round0(v []float64) []int {
	var r []int
	for _, x := range v {
		r = append(r, int(x+0.5))
	}
	return r
}
