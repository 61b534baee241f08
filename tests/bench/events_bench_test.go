package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/webhook"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// The tables of BenchmarkEventsWrites, one schema: the plain bench table,
// one whose change log is retained by a consumer that never reads it (the
// records' cost alone), and one with a webhook subscription and an
// aggregate (the records and both consumers' work).
const (
	loggedTable = "benchl"
	eventsTable = "benche"
)

// eventsRounds is how many rotations of the three variants
// BenchmarkEventsWrites runs in one process.
const eventsRounds = 6

func onTable(name string, body func(int) string) func(int) string {
	return func(i int) string { return strings.ReplaceAll(body(i), `"`+table+`"`, `"`+name+`"`) }
}

// BenchmarkEventsWrites measures, on one server wired as `serve
// --allow-private-webhooks`, write throughput to a table with one webhook
// subscription (no filter, a loopback receiver verifying signatures) and
// one aggregate (count by sort key, 20 groups) against a table with
// neither, and against a table whose log is kept (both images, hidden
// stream) for a consumer that does no work: the split between what the
// records cost the writers and what the consumers cost. The three rotate
// over eventsRounds rounds of PutItem (1 KB items) and Transact4 (4 such
// puts) from 64 connections. After each round with consumers it waits
// until both have caught up (outside the timer) and reports how long that
// took after the last write (catchup-ms) and the CPU it took per request
// of the round (catchup-cpu-µs/op, to add to cpu-µs/op; it includes the
// benchmark's polling of the admin API), so that a consumer falling
// behind cannot look cheap and its backlog never runs into another
// variant's round; and the records per delivery of the last 200.
func BenchmarkEventsWrites(b *testing.B) {
	h := startHookNode(b, webhook.Options{})
	t, admin, tid := h.tenant(b, "eventsbench", table, loggedTable, eventsTable)
	ctx := context.Background()
	id, err := tenancy.ParseTenantID(tid)
	if err != nil {
		b.Fatal(err)
	}
	// NB: a consumer that holds the log and never reads it: the table's
	// writes append NEW_AND_OLD records to a hidden stream, nothing more.
	if err := h.n.Engine().RetainLog(ctx, tenancy.SystemScopeIn(id, "live", "bench"), loggedTable, "bench:idle"); err != nil {
		b.Fatal(err)
	}
	rc := harness.StartReceiver(b)
	sub := subscribe(b, admin, tid, eventsTable, rc)
	if _, err := admin.CreateAggregate(ctx, tid, client.CreateAggregateRequest{Name: "by-sk", Table: eventsTable, GroupBy: "sk", Count: true}); err != nil {
		b.Fatal(err)
	}
	applied := func() (uint64, uint64) {
		a, err := admin.Aggregate(ctx, tid, "by-sk")
		if err != nil {
			b.Fatal(err)
		}
		c, err := changelog.ParseCursor(a.Cursor)
		if err != nil {
			b.Fatal(err)
		}
		return a.Applied, c.Seq
	}
	// delivered returns the log sequence number (within the namespace) of
	// the last record delivered, and the mean records per delivery of the
	// last n deliveries.
	delivered := func(n int) (uint64, float64) {
		ds, err := admin.SubscriptionDeliveries(ctx, tid, sub.ID, n)
		if err != nil {
			b.Fatal(err)
		}
		if len(ds) == 0 || ds[0].Outcome != "delivered" {
			return 0, 0
		}
		p, ok := changelog.ParseSequenceNumber(ds[0].LastSequence)
		if !ok {
			b.Fatalf("delivery's last sequence %q", ds[0].LastSequence)
		}
		recs := 0
		for _, d := range ds {
			recs += d.Records
		}
		return p.Seq, float64(recs) / float64(len(ds))
	}
	for _, w := range workloads {
		if w.op != "PutItem" && w.op != "TransactWriteItems" {
			continue
		}
		per := uint64(1)
		if w.op == "TransactWriteItems" {
			per = 4
		}
		plain := func() { b.Run(w.name+"/plain", func(b *testing.B) { run(b, t, w.name, w.op, w.body) }) }
		logged := func() {
			b.Run(w.name+"/logged", func(b *testing.B) { run(b, t, w.name, w.op, onTable(loggedTable, w.body)) })
		}
		events := func() {
			b.Run(w.name+"/events", func(b *testing.B) {
				a0, _ := applied()
				run(b, t, w.name, w.op, onTable(eventsTable, w.body))
				cpu0 := cpuTime()
				// run's warm-up sends one request per connection; every
				// put is one change.
				want := uint64(concurrency+b.N) * per
				end := time.Now()
				for deadline := end.Add(5 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
					// NB: the aggregate counts every change exactly once;
					// once it has them all, the subscription has caught up
					// when it delivered the last one the aggregate folded.
					a, seq := applied()
					d, _ := delivered(1)
					if a-a0 >= want && d >= seq {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("consumers did not catch up within 5 minutes: aggregate %d of %d (at %d), delivered up to %d", a-a0, want, seq, d)
					}
				}
				b.ReportMetric(float64(time.Since(end).Microseconds())/1000, "catchup-ms")
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "catchup-cpu-µs/op")
				_, rpd := delivered(200)
				b.ReportMetric(rpd, "records/delivery")
			})
		}
		order := []func(){plain, events, logged}
		for r := range eventsRounds {
			for i := range order {
				order[(i+r)%3]()
			}
		}
	}
}
