package quota

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var quiet = slog.New(slog.DiscardHandler)

func memDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newManager(t *testing.T, o Options) *Manager {
	t.Helper()
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// lookup returns the operation named name.
func lookup(t testing.TB, name string) *dynamo.Op {
	t.Helper()
	op, ok := dynamo.Lookup(name)
	if !ok {
		t.Fatalf("no operation %s", name)
	}
	return op
}

func scope(t *testing.T, tenant tenancy.TenantID, op string) tenancy.Scope {
	t.Helper()
	role := tenancy.RoleAdmin
	if tenant.IsZero() {
		role = tenancy.RoleOperator
	}
	s, err := (&tenancy.Guard{}).Admit(tenancy.Principal{Tenant: tenant, Env: "live", Role: role, KeyID: "test"}, dynamo.ActionOf(op))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// do admits one operation and, if admitted, finishes it with usage u.
func do(t *testing.T, m *Manager, tenant tenancy.TenantID, op string, in any, u wire.Usage) error {
	t.Helper()
	tk, err := m.Admit(context.Background(), scope(t, tenant, op), lookup(t, op), in)
	if err != nil {
		return err
	}
	tk.Done(&wire.PutItemOutput{Metered: wire.Metered{U: u}}, nil)
	return nil
}

func f64(v float64) *float64 { return &v }

func TestThrottleAndDebt(t *testing.T) {
	c := &clock{t: t0}
	m := newManager(t, Options{DB: memDB(t), Now: c.now})
	a, b := tid(1), tid(2)
	ctx := context.Background()
	if _, err := m.SetQuota(ctx, sys(a), "", Update{WriteUnits: f64(10), BurstSeconds: f64(1)}); err != nil {
		t.Fatal(err)
	}
	put := &wire.PutItemInput{TableName: "t"}
	// 10 units of burst: two 4-unit writes leave 2, a third takes it to -2.
	for i := 0; i < 3; i++ {
		if err := do(t, m, a, "PutItem", put, wire.Usage{WriteUnits: 4, Table: "t"}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	err := do(t, m, a, "PutItem", put, wire.Usage{WriteUnits: 1, Table: "t"})
	if !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("write in debt: err = %v, want ProvisionedThroughputExceeded", err)
	}
	if !strings.Contains(err.Error(), "The tenant's capacity quota was exceeded") || !strings.Contains(err.Error(), "tenantdb quota set") || strings.Contains(err.Error(), "increasing your provisioning level") {
		t.Fatalf("message = %q", err)
	}
	// Reads have their own bucket; another tenant is untouched.
	if err := do(t, m, a, "GetItem", &wire.GetItemInput{TableName: "t"}, wire.Usage{ReadUnits: 1}); err != nil {
		t.Fatalf("read while writes are throttled: %v", err)
	}
	if err := do(t, m, b, "PutItem", put, wire.Usage{WriteUnits: 4}); err != nil {
		t.Fatalf("other tenant: %v", err)
	}
	// 0.2 s repays the debt of 2 units but leaves 0: still throttled.
	c.add(200 * time.Millisecond)
	if err := do(t, m, a, "PutItem", put, wire.Usage{}); err == nil {
		t.Fatal("bucket at zero admitted a write")
	}
	c.add(100 * time.Millisecond)
	if err := do(t, m, a, "PutItem", put, wire.Usage{WriteUnits: 1}); err != nil {
		t.Fatalf("after refill: %v", err)
	}
	q, err := m.GetQuota(ctx, sys(a), "")
	if err != nil {
		t.Fatal(err)
	}
	if q.Available == nil || q.Available.WriteUnits != 0 || q.WriteUnits != 10 || q.ReadUnits != DefaultReadUnits || !q.Set {
		t.Fatalf("quota = %+v (available %+v)", q, q.Available)
	}
}

func TestTableQuota(t *testing.T) {
	c := &clock{t: t0}
	m := newManager(t, Options{DB: memDB(t), Now: c.now})
	a := tid(1)
	ctx := context.Background()
	if _, err := m.SetQuota(ctx, sys(a), "hot", Update{ReadUnits: f64(2), BurstSeconds: f64(1)}); err != nil {
		t.Fatal(err)
	}
	get := func(table string) error {
		return do(t, m, a, "GetItem", &wire.GetItemInput{TableName: table}, wire.Usage{ReadUnits: 2, Table: table})
	}
	if err := get("hot"); err != nil {
		t.Fatal(err)
	}
	if err := get("hot"); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("second read of the limited table: %v", err)
	}
	if err := get("cold"); err != nil {
		t.Fatalf("other table of the tenant: %v", err)
	}
	// A batch touching the limited table is throttled too.
	batch := &wire.BatchGetItemInput{RequestItems: map[string]wire.KeysAndAttributes{"cold": {}, "hot": {}}}
	if err := do(t, m, a, "BatchGetItem", batch, wire.Usage{}); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("batch over the limited table: %v", err)
	}
	q, err := m.GetQuota(ctx, sys(a), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Tables) != 1 || q.Tables[0].Table != "hot" || q.Tables[0].ReadUnits != 2 || q.Tables[0].WriteUnits != 0 {
		t.Fatalf("table quotas = %+v", q.Tables)
	}
	// Removing the table's only value deletes the record.
	if _, err := m.SetQuota(ctx, sys(a), "hot", Update{ReadUnits: f64(0), BurstSeconds: f64(0)}); err != nil {
		t.Fatal(err)
	}
	if err := get("hot"); err != nil {
		t.Fatalf("after removing the table quota: %v", err)
	}
	if q, _ := m.GetQuota(ctx, sys(a), ""); len(q.Tables) != 0 {
		t.Fatalf("table quotas after removal = %+v", q.Tables)
	}
}

func TestControlPlaneThrottling(t *testing.T) {
	c := &clock{t: t0}
	m := newManager(t, Options{DB: memDB(t), Now: c.now, ControlRate: 1, ControlBurst: 2})
	a := tid(1)
	in := &wire.DescribeTableInput{TableName: "t"}
	for i := 0; i < 2; i++ {
		if err := do(t, m, a, "DescribeTable", in, wire.Usage{}); err != nil {
			t.Fatal(err)
		}
	}
	err := do(t, m, a, "DescribeTable", in, wire.Usage{})
	if !apierr.Is(err, apierr.Throttling) || !strings.Contains(err.Error(), "Rate of requests exceeds the allowed throughput") {
		t.Fatalf("err = %v, want ThrottlingException", err)
	}
	if err := do(t, m, a, "PutItem", &wire.PutItemInput{}, wire.Usage{WriteUnits: 1}); err != nil {
		t.Fatalf("data plane throttled by the control plane: %v", err)
	}
	c.add(time.Second)
	if err := do(t, m, a, "DescribeTable", in, wire.Usage{}); err != nil {
		t.Fatal(err)
	}
}

func TestOperatorIsNotMeteredOrThrottled(t *testing.T) {
	m := newManager(t, Options{DB: memDB(t), ControlRate: 1, ControlBurst: 1})
	for i := 0; i < 5; i++ {
		if err := do(t, m, tenancy.TenantID{}, "CreateTable", &wire.CreateTableInput{}, wire.Usage{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDisabled(t *testing.T) {
	m := newManager(t, Options{DB: memDB(t), Disabled: true, Default: Limits{WriteUnits: 1, BurstSeconds: 1}})
	for i := 0; i < 10; i++ {
		if err := do(t, m, tid(1), "PutItem", &wire.PutItemInput{}, wire.Usage{WriteUnits: 5}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := m.Usage(context.Background(), sys(tid(1)), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if r.ConsumedWriteUnits != 50 || r.Requests != 10 {
		t.Fatalf("metering with admission control off: %+v", r.OpUsage)
	}
}

func TestValidation(t *testing.T) {
	m := newManager(t, Options{DB: memDB(t)})
	ctx := context.Background()
	for _, u := range []Update{
		{ReadUnits: f64(-1)},
		{WriteUnits: f64(1e13)},
		{BurstSeconds: f64(4000)},
		{Weight: f64(0.001)},
	} {
		if _, err := m.SetQuota(ctx, sys(tid(1)), "", u); !apierr.Is(err, apierr.Validation) {
			t.Errorf("SetQuota(%+v): err = %v, want ValidationException", u, err)
		}
	}
	if _, err := m.SetQuota(ctx, sys(tid(1)), "t", Update{Weight: f64(2)}); !apierr.Is(err, apierr.Validation) {
		t.Errorf("table weight: err = %v, want ValidationException", err)
	}
}

// TestQuotasSurviveRestart stores quotas, closes the store, reopens it and
// checks they apply to the first request after the restart.
func TestQuotasSurviveRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ctx := context.Background()
	c := &clock{t: t0}
	open := func() (*storage.DB, *Manager) {
		db, err := storage.Open(dir, storage.Options{NoSync: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(Options{DB: db, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		return db, m
	}
	db, m := open()
	if _, err := m.SetQuota(ctx, sys(tid(1)), "", Update{ReadUnits: f64(7), WriteUnits: f64(3), Weight: f64(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetQuota(ctx, sys(tid(1)), "orders", Update{WriteUnits: f64(1), BurstSeconds: f64(1)}); err != nil {
		t.Fatal(err)
	}
	if err := do(t, m, tid(1), "PutItem", &wire.PutItemInput{TableName: "orders"}, wire.Usage{WriteUnits: 2, Table: "orders"}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	db.Close()

	db, m = open()
	defer db.Close()
	defer m.Close()
	q, err := m.GetQuota(ctx, sys(tid(1)), "")
	if err != nil {
		t.Fatal(err)
	}
	if q.ReadUnits != 7 || q.WriteUnits != 3 || q.Weight != 2 || !q.Set || len(q.Tables) != 1 || q.Tables[0].WriteUnits != 1 {
		t.Fatalf("after restart quota = %+v tables %+v", q, q.Tables)
	}
	// The table bucket's state survives too: the write of 2 units before
	// the restart left its 1-unit bucket in debt, so the restart does not
	// hand the tenant a full bucket.
	put := &wire.PutItemInput{TableName: "orders"}
	if err := do(t, m, tid(1), "PutItem", put, wire.Usage{WriteUnits: 2, Table: "orders"}); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("after restart the table's bucket was full again: %v", err)
	}
	// Refilled for 2 s, it holds its 1 unit: one write of 2 units passes
	// and empties it.
	c.add(2 * time.Second)
	if err := do(t, m, tid(1), "PutItem", put, wire.Usage{WriteUnits: 2, Table: "orders"}); err != nil {
		t.Fatal(err)
	}
	if err := do(t, m, tid(1), "PutItem", put, wire.Usage{WriteUnits: 2, Table: "orders"}); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("after restart the table quota did not apply: %v", err)
	}
	// And metering from before the restart is there.
	r, err := m.Usage(ctx, sys(tid(1)), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 4 || r.ThrottledRequests != 2 || r.ConsumedWriteUnits != 4 {
		t.Fatalf("usage after restart = %+v", r.OpUsage)
	}
}

func TestUsageReport(t *testing.T) {
	c := &clock{t: t0.Add(30 * time.Minute)}
	m := newManager(t, Options{DB: memDB(t), Now: c.now, Default: Limits{ReadUnits: 1, BurstSeconds: 1}})
	a := tid(1)
	ctx := context.Background()
	must := func(op string, in any, u wire.Usage) {
		t.Helper()
		if err := do(t, m, a, op, in, u); err != nil {
			t.Fatal(err)
		}
	}
	must("PutItem", &wire.PutItemInput{TableName: "t"}, wire.Usage{WriteUnits: 1, Table: "t"})
	must("GetItem", &wire.GetItemInput{TableName: "t"}, wire.Usage{ReadUnits: 0.5, Table: "t"})
	must("GetItem", &wire.GetItemInput{TableName: "t"}, wire.Usage{ReadUnits: 1, Table: "t"})
	// The read bucket (1 unit) is now at -0.5: throttled.
	if err := do(t, m, a, "GetItem", &wire.GetItemInput{TableName: "t"}, wire.Usage{}); err == nil {
		t.Fatal("expected a throttle")
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour) // next hour; this one stays pending (not flushed)
	must("Query", &wire.QueryInput{TableName: "u"}, wire.Usage{ReadUnits: 0.5, Table: "u"})

	// A failed conditional write is charged one unit.
	tk, err := m.Admit(ctx, scope(t, a, "UpdateItem"), lookup(t, "UpdateItem"), &wire.UpdateItemInput{TableName: "t"})
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(nil, apierr.New(apierr.ConditionalCheckFailed, "The conditional request failed"))

	r, err := m.Usage(ctx, sys(a), t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 6 || r.ThrottledRequests != 1 || r.ConsumedReadUnits != 2 || r.ConsumedWriteUnits != 2 {
		t.Fatalf("totals = %+v", r.OpUsage)
	}
	if g := r.ByOperation["GetItem"]; g.Requests != 3 || g.ThrottledRequests != 1 || g.ConsumedReadUnits != 1.5 {
		t.Fatalf("GetItem = %+v", g)
	}
	if len(r.Hours) != 2 || !r.Hours[0].Hour.Equal(t0) || r.Hours[0].Requests != 4 || r.Hours[1].Requests != 2 {
		t.Fatalf("hours = %+v", r.Hours)
	}
	if r.ByTable["t"].ConsumedReadUnits != 1.5 || r.ByTable["u"].ConsumedReadUnits != 0.5 {
		t.Fatalf("by table = %+v", r.ByTable)
	}
	// By table and hour: t's three requests and its throttled one in the
	// first hour (flushed), u's query in the second (pending).
	want := []TableHourUsage{
		{Hour: t0, Table: "t", TableUsage: TableUsage{ConsumedReadUnits: 1.5, ConsumedWriteUnits: 1, Requests: 4, ThrottledRequests: 1}},
		{Hour: t0.Add(time.Hour), Table: "u", TableUsage: TableUsage{ConsumedReadUnits: 0.5, Requests: 1}},
	}
	var got []TableHourUsage
	for _, th := range r.TableHours {
		if th.Table != "" {
			got = append(got, th)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("table hours = %+v\nwant %+v", r.TableHours, want)
	}
	if bt := r.ByTable["t"]; bt.Requests != 4 || bt.ThrottledRequests != 1 {
		t.Fatalf("by table t = %+v", bt)
	}
	// The default window is the last hour: both buckets overlap it.
	r, err = m.Usage(ctx, sys(a), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 6 {
		t.Fatalf("default window requests = %d, want 6", r.Requests)
	}
	// Only the first hour.
	r, err = m.Usage(ctx, sys(a), t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 4 {
		t.Fatalf("first hour requests = %d, want 4", r.Requests)
	}
	if _, err := m.Usage(ctx, sys(a), t0.Add(time.Hour), t0); !apierr.Is(err, apierr.Validation) {
		t.Fatalf("inverted window: %v", err)
	}
	// Other tenants see nothing of it.
	r, err = m.Usage(ctx, sys(tid(2)), t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 0 || len(r.Hours) != 0 {
		t.Fatalf("other tenant's usage = %+v", r)
	}
}

// metricTraffic and metricLabels drive and read tenantdb_tenant_requests_total.
func metricTraffic(t *testing.T, m *Manager) func(tenant byte, n int) {
	return func(tenant byte, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := do(t, m, tid(tenant), "PutItem", &wire.PutItemInput{}, wire.Usage{WriteUnits: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func metricLabels(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "tenantdb_tenant_requests_total" {
			continue
		}
		if !strings.Contains(mf.GetHelp(), "at most 2 tenants") && !strings.Contains(mf.GetHelp(), "at most 100 tenants") {
			t.Errorf("HELP does not state the label rule: %q", mf.GetHelp())
		}
		for _, mt := range mf.GetMetric() {
			out[mt.GetLabel()[0].GetValue()] = mt.GetCounter().GetValue()
		}
	}
	return out
}

func TestMetricLabelCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newManager(t, Options{DB: memDB(t), Registerer: reg, MetricTenants: 2})
	traffic := metricTraffic(t, m)
	labels := func() map[string]float64 { return metricLabels(t, reg) }
	for i := byte(1); i <= 10; i++ {
		traffic(i, int(i))
	}
	// The first two tenants took the free labels at their first request;
	// the other eight share "other".
	if l := labels(); len(l) != 3 || l[tid(1).String()] != 1 || l[tid(2).String()] != 2 || l[otherLabel] != 52 {
		t.Fatalf("before rebalance: %v, want tenants 1 and 2 and other", l)
	}
	// The busiest tenants take the labels of those less than half as busy.
	m.housekeep()
	traffic(10, 3)
	traffic(9, 1)
	traffic(1, 1)
	l := labels()
	if len(l) != 3 || l[tid(10).String()] != 3 || l[tid(9).String()] != 1 || l[otherLabel] != 53 {
		t.Fatalf("after rebalance: %v, want the two busiest tenants and other", l)
	}
	// A tenant at least twice as busy as the least busy labelled one takes
	// its label; the loser's series is gone.
	traffic(3, 5)
	m.housekeep()
	l = labels()
	if len(l) != 3 || l[tid(3).String()] != 0 || l[tid(10).String()] != 3 || l[otherLabel] != 58 {
		t.Fatalf("after second rebalance: %v", l)
	}
}

// TestMetricOneSeriesPerTenant: while labels are free, each tenant's
// requests all land in its own series, from the first, whatever the
// rebalances in between; nothing counts under "other".
func TestMetricOneSeriesPerTenant(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newManager(t, Options{DB: memDB(t), Registerer: reg, MetricTenants: 100})
	traffic := metricTraffic(t, m)
	want := map[string]float64{otherLabel: 0}
	for round := 0; round < 3; round++ {
		for i := byte(1); i <= 5; i++ {
			n := int(i) * (round + 1)
			traffic(i, n)
			want[tid(i).String()] += float64(n)
		}
		m.housekeep()
		if l := metricLabels(t, reg); !reflect.DeepEqual(l, want) {
			t.Fatalf("round %d: %v, want %v", round, l, want)
		}
	}
}

// BenchmarkAdmit is the cost admission control and metering add to one
// request that is admitted at once (Admit + Done), one goroutine; see
// BenchmarkAdmitParallel for contention. The request is a PutItem whose
// usage the engine committed with its item (Usage.Committed), as every
// successful PutItem's is; BenchmarkStageUsage is what that costs the
// engine's commit.
func BenchmarkAdmit(b *testing.B) { benchmarkAdmit(b, false) }

func BenchmarkAdmitParallel(b *testing.B) { benchmarkAdmit(b, true) }

func benchmarkAdmit(b *testing.B, parallel bool) {
	db, err := storage.Open("mem", storage.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m, err := New(Options{DB: db, Default: Limits{ReadUnits: 1e9, WriteUnits: 1e9}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s, _ := (&tenancy.Guard{}).Admit(tenancy.Principal{Tenant: tid(1), Env: "live", Role: tenancy.RoleApp, KeyID: "k"}, dynamo.ActionOf("PutItem"))
	put := lookup(b, "PutItem")
	in := &wire.PutItemInput{TableName: "t"}
	out := &wire.PutItemOutput{Metered: wire.Metered{U: wire.Usage{WriteUnits: 1, Table: "t", Committed: true}}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	if !parallel {
		for i := 0; i < b.N; i++ {
			tk, err := m.Admit(ctx, s, put, in)
			if err != nil {
				b.Fatal(err)
			}
			tk.Done(out, nil)
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk, err := m.Admit(ctx, s, put, in)
			if err != nil {
				b.Fatal(err)
			}
			tk.Done(out, nil)
		}
	})
}

// BenchmarkStageUsage is the metering a PutItem adds to its commit batch
// (Manager.StageUsage): the counters of one request, one table.
func BenchmarkStageUsage(b *testing.B) {
	db, err := storage.Open("mem", storage.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m, err := New(Options{DB: db})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s, _ := (&tenancy.Guard{}).Admit(tenancy.Principal{Tenant: tid(1), Env: "live", Role: tenancy.RoleApp, KeyID: "k"}, dynamo.ActionOf("PutItem"))
	u := wire.Usage{WriteUnits: 1, Table: "t"}
	batch := db.NewBatch()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%1024 == 0 { // a batch per request in the engine; keep this one small
			batch.Close()
			batch = db.NewBatch()
		}
		m.StageUsage(batch, s, "PutItem", u)
	}
	b.StopTimer()
	batch.Close()
}

// A multi-table operation charges each table's bucket its own share (the
// engine's Usage.PerTable), not everything to the first table.
func TestTableQuotaMultiTableCharge(t *testing.T) {
	c := &clock{t: t0}
	m := newManager(t, Options{DB: memDB(t), Now: c.now})
	a := tid(1)
	ctx := context.Background()
	for _, tb := range []string{"first", "second"} {
		if _, err := m.SetQuota(ctx, sys(a), tb, Update{WriteUnits: f64(10), BurstSeconds: f64(1)}); err != nil {
			t.Fatal(err)
		}
	}
	batch := &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{"first": nil, "second": nil}}
	// 1 unit to "first", 12 to "second": only "second" goes into debt.
	u := wire.Usage{WriteUnits: 13, Table: "first", PerTable: []wire.TableUnits{{Table: "first", Units: 1}, {Table: "second", Units: 12}}}
	if err := do(t, m, a, "BatchWriteItem", batch, u); err != nil {
		t.Fatal(err)
	}
	put := func(table string) error {
		return do(t, m, a, "PutItem", &wire.PutItemInput{TableName: table}, wire.Usage{WriteUnits: 1, Table: table})
	}
	if err := put("first"); err != nil {
		t.Fatalf("the table charged 1 of its 10 units: %v", err)
	}
	if err := put("second"); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("the table charged 12 of its 10 units: %v, want ProvisionedThroughputExceeded", err)
	}
}

// sys is a scope for tenant t, as the admin plane's guard would admit one.
func sys(t tenancy.TenantID) tenancy.Scope { return tenancy.SystemScope(t, "test") }
