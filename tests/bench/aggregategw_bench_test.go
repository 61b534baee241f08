package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// aggLagSide is one server with a tenant, a table and an aggregate
// counting its items by grp.
type aggLagSide struct {
	ddb    *dynamodb.Client
	adm    *client.Client
	tenant string
	n      int64 // items written so far (all in group g)
}

const aggLagTable = "agglag"

func newAggLagSide(b *testing.B, srv *harness.Server, name string) *aggLagSide {
	ctx := context.Background()
	cred := srv.NewTenant(b, name, "admin")
	c := srv.Client(cred)
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(aggLagTable),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		b.Fatal(err)
	}
	harness.WaitActive(b, ctx, c, aggLagTable)
	s := &aggLagSide{ddb: c, adm: &client.Client{Endpoint: srv.Endpoint, Key: cred.Key}, tenant: cred.TenantID}
	if _, err := s.adm.CreateAggregate(ctx, s.tenant, client.CreateAggregateRequest{Name: "lag", Table: aggLagTable, GroupBy: "grp", Count: true, Sum: []string{"amt"}}); err != nil {
		b.Fatal(err)
	}
	s.wait(b, 0, time.Minute)
	return s
}

func (s *aggLagSide) put(b *testing.B) {
	s.n++
	if _, err := s.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(aggLagTable), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("k%07d", s.n)}, "grp": &types.AttributeValueMemberS{Value: "g"},
		"amt": &types.AttributeValueMemberN{Value: "1.5"}}}); err != nil {
		b.Fatal(err)
	}
}

// wait polls the aggregate (every 5 ms) until group g counts want items,
// and returns how many shows it took.
func (s *aggLagSide) wait(b *testing.B, want int64, within time.Duration) int {
	deadline := time.Now().Add(within)
	for polls := 1; ; polls++ {
		a, err := s.adm.Aggregate(context.Background(), s.tenant, "lag")
		if err == nil && a.State == "ready" {
			var got int64
			if g, ok := a.Groups["g"]; ok && g.Count != nil {
				got = *g.Count
			}
			if got == want {
				return polls
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("aggregate never counted %d: %+v %v", want, a, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lags writes n items one at a time and returns each one's time from
// its acknowledgement to the aggregate showing it (ms), sorted.
func (s *aggLagSide) lags(b *testing.B, n int) []float64 {
	out := make([]float64, 0, n)
	for range n {
		s.put(b)
		t0 := time.Now()
		s.wait(b, s.n, time.Minute)
		out = append(out, float64(time.Since(t0).Microseconds())/1000)
	}
	sort.Float64s(out)
	return out
}

// engineCalls sums the stand-in engine's DynamoDB API requests
// (tenantdb_requests_total, every operation and code).
func engineCalls(b *testing.B, eng *harness.Server) float64 {
	req, _ := http.NewRequest("GET", eng.Endpoint+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+eng.Operator.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("engine /metrics: %s", resp.Status)
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "tenantdb_requests_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// BenchmarkAggregateLagGateway measures, in one run, an aggregate's lag
// from a write's acknowledgement to the aggregate showing it, on the
// embedded server and on a gateway over the in-process stand-in engine
// (where the aggregate is folded from the engine table's DynamoDB
// stream, polled every second), writes one at a time, in alternating
// rounds; and the engine calls per folded change on the gateway: the
// engine's requests during a burst of writes with the aggregate, minus
// those during the same burst on a table without one (the control), per
// write, with the shows that waited for it subtracted (4 engine calls
// each).
func BenchmarkAggregateLagGateway(b *testing.B) {
	emb := newAggLagSide(b, harness.Start(b), "agglagembedded")
	f := harness.StartCluster(b, 1, harness.Options{})
	gw := newAggLagSide(b, f.Gateways[0], "agglaggateway")
	// The control: another tenant of the same gateway, same table, no
	// aggregate.
	ctl := func() *aggLagSide {
		cred := f.Gateways[0].NewTenant(b, "agglagcontrol", "admin")
		c := f.Gateways[0].Client(cred)
		if _, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
			TableName:            aws.String(aggLagTable),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			b.Fatal(err)
		}
		harness.WaitActive(b, context.Background(), c, aggLagTable)
		return &aggLagSide{ddb: c}
	}()

	const rounds, perRound, burst = 3, 20, 200
	var e50, e99, g50, g99, perChange []float64
	pct := func(v []float64, p float64) float64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	for range rounds {
		l := emb.lags(b, perRound)
		e50, e99 = append(e50, pct(l, .5)), append(e99, pct(l, .99))
		l = gw.lags(b, perRound)
		g50, g99 = append(g50, pct(l, .5)), append(g99, pct(l, .99))

		// Engine calls: the burst on the control, then on the aggregate's
		// table, each followed by 3 s of the gateway's idle work.
		c0 := engineCalls(b, f.Engine)
		for range burst {
			ctl.put(b)
		}
		time.Sleep(3 * time.Second)
		c1 := engineCalls(b, f.Engine)
		for range burst {
			gw.put(b)
		}
		polls := gw.wait(b, gw.n, time.Minute)
		if d := 3*time.Second - time.Duration(polls)*5*time.Millisecond; d > 0 {
			time.Sleep(d)
		}
		c2 := engineCalls(b, f.Engine)
		perChange = append(perChange, ((c2-c1-4*float64(polls))-(c1-c0))/burst)
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	b.ReportMetric(med(e50), "embedded-lag-p50-ms")
	b.ReportMetric(med(e99), "embedded-lag-p99-ms")
	b.ReportMetric(med(g50), "gateway-lag-p50-ms")
	b.ReportMetric(med(g99), "gateway-lag-p99-ms")
	b.ReportMetric(med(perChange), "engine-calls/folded-change")
}
