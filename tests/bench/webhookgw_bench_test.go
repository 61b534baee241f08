package bench

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/webhook"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// BenchmarkWebhookLagGateway measures, in one run, a webhook's
// commit-to-receipt lag at 50 writes/s on the embedded server and on a
// gateway over the in-process stand-in engine (where delivery polls the
// engine table's DynamoDB stream every second), in alternating rounds of
// 5 s; it reports the median over rounds of each round's p50 and p99.
func BenchmarkWebhookLagGateway(b *testing.B) {
	ctx := context.Background()
	h := startHookNode(b, webhook.Options{})
	te, admin, tid := h.tenant(b, "lagembedded", hookedTable)
	re := harness.StartReceiver(b)
	subscribe(b, admin, tid, hookedTable, re)

	f := harness.StartCluster(b, 1, harness.Options{AllowPrivateWebhooks: true})
	gw := f.Gateways[0]
	cred := gw.NewTenant(b, "laggateway", "admin")
	if _, err := gw.Client(cred).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(hookedTable),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		BillingMode: types.BillingModePayPerRequest,
	}); err != nil {
		b.Fatal(err)
	}
	harness.WaitActive(b, ctx, gw.Client(cred), hookedTable)
	tg := &target{addr: strings.TrimPrefix(gw.Endpoint, "http://"), akid: cred.AccessKeyID, secret: cred.SecretAccessKey}
	rg := harness.StartReceiver(b)
	subscribe(b, &client.Client{Endpoint: gw.Endpoint, Key: cred.Key}, cred.TenantID, hookedTable, rg)
	time.Sleep(2 * time.Second) // the gateway's worker takes its lease

	// streamCalls counts the engine's stream reads (GetRecords,
	// GetShardIterator, DescribeStream) served to the gateways so far,
	// from the engine's usage of their credential.
	eng := f.Engine.Admin()
	streamCalls := func() float64 {
		rep, err := eng.Usage(ctx, f.EngineKey.TenantID, time.Time{}, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, op := range []string{"GetRecords", "GetShardIterator", "DescribeStream"} {
			n += rep.ByOperation[op].Requests
		}
		return float64(n)
	}

	const rounds = 3
	var e50, e99, g50, g99, busy, idle []float64
	for range rounds {
		l := steadyLag(b, te, hookedTable, re, 50, 5*time.Second, "e")
		e50, e99 = append(e50, l.ackP50), append(e99, l.ackP99)
		c0, t0 := streamCalls(), time.Now()
		l = steadyLag(b, tg, hookedTable, rg, 50, 5*time.Second, "g")
		g50, g99 = append(g50, l.ackP50), append(g99, l.ackP99)
		busy = append(busy, (streamCalls()-c0)/time.Since(t0).Seconds())
		// Quiet: the subscription's polls once it has found nothing for
		// a while (its lease renewals, the gateway's own writes, go on).
		time.Sleep(3 * time.Second)
		c0, t0 = streamCalls(), time.Now()
		time.Sleep(5 * time.Second)
		idle = append(idle, (streamCalls()-c0)/time.Since(t0).Seconds())
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	b.ReportMetric(med(e50), "embedded-lag-p50-ms")
	b.ReportMetric(med(e99), "embedded-lag-p99-ms")
	b.ReportMetric(med(g50), "gateway-lag-p50-ms")
	b.ReportMetric(med(g99), "gateway-lag-p99-ms")
	b.ReportMetric(med(busy), "gateway-stream-calls/s-writing")
	b.ReportMetric(med(idle), "gateway-stream-calls/s-idle")
}
