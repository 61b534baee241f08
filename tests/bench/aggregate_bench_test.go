package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/node"
)

// aggregatedTable is the bench table's twin with one aggregate (items
// counted by sort key: 20 groups); the aggregated workloads are the plain
// ones with its name.
const aggregatedTable = "bencha"

// aggregateRounds is how many plain/aggregated pairs
// BenchmarkAggregateWrites runs, alternating in one process.
const aggregateRounds = 4

// aggregateLagWrites is how many paced inserts the lag phase measures.
const aggregateLagWrites = 2000

func onAggregated(body func(int) string) func(int) string {
	return func(i int) string {
		return strings.ReplaceAll(body(i), `"`+table+`"`, `"`+aggregatedTable+`"`)
	}
}

// BenchmarkAggregateWrites runs PutItem and Transact4 against the bench
// table and against the same table with one aggregate maintained by the
// server, in alternating rounds on one server; then it measures the lag
// from a PutItem's acknowledgement to the aggregate's show reflecting it
// (paced single-writer inserts, show polled on another connection) and
// reports its p50 and p99.
func BenchmarkAggregateWrites(b *testing.B) {
	t := startTenantDB(b, node.Options{})
	c := t.dial(b)
	c.must(b, t.sign(b, "CreateTable", `{"TableName":"`+aggregatedTable+`","BillingMode":"PAY_PER_REQUEST",`+
		`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`))
	c.close()
	adm := &client.Client{Endpoint: "http://" + t.addr, Key: t.akid + "_" + t.secret}
	ctx := context.Background()
	who, err := adm.WhoAmI(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := adm.CreateAggregate(ctx, who.TenantID, client.CreateAggregateRequest{Name: "by-sk", Table: aggregatedTable, GroupBy: "sk", Count: true}); err != nil {
		b.Fatal(err)
	}
	for r := range aggregateRounds {
		for _, w := range workloads {
			if w.op != "PutItem" && w.op != "TransactWriteItems" {
				continue
			}
			plain := func() { b.Run(w.name+"/plain", func(b *testing.B) { run(b, t, w.name, w.op, w.body) }) }
			agg := func() {
				b.Run(w.name+"/aggregated", func(b *testing.B) { run(b, t, w.name, w.op, onAggregated(w.body)) })
			}
			if r%2 == 0 {
				plain()
				agg()
			} else {
				agg()
				plain()
			}
		}
	}
	b.Run("Lag", func(b *testing.B) {
		for range min(b.N, 1) {
			aggregateLag(b, t, adm, who.TenantID)
		}
	})
}

var lagRuns atomic.Int64

// aggregateLag inserts aggregateLagWrites new items, one every 2 ms on
// one connection, while another polls the aggregate: write i is visible
// once the groups' total count passes the count before it plus i.
func aggregateLag(b *testing.B, t *target, adm *client.Client, tenant string) {
	ctx := context.Background()
	run := lagRuns.Add(1)
	total := func() (int64, error) {
		a, err := adm.Aggregate(ctx, tenant, "by-sk")
		if err != nil {
			return 0, err
		}
		var n int64
		for _, g := range a.Groups {
			n += *g.Count
		}
		return n, nil
	}
	// Wait for the rounds' writes to be folded in.
	for prev := int64(-1); ; {
		n, err := total()
		if err != nil {
			b.Fatal(err)
		}
		if n == prev {
			break
		}
		prev = n
		time.Sleep(200 * time.Millisecond)
	}
	base, err := total()
	if err != nil {
		b.Fatal(err)
	}
	acks := make([]atomic.Int64, aggregateLagWrites) // unix ns of each acknowledgement
	var stop atomic.Bool
	var pollErr error
	lags := make([]time.Duration, 0, aggregateLagWrites)
	polled := make(chan struct{})
	defer stop.Store(true)
	go func() {
		defer close(polled)
		seen := 0
		for seen < aggregateLagWrites && !stop.Load() {
			tot, err := total()
			if err != nil {
				pollErr = err
				return
			}
			n := int(tot - base)
			now := time.Now().UnixNano()
			for ; seen < n && seen < aggregateLagWrites; seen++ {
				ack := acks[seen].Load()
				if ack == 0 || ack > now {
					ack = now // visible before its acknowledgement reached us
				}
				lags = append(lags, time.Duration(now-ack))
			}
		}
	}()
	c := t.dial(b)
	defer c.close()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for i := range aggregateLagWrites {
		<-tick.C
		// NB: new keys in every call (the benchmark framework calls the
		// Lag function more than once): each put is an insert.
		body := fmt.Sprintf(`{"TableName":"%s","Item":{"pk":{"S":"lag%d-%08d"},"sk":{"S":"s%02d"}}}`, aggregatedTable, run, i, i%20)
		status, out, err := c.do(t.sign(b, "PutItem", body))
		if err != nil || status != http.StatusOK {
			b.Fatalf("lag put %d: %d %v %.200s", i, status, err, out)
		}
		acks[i].Store(time.Now().UnixNano())
	}
	select {
	case <-polled:
	case <-time.After(30 * time.Second):
		a, err := adm.Aggregate(ctx, tenant, "by-sk")
		tot, _ := total()
		b.Fatalf("the aggregate did not catch up within 30 s: %d of %d writes seen (total %d, base %d); state %s, lag %d ms, applied %d, error %q (%v)",
			len(lags), aggregateLagWrites, tot, base, a.State, a.LagMillis, a.Applied, a.Error, err)
	}
	if pollErr != nil {
		b.Fatal(pollErr)
	}
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "lag-p50-ms")
	b.ReportMetric(q(0.99), "lag-p99-ms")
	b.ReportMetric(q(1), "lag-max-ms")
}
