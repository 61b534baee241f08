package storage

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"
)

// SyncLatency is a histogram of WAL fsync latencies in seconds. Every
// store's has the same buckets (Pebble's), so the histograms of several
// stores add up (SyncLatency.Add).
type SyncLatency struct {
	Count uint64
	Sum   float64 // seconds
	// Buckets are cumulative counts by upper bound in seconds.
	Buckets map[float64]uint64
}

// Add adds o's observations to l.
func (l *SyncLatency) Add(o SyncLatency) {
	l.Count += o.Count
	l.Sum += o.Sum
	if len(o.Buckets) > 0 && l.Buckets == nil {
		l.Buckets = make(map[float64]uint64, len(o.Buckets))
	}
	for ub, n := range o.Buckets {
		l.Buckets[ub] += n
	}
}

// WALSyncLatency returns the histogram of the store's WAL fsyncs since it
// opened (empty for a store that never synced). It returns ErrClosed
// after Close.
func (db *DB) WALSyncLatency() (SyncLatency, error) {
	if err := db.enter(); err != nil {
		return SyncLatency{}, err
	}
	m := db.pdb.Metrics()
	db.mu.RUnlock()
	l, _ := syncLatency(m)
	return l, nil
}

// syncLatency converts Pebble's fsync histogram (nanoseconds) to seconds;
// ok is false when the store has none.
func syncLatency(m *pebble.Metrics) (l SyncLatency, ok bool) {
	fl := m.LogWriter.FsyncLatency
	if fl == nil {
		return l, false
	}
	var h dto.Metric
	if fl.Write(&h) != nil || h.Histogram == nil {
		return l, false
	}
	// NB: Pebble observes nanoseconds; Prometheus wants seconds.
	ns := float64(time.Second)
	l.Buckets = map[float64]uint64{}
	for _, b := range h.Histogram.GetBucket() {
		l.Buckets[b.GetUpperBound()/ns] = b.GetCumulativeCount()
	}
	l.Count, l.Sum = h.Histogram.GetSampleCount(), h.Histogram.GetSampleSum()/ns
	return l, true
}
