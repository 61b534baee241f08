package quota

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TestMeterDelivery: webhook deliveries are counted in the tenant's usage
// (as WebhookDelivery, read units per 4 KB) and its metrics, and drain its
// read capacity so that its deliveries wait once it is used up.
func TestMeterDelivery(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := newManager(t, Options{DB: memDB(t), Registerer: reg, Default: Limits{ReadUnits: 10, BurstSeconds: 1}})
	a, b := tid(1), tid(2)
	sa := tenancy.SystemScopeIn(a, "live", "test")
	if d := m.DeliveryDelay(ctx, sa); d != 0 {
		t.Fatalf("fresh tenant waits %v", d)
	}
	m.MeterDelivery(ctx, sa, 3, 40*1024, true, 10*time.Millisecond)
	m.MeterDelivery(ctx, sa, 3, 100, false, time.Second)
	if d := m.DeliveryDelay(ctx, sa); d == 0 {
		t.Errorf("tenant past its read capacity does not wait")
	}
	if d := m.DeliveryDelay(ctx, tenancy.SystemScopeIn(b, "live", "test")); d != 0 {
		t.Errorf("another tenant waits %v", d)
	}
	rep, err := m.Usage(ctx, scope(t, a, "GetItem"), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if u := rep.ByOperation[DeliveryOp]; u.Requests != 2 || u.ConsumedReadUnits != 11 {
		t.Errorf("usage %+v, want 2 attempts and 11 read units", u)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "tenantdb_tenant_webhook_") {
			continue
		}
		for _, mt := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range mt.GetLabel() {
				k += "," + l.GetName() + "=" + l.GetValue()
			}
			if c := mt.GetCounter(); c != nil {
				got[k] = c.GetValue()
			}
			if h := mt.GetHistogram(); h != nil {
				got[k] = float64(h.GetSampleCount())
			}
		}
	}
	ta := ",tenant=" + a.String()
	for k, v := range map[string]float64{
		"tenantdb_tenant_webhook_records_total" + ta: 3, "tenantdb_tenant_webhook_bytes_total" + ta: 40*1024 + 100,
		"tenantdb_tenant_webhook_deliveries_total,outcome=ok" + ta: 1, "tenantdb_tenant_webhook_deliveries_total,outcome=failed" + ta: 1,
		"tenantdb_tenant_webhook_delivery_duration_seconds" + ta: 2,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
