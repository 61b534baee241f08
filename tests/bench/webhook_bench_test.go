package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/webhook"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// hookedTable is the bench table's twin with a webhook subscription.
const hookedTable = "benchw"

// hookNode is a node wired like `tenantdb serve --allow-private-webhooks`
// on a synced on-disk store, with the operator's admin client.
type hookNode struct {
	n    *node.Node
	addr string
	op   *client.Client
}

func startHookNode(b *testing.B, wo webhook.Options) *hookNode {
	b.Helper()
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	n, err := node.Open(ctx, node.Options{DataDir: b.TempDir(), Endpoint: l.Addr().String(), Fairness: true,
		AllowPrivateWebhooks: true, Webhooks: wo,
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		l.Close()
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n.Shutdown(sctx)
		<-served
		n.Close()
	})
	h := &hookNode{n: n, addr: l.Addr().String()}
	h.op = client.New("http://"+h.addr, n.Bootstrap().Operator.String())
	return h
}

// tenant creates a tenant with an admin key, its quota out of the way, and
// tables named tables (pk, sk); it returns the key's target and admin
// client.
func (h *hookNode) tenant(b *testing.B, name string, tables ...string) (*target, *client.Client, string) {
	b.Helper()
	ctx := context.Background()
	tn, err := h.op.CreateTenant(ctx, client.CreateTenantRequest{Name: name})
	if err != nil {
		b.Fatal(err)
	}
	k, err := h.op.CreateKey(ctx, tn.ID, client.CreateKeyRequest{Role: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	id, _ := tenancy.ParseTenantID(tn.ID)
	units := 1e9
	if _, err := h.n.Quotas().SetQuota(ctx, tenancy.SystemScope(id, "bench"), "", quota.Update{ReadUnits: &units, WriteUnits: &units}); err != nil {
		b.Fatal(err)
	}
	t := &target{addr: h.addr, akid: k.AccessKeyID, secret: k.SecretAccessKey}
	c := t.dial(b)
	defer c.close()
	for _, tbl := range tables {
		c.must(b, t.sign(b, "CreateTable", `{"TableName":"`+tbl+`","BillingMode":"PAY_PER_REQUEST",`+
			`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],`+
			`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`))
	}
	return t, client.New("http://"+h.addr, k.Key), tn.ID
}

func subscribe(b *testing.B, c *client.Client, tenant, table string, rc *harness.Receiver) client.Subscription {
	b.Helper()
	s, err := c.CreateSubscription(context.Background(), tenant, client.CreateSubscriptionRequest{Table: table, URL: rc.URL})
	if err != nil {
		b.Fatal(err)
	}
	rc.Trust(s.Secret)
	return s
}

// BenchmarkWebhookWrites measures, on one server, PutItem throughput on a
// table without and with one webhook subscription, and on one with a
// NEW_AND_OLD_IMAGES stream and no subscription (the change log's share
// of the cost), in alternating rounds (concurrency 64, 1 KB items), then the subscription's delivery: records
// per second draining a backlog, and commit-to-receipt lag at a steady
// write rate.
func BenchmarkWebhookWrites(b *testing.B) {
	h := startHookNode(b, webhook.Options{})
	t, admin, tid := h.tenant(b, "hookbench", table, hookedTable)
	c := t.dial(b)
	c.must(b, t.sign(b, "CreateTable", `{"TableName":"`+streamedTable+`","BillingMode":"PAY_PER_REQUEST",`+
		`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],`+
		`"StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`))
	c.close()
	rc := harness.StartReceiver(b)
	sub := subscribe(b, admin, tid, hookedTable, rc)
	put := workloads[0]
	if put.op != "PutItem" {
		b.Fatal("workloads[0] is not PutItem")
	}
	for r := range streamRounds {
		plain := func() { b.Run("PutItem/plain", func(b *testing.B) { run(b, t, put.name, put.op, put.body) }) }
		hooked := func() {
			b.Run("PutItem/subscribed", func(b *testing.B) {
				run(b, t, put.name, put.op, func(i int) string {
					return strings.ReplaceAll(put.body(i), `"`+table+`"`, `"`+hookedTable+`"`)
				})
			})
		}
		logged := func() {
			b.Run("PutItem/streamed", func(b *testing.B) { run(b, t, put.name, put.op, onStreamed(put.body)) })
		}
		order := []func(){plain, hooked, logged}
		for i := range order {
			order[(i+r)%3]()
		}
	}
	// Let the subscription catch up with the rounds before measuring.
	waitIdle(b, rc)
	b.Run("Drain", func(b *testing.B) {
		for range min(b.N, 2) {
			drain(b, t, admin, tid, sub.ID, rc)
		}
	})
	b.Run("Lag", func(b *testing.B) {
		for range min(b.N, 1) {
			steadyLag(b, t, hookedTable, rc, 200, 5*time.Second, "lag").report(b, "")
		}
	})
}

// waitIdle waits until rc has received nothing for a second.
func waitIdle(b *testing.B, rc *harness.Receiver) {
	last, since := len(rc.Records()), time.Now()
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n := len(rc.Records()); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > time.Second {
			return
		}
	}
	b.Fatal("the subscription did not catch up within 5 minutes")
}

// drain pauses the subscription, writes a backlog of 4,000 records
// (BatchWriteItem of 25), resumes it and reports records/s until all are
// delivered.
func drain(b *testing.B, t *target, admin *client.Client, tid, sub string, rc *harness.Receiver) {
	ctx := context.Background()
	const backlog = 4000
	if _, err := admin.PauseSubscription(ctx, tid, sub); err != nil {
		b.Fatal(err)
	}
	c := t.dial(b)
	tag := fmt.Sprintf("d%d", time.Now().UnixNano())
	for lo := 0; lo < backlog; lo += 25 {
		var reqs []string
		for n := lo; n < lo+25; n++ {
			reqs = append(reqs, `{"PutRequest":{"Item":{"pk":{"S":"`+tag+`"},"sk":{"S":"`+fmt.Sprintf("%06d", n)+`"},"data":{"S":"`+strings.Repeat("x", 900)+`"}}}}`)
		}
		c.must(b, t.sign(b, "BatchWriteItem", `{"RequestItems":{"`+hookedTable+`":[`+strings.Join(reqs, ",")+`]}}`))
	}
	c.close()
	before := len(rc.Records())
	start, cpu0 := time.Now(), cpuTime()
	if _, err := admin.ResumeSubscription(ctx, tid, sub); err != nil {
		b.Fatal(err)
	}
	rc.WaitFor(b, 5*time.Minute, "the backlog", func(r []harness.Received) bool { return len(r)-before >= backlog })
	wall := time.Since(start)
	b.ReportMetric(backlog/wall.Seconds(), "records/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/backlog, "cpu-µs/record")
}

// lagStats are the percentiles (ms) of commit-to-receipt lag, measured
// from each write's acknowledgement (a lower bound: the commit precedes
// it) and from its request's send (an upper bound: the commit follows
// it).
type lagStats struct {
	ackP50, ackP99, sendP50, sendP99 float64
	n                                int
}

func (l lagStats) report(b *testing.B, prefix string) {
	b.ReportMetric(l.ackP50, prefix+"lag-p50-ms")
	b.ReportMetric(l.ackP99, prefix+"lag-p99-ms")
	b.ReportMetric(l.sendP50, prefix+"lag-from-send-p50-ms")
	b.ReportMetric(l.sendP99, prefix+"lag-from-send-p99-ms")
	b.ReportMetric(float64(l.n), prefix+"records")
}

// steadyLag writes rate items per second to table for d from two
// connections and returns the lag of their records' first arrival at rc.
func steadyLag(b *testing.B, t *target, table string, rc *harness.Receiver, rate int, d time.Duration, tag string) lagStats {
	b.Helper()
	tag = fmt.Sprintf("%s%d", tag, time.Now().UnixNano())
	var mu sync.Mutex
	acked, sent := map[string]time.Time{}, map[string]time.Time{}
	var wg sync.WaitGroup
	const writers = 2
	total := int(float64(rate) * d.Seconds())
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := t.dial(b)
			defer c.close()
			tick := time.NewTicker(time.Duration(writers) * time.Second / time.Duration(rate))
			defer tick.Stop()
			for i := w; i < total; i += writers {
				<-tick.C
				sk := fmt.Sprintf("%06d", i)
				req := t.sign(b, "PutItem", `{"TableName":"`+table+`","Item":{"pk":{"S":"`+tag+`"},"sk":{"S":"`+sk+`"},"data":{"S":"x"}}}`)
				before := time.Now()
				if st, body, err := c.do(req); err != nil || st != 200 {
					b.Errorf("PutItem: %d %s %v", st, body, err)
					return
				}
				now := time.Now()
				mu.Lock()
				acked[sk], sent[sk] = now, before
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got := rc.WaitFor(b, 2*time.Minute, tag+" records", func(r []harness.Received) bool {
		c := 0
		for _, x := range r {
			if pk, _ := x.Dynamodb.Keys["pk"]["S"].(string); pk == tag {
				c++
			}
		}
		return c >= total
	})
	seen := map[string]bool{}
	var lags, fromSend []float64
	for _, x := range got {
		pk, _ := x.Dynamodb.Keys["pk"]["S"].(string)
		sk, _ := x.Dynamodb.Keys["sk"]["S"].(string)
		if pk != tag || seen[sk] {
			continue
		}
		seen[sk] = true
		lag := x.Arrived.Sub(acked[sk])
		if lag < 0 {
			lag = 0 // delivered before the client read the acknowledgement
		}
		lags = append(lags, float64(lag.Microseconds())/1000)
		fromSend = append(fromSend, float64(x.Arrived.Sub(sent[sk]).Microseconds())/1000)
	}
	sort.Float64s(lags)
	sort.Float64s(fromSend)
	return lagStats{lags[len(lags)/2], lags[len(lags)*99/100], fromSend[len(fromSend)/2], fromSend[len(fromSend)*99/100], len(lags)}
}

// BenchmarkWebhookNoisyNeighbour measures tenant B's commit-to-receipt lag
// at 100 writes/s while tenant A (5 subscriptions, writing at the same
// rate) has a healthy endpoint, an endpoint answering 500, and one that
// hangs past the delivery timeout (1 s; retries every 50 ms to 1 s, so A
// retries as hard as the settings allow).
func BenchmarkWebhookNoisyNeighbour(b *testing.B) {
	h := startHookNode(b, webhook.Options{Timeout: time.Second, BackoffMin: 50 * time.Millisecond, BackoffMax: time.Second})
	ta, adminA, aid := h.tenant(b, "noisyA", "tba0", "tba1", "tba2", "tba3", "tba4")
	tb, adminB, bid := h.tenant(b, "victimB", "tbb")
	ra, rb := harness.StartReceiver(b), harness.StartReceiver(b)
	for i := range 5 {
		subscribe(b, adminA, aid, fmt.Sprintf("tba%d", i), ra)
	}
	subscribe(b, adminB, bid, "tbb", rb)
	const rate, phase = 100, 5 * time.Second
	for _, p := range []struct {
		name    string
		respond func(int64) (int, time.Duration)
	}{
		{"A-healthy", func(int64) (int, time.Duration) { return 200, 0 }},
		{"A-500", func(int64) (int, time.Duration) { return 500, 0 }},
		{"A-timeouts", func(int64) (int, time.Duration) { return 200, 3 * time.Second }},
	} {
		b.Run(p.name, func(b *testing.B) {
			ra.Respond(p.respond)
			calls0 := ra.Calls()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := range 5 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := ta.dial(b)
					defer c.close()
					tick := time.NewTicker(5 * time.Second / rate)
					defer tick.Stop()
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						c.do(ta.sign(b, "PutItem", fmt.Sprintf(`{"TableName":"tba%d","Item":{"pk":{"S":"a"},"sk":{"S":"%s-%06d"}}}`, i, p.name, n)))
					}
				}()
			}
			time.Sleep(time.Second) // A's failures under way
			l := steadyLag(b, tb, "tbb", rb, rate, phase, p.name)
			close(stop)
			wg.Wait()
			l.report(b, "B-")
			b.ReportMetric(float64(ra.Calls()-calls0), "A-attempts")
		})
	}
}
