package storage

import (
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Metrics is a point-in-time summary of the store for /metrics. Counters
// (the *Total fields) only grow while the DB is open.
type Metrics struct {
	// DiskUsageBytes is every byte the store holds on disk: live and
	// obsolete sstables, WAL, manifest.
	DiskUsageBytes uint64
	// MemTableBytes is memory held by memtables, flushed or not.
	MemTableBytes uint64
	// BlockCacheBytes, BlockCacheHitsTotal and BlockCacheMissesTotal
	// describe the block cache.
	BlockCacheBytes       int64
	BlockCacheHitsTotal   int64
	BlockCacheMissesTotal int64
	// ReadAmplification is the number of sorted runs a point read may
	// consult (memtables + L0 sublevels + non-empty levels).
	ReadAmplification int
	// CompactionDebtBytes estimates the bytes compactions must rewrite to
	// bring the LSM into shape; growing debt precedes write stalls.
	CompactionDebtBytes uint64
	// FlushesTotal and CompactionsTotal count completed background jobs.
	FlushesTotal     int64
	CompactionsTotal int64
	// WALBytesWrittenTotal counts bytes written to the WAL, and
	// WALSyncsTotal its fsyncs: commits per sync shows group commit at work.
	// WALSyncDurationTotal / WALSyncsTotal is the mean fsync latency.
	WALBytesWrittenTotal uint64
	WALSyncsTotal        uint64
	WALSyncDurationTotal time.Duration
	// WriteStallsTotal counts stalls (memtables or L0 full) and
	// WriteStallDurationTotal the time writes were stopped.
	WriteStallsTotal        int64
	WriteStallDurationTotal time.Duration
	// BackgroundErrorsTotal counts failed flushes and compactions (they
	// are retried; each is logged).
	BackgroundErrorsTotal int64
	// DataCorruptionsTotal counts checksum failures and other corruption
	// found on disk; the operation that found one failed. Alert on it.
	DataCorruptionsTotal int64
}

// Metrics returns a summary of the store's state. It returns ErrClosed
// after Close.
func (db *DB) Metrics() (Metrics, error) {
	if err := db.enter(); err != nil {
		return Metrics{}, err
	}
	defer db.mu.RUnlock()
	m := db.pdb.Metrics()
	var syncs uint64
	var syncTime time.Duration
	if h := m.LogWriter.FsyncLatency; h != nil {
		var pm dto.Metric
		if err := h.Write(&pm); err == nil && pm.Histogram != nil {
			syncs = pm.Histogram.GetSampleCount()
			syncTime = time.Duration(pm.Histogram.GetSampleSum()) // observed in ns
		}
	}
	return Metrics{
		DiskUsageBytes:          m.DiskSpaceUsage(),
		MemTableBytes:           m.MemTable.Size,
		BlockCacheBytes:         m.BlockCache.Size,
		BlockCacheHitsTotal:     m.BlockCache.Hits,
		BlockCacheMissesTotal:   m.BlockCache.Misses,
		ReadAmplification:       m.ReadAmp(),
		CompactionDebtBytes:     m.Compact.EstimatedDebt,
		FlushesTotal:            m.Flush.Count,
		CompactionsTotal:        m.Compact.Count,
		WALBytesWrittenTotal:    m.WAL.BytesWritten,
		WALSyncsTotal:           syncs,
		WALSyncDurationTotal:    syncTime,
		WriteStallsTotal:        db.stalls.Load(),
		WriteStallDurationTotal: time.Duration(db.stallNanos.Load()),
		BackgroundErrorsTotal:   db.backgroundErr.Load(),
		DataCorruptionsTotal:    db.corruptions.Load(),
	}, nil
}
