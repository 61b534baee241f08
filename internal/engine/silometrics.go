package engine

import (
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/storage"
)

// Metrics of the silo stores, aggregated over all of them.
//
// NB: no metric has a tenant label: a server holds thousands of silo
// tenants, and a series per tenant would grow the scrape (and the
// monitoring system's storage) with them. A tenant's silo data shows in
// its usage (storage bytes per table), which is per tenant by design.
var (
	descSilosOpen = prometheus.NewDesc("tenantdb_silo_stores_open",
		"Silo stores (one per tenant with silo data) open or opening.", nil, nil)
	descSilosInUse = prometheus.NewDesc("tenantdb_silo_stores_in_use",
		"Open silo stores a request or background job holds now.", nil, nil)
	descSiloOpens = prometheus.NewDesc("tenantdb_silo_store_opens_total",
		"Silo stores opened (first use, or use after a close).", nil, nil)
	descSiloCloses = prometheus.NewDesc("tenantdb_silo_store_closes_total",
		"Silo stores closed: idle, evicted, their tenant deleted, or at shutdown.", nil, nil)
	descSiloEvictions = prometheus.NewDesc("tenantdb_silo_store_evictions_total",
		"Silo stores closed to keep the open ones within --max-open-silos (least recently used first).", nil, nil)
	descSiloOpenDisk = prometheus.NewDesc("tenantdb_silo_open_stores_disk_usage_bytes",
		"Bytes the open silo stores hold on disk (Pebble's DiskSpaceUsage, summed).", nil, nil)
	descSiloDisk = prometheus.NewDesc("tenantdb_silo_disk_usage_bytes",
		"Bytes of every silo store on disk, open or closed: the files under the silo directory, measured at most once a minute.", nil, nil)
	descSiloWALSync = prometheus.NewDesc("tenantdb_silo_wal_sync_seconds",
		"Latency of the silo stores' WAL fsyncs, all stores together (those closed since the start included).", nil, nil)
)

// siloDiskEvery is how often the silo directory is walked for its size.
const siloDiskEvery = time.Minute

// siloMetrics are the silo stores' counters (silopool.go counts).
type siloMetrics struct {
	opens, closes, evictions atomic.Uint64

	// mu guards closed and every silo's counted.
	mu     sync.Mutex
	closed storage.SyncLatency // the WAL syncs of stores since closed

	diskMu   sync.Mutex
	diskAt   time.Time
	diskSize int64
}

// closing records what store s observed; its caller closes it next.
//
// NB: s's syncs move into closed under m.mu and s is marked counted, and
// a scrape reads closed and the stores not counted under m.mu too: each
// store's syncs are in every scrape exactly once, so the histogram never
// goes backwards (Prometheus would take that for a reset).
func (m *siloMetrics) closing(s *silo) {
	m.closes.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, err := s.db.WALSyncLatency(); err == nil {
		m.closed.Add(l)
	}
	s.counted = true
}

// SiloCollector returns a Prometheus collector of the silo stores: how
// many are open and in use, opens, closes and evictions, their disk
// bytes and their WAL sync latency, all aggregated (no per-tenant label).
func (e *Engine) SiloCollector() prometheus.Collector { return siloCollector{e} }

type siloCollector struct{ e *Engine }

func (c siloCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSilosOpen, descSilosInUse, descSiloOpens, descSiloCloses, descSiloEvictions,
		descSiloOpenDisk, descSiloDisk, descSiloWALSync} {
		ch <- d
	}
}

func (c siloCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	m := &e.silom
	open, inUse := e.OpenSilos()
	ch <- prometheus.MustNewConstMetric(descSilosOpen, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(descSilosInUse, prometheus.GaugeValue, float64(inUse))
	ch <- prometheus.MustNewConstMetric(descSiloOpens, prometheus.CounterValue, float64(m.opens.Load()))
	ch <- prometheus.MustNewConstMetric(descSiloCloses, prometheus.CounterValue, float64(m.closes.Load()))
	ch <- prometheus.MustNewConstMetric(descSiloEvictions, prometheus.CounterValue, float64(m.evictions.Load()))

	e.mu.RLock()
	stores := make([]*silo, 0, len(e.silos))
	for _, s := range e.silos {
		if s.state != siloOpening {
			stores = append(stores, s) // NB: db is set once it is not opening
		}
	}
	e.mu.RUnlock()
	var sync storage.SyncLatency
	var disk uint64
	m.mu.Lock()
	sync.Add(m.closed)
	for _, s := range stores {
		if s.counted {
			continue // closing or closed: in m.closed
		}
		if l, err := s.db.WALSyncLatency(); err == nil {
			sync.Add(l)
		}
		if sm, err := s.db.Metrics(); err == nil {
			disk += sm.DiskUsageBytes
		}
	}
	m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descSiloOpenDisk, prometheus.GaugeValue, float64(disk))
	if !e.inMemorySilos() {
		ch <- prometheus.MustNewConstMetric(descSiloDisk, prometheus.GaugeValue, float64(m.dirSize(e.opts.SiloDir, e.opts.Now())))
	}
	if sync.Buckets != nil {
		ch <- prometheus.MustNewConstHistogram(descSiloWALSync, sync.Count, sync.Sum, sync.Buckets)
	}
}

// dirSize returns the bytes of the files under dir, walking it at most
// once every siloDiskEvery.
func (m *siloMetrics) dirSize(dir string, now time.Time) int64 {
	m.diskMu.Lock()
	defer m.diskMu.Unlock()
	if !m.diskAt.IsZero() && now.Sub(m.diskAt) < siloDiskEvery {
		return m.diskSize
	}
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // NB: a store removed during the walk
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	m.diskAt, m.diskSize = now, n
	return n
}
