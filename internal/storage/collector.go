package storage

import "github.com/prometheus/client_golang/prometheus"

// The store's Prometheus metrics, read from Pebble's at each scrape.
var (
	descDiskUsage = prometheus.NewDesc("tenantdb_storage_disk_usage_bytes",
		"Bytes the store holds on disk: live and obsolete sstables, WAL, manifest (Pebble's DiskSpaceUsage).", nil, nil)
	descDiskAvail = prometheus.NewDesc("tenantdb_storage_disk_available_bytes",
		"Bytes available to the store on the file system of its data directory.", nil, nil)
	descDiskTotal = prometheus.NewDesc("tenantdb_storage_disk_total_bytes",
		"Size of the file system of the store's data directory.", nil, nil)
	descWALSync = prometheus.NewDesc("tenantdb_storage_wal_sync_seconds",
		"Latency of the WAL's fsyncs (Pebble's log writer fsync latency): one per group commit.", nil, nil)
	descWALBytes = prometheus.NewDesc("tenantdb_storage_wal_bytes_written_total",
		"Bytes written to the WAL.", nil, nil)
	descStalls = prometheus.NewDesc("tenantdb_storage_write_stalls_total",
		"Write stalls (memtables or L0 full).", nil, nil)
	descDebt = prometheus.NewDesc("tenantdb_storage_compaction_debt_bytes",
		"Bytes compactions must rewrite to bring the LSM into shape; growing debt precedes write stalls.", nil, nil)
)

// Collector returns a Prometheus collector of the store's disk usage,
// WAL sync latency, WAL bytes, write stalls and compaction debt. After
// Close it collects nothing.
func (db *DB) Collector() prometheus.Collector { return collector{db} }

type collector struct{ db *DB }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDiskUsage, descDiskAvail, descDiskTotal, descWALSync, descWALBytes, descStalls, descDebt} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	db := c.db
	if err := db.enter(); err != nil {
		return
	}
	m := db.pdb.Metrics()
	sync, haveSync := syncLatency(m)
	du, duErr := db.fs.GetDiskUsage(db.dir)
	db.mu.RUnlock()

	ch <- prometheus.MustNewConstMetric(descDiskUsage, prometheus.GaugeValue, float64(m.DiskSpaceUsage()))
	if duErr == nil && du.TotalBytes > 0 {
		ch <- prometheus.MustNewConstMetric(descDiskAvail, prometheus.GaugeValue, float64(du.AvailBytes))
		ch <- prometheus.MustNewConstMetric(descDiskTotal, prometheus.GaugeValue, float64(du.TotalBytes))
	}
	if haveSync {
		ch <- prometheus.MustNewConstHistogram(descWALSync, sync.Count, sync.Sum, sync.Buckets)
	}
	ch <- prometheus.MustNewConstMetric(descWALBytes, prometheus.CounterValue, float64(m.WAL.BytesWritten))
	ch <- prometheus.MustNewConstMetric(descStalls, prometheus.CounterValue, float64(db.stalls.Load()))
	ch <- prometheus.MustNewConstMetric(descDebt, prometheus.GaugeValue, float64(m.Compact.EstimatedDebt))
}
