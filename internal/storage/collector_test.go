package storage

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The collector reports the WAL's fsyncs (in seconds), the store's disk
// usage and the file system's free space.
func TestCollector(t *testing.T) {
	db := openT(t, t.TempDir(), Options{})
	for i := range 10 {
		apply(t, db, func(b *Batch) { b.Set(fmt.Appendf(nil, "k%d", i), make([]byte, 1024)) })
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(db.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
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
	if n := got["tenantdb_storage_wal_sync_seconds_count"]; n < 1 || n > 12 {
		t.Errorf("WAL syncs = %v after 10 synced applies", n)
	}
	// NB: seconds, not Pebble's nanoseconds: 10 fsyncs take well under a
	// minute.
	if s := got["tenantdb_storage_wal_sync_seconds_sum"]; s <= 0 || s > 60 {
		t.Errorf("WAL sync seconds = %v", s)
	}
	if u := got["tenantdb_storage_disk_usage_bytes"]; u < 10*1024/4 {
		t.Errorf("disk usage = %v", u)
	}
	if a, tot := got["tenantdb_storage_disk_available_bytes"], got["tenantdb_storage_disk_total_bytes"]; a <= 0 || tot < a {
		t.Errorf("disk available %v of %v", a, tot)
	}
	if w := got["tenantdb_storage_wal_bytes_written_total"]; w < 10*1024 {
		t.Errorf("WAL bytes written = %v", w)
	}
	db.Close()
	fams, err = reg.Gather()
	if err != nil || len(fams) != 0 {
		t.Errorf("after Close: %d families, %v", len(fams), err)
	}
}
