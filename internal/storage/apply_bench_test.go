package storage

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkApplyParallel measures group commit: concurrent writers, each
// applying one-key batches with 1 KiB values, on a real directory. "sync"
// waits for the WAL fsync, "nosync" does not; fsyncs/op below 1 shows
// concurrent commits sharing an fsync. goroutines = par × GOMAXPROCS.
//
//	go test ./internal/storage -run '^$' -bench ApplyParallel -benchtime 2s
func BenchmarkApplyParallel(b *testing.B) {
	for _, par := range []int{1, 4, 16, 64} {
		for _, mode := range []string{"sync", "nosync"} {
			b.Run(fmt.Sprintf("%s/par=%d", mode, par), func(b *testing.B) {
				benchApply(b, par, Options{NoSync: mode == "nosync"})
			})
		}
	}
}

// BenchmarkApplyMinSyncInterval measures Pebble's WALMinSyncInterval, an
// artificial delay between fsyncs meant to let more commits join one.
func BenchmarkApplyMinSyncInterval(b *testing.B) {
	for _, par := range []int{1, 4, 16} {
		for _, d := range []time.Duration{0, 50 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond} {
			b.Run(fmt.Sprintf("par=%d/interval=%s", par, d), func(b *testing.B) {
				var o Options
				o.testing.walMinSyncInterval = &d
				benchApply(b, par, o)
			})
		}
	}
}

func benchApply(b *testing.B, par int, opts Options) {
	opts.Logger = slog.New(slog.DiscardHandler)
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte(i * 7) // not all zeros, so compression does not hide it
	}
	m0, _ := db.Metrics()
	var writer atomic.Uint64
	b.SetBytes(int64(len(value)))
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var key [16]byte
		binary.BigEndian.PutUint64(key[:8], writer.Add(1))
		for seq := uint64(0); pb.Next(); seq++ {
			binary.BigEndian.PutUint64(key[8:], seq)
			batch := db.NewBatch()
			batch.Set(key[:], value)
			if err := db.Apply(batch); err != nil {
				b.Error(err)
				return
			}
			batch.Close()
		}
	})
	b.StopTimer()
	m1, _ := db.Metrics()
	syncs := m1.WALSyncsTotal - m0.WALSyncsTotal
	b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/op")
	if syncs > 0 {
		mean := (m1.WALSyncDurationTotal - m0.WALSyncDurationTotal) / time.Duration(syncs)
		b.ReportMetric(float64(mean.Microseconds()), "µs/fsync")
	}
	b.ReportMetric(float64(par*runtime.GOMAXPROCS(0)), "writers")
}
