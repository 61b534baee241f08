package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// gatherSilo returns the silo collector's values by name (a histogram's
// as <name>_count and <name>_sum) and every metric's label count.
func gatherSilo(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if len(f.GetMetric()) != 1 || len(f.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("%s: %d series, labels %v: want one series without labels", f.GetName(), len(f.GetMetric()), f.GetMetric()[0].GetLabel())
		}
		m := f.GetMetric()[0]
		switch {
		case m.Histogram != nil:
			got[f.GetName()+"_count"] = float64(m.Histogram.GetSampleCount())
			got[f.GetName()+"_sum"] = m.Histogram.GetSampleSum()
		case m.Gauge != nil:
			got[f.GetName()] = m.Gauge.GetValue()
		case m.Counter != nil:
			got[f.GetName()] = m.Counter.GetValue()
		}
	}
	return got
}

// The silo collector counts opens, closes and evictions under the bound,
// the open stores and their disk, and the WAL syncs of all stores, the
// closed ones' included: the histogram never goes back when a store
// closes. One series each, whatever the number of tenants.
func TestSiloMetrics(t *testing.T) {
	e, _, _ := boundedSiloEngine(t, 2)
	createShared(t, e, "silo_m", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.SiloCollector())

	before := gatherSilo(t, reg)
	for _, n := range []string{"tenantdb_silo_stores_open", "tenantdb_silo_stores_in_use", "tenantdb_silo_store_opens_total",
		"tenantdb_silo_store_closes_total", "tenantdb_silo_store_evictions_total", "tenantdb_silo_open_stores_disk_usage_bytes",
		"tenantdb_silo_disk_usage_bytes"} {
		if v, ok := before[n]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v) before any silo store, want 0", n, v, ok)
		}
	}

	lastSyncs := 0.0
	const tenants = 5
	for i := range tenants {
		sc := tenantScope(t, tenancy.NewTenantID(), "PutItem")
		for j := range 3 {
			putItems(t, e, sc, "silo_m", attr.Item{"pk": sval(fmt.Sprint(j))})
		}
		got := gatherSilo(t, reg)
		// NB: three synced writes; the first may share its fsync with the
		// store's creation.
		if s := got["tenantdb_silo_wal_sync_seconds_count"]; s < lastSyncs+2 {
			t.Errorf("after tenant %d: %v WAL syncs, want at least %v (the closed stores' count too)", i, s, lastSyncs+2)
		} else {
			lastSyncs = s
		}
		if got["tenantdb_silo_stores_open"] > 2 {
			t.Errorf("after tenant %d: %v stores open, bound 2", i, got["tenantdb_silo_stores_open"])
		}
	}
	waitFor(t, func() bool { return gatherSilo(t, reg)["tenantdb_silo_store_closes_total"] >= tenants-2 })
	e.silom.diskMu.Lock()
	e.silom.diskAt = time.Time{} // NB: the directory's size is measured once a minute
	e.silom.diskMu.Unlock()
	got := gatherSilo(t, reg)
	if got["tenantdb_silo_store_opens_total"] != tenants {
		t.Errorf("opens = %v, want %d", got["tenantdb_silo_store_opens_total"], tenants)
	}
	if got["tenantdb_silo_store_evictions_total"] != tenants-2 {
		t.Errorf("evictions = %v, want %d", got["tenantdb_silo_store_evictions_total"], tenants-2)
	}
	if got["tenantdb_silo_stores_open"] != 2 || got["tenantdb_silo_stores_in_use"] != 0 {
		t.Errorf("open %v, in use %v; want 2, 0", got["tenantdb_silo_stores_open"], got["tenantdb_silo_stores_in_use"])
	}
	if got["tenantdb_silo_open_stores_disk_usage_bytes"] <= 0 || got["tenantdb_silo_disk_usage_bytes"] <= 0 {
		t.Errorf("disk: open stores %v, all %v", got["tenantdb_silo_open_stores_disk_usage_bytes"], got["tenantdb_silo_disk_usage_bytes"])
	}
	if s := got["tenantdb_silo_wal_sync_seconds_sum"]; s <= 0 || s > 60 {
		t.Errorf("WAL sync seconds = %v", s)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
	}
}
