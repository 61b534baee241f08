package storage

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
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

// BenchmarkReadApply is the storage work of one PutItem: under 64 writers,
// read the current value of a random key of a 100,000-key space (all
// present, as in tdbload's put workload once warm), then apply a synced
// batch that replaces it with a value of the same size (1 KiB; the
// engine's counters do not change). cpu-µs/op is the
// process's CPU time per put, flushes and compactions included; run it
// long enough (-benchtime 100000x) that memtables are flushed.
//
//	go test ./internal/storage -run '^$' -bench ReadApply -benchtime 100000x
func BenchmarkReadApply(b *testing.B) {
	for _, mt := range []int{64 << 20, 32 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("memtable=%dMB", mt>>20), func(b *testing.B) {
			var o Options
			o.testing.tune = func(po *pebble.Options) { po.MemTableSize = uint64(mt) }
			benchReadApply(b, o)
		})
	}
}

func benchReadApply(b *testing.B, opts Options) {
	const keys = 100000
	opts.Logger = slog.New(slog.DiscardHandler)
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 1024)
	for i := range value {
		value[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[(i*7+i/13)%36]
	}
	key := func(dst []byte, n uint64) []byte {
		dst = append(dst[:0], "t0123456789abcdefn\x00\x00\x00\x00\x00\x00\x00\x00\x01i"...)
		return binary.BigEndian.AppendUint64(dst, n)
	}
	countN, countB := []byte("t0123456789abcdefn\x00c\x01n"), []byte("t0123456789abcdefn\x00c\x01b")
	var k []byte
	for lo := 0; lo < keys; lo += 1000 {
		batch := db.NewBatch()
		for n := lo; n < lo+1000; n++ {
			k = key(k, uint64(n))
			batch.Set(k, value)
			batch.AddCounter(countN, 1)
			batch.AddCounter(countB, int64(len(value)))
		}
		if err := db.Apply(batch); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
	m0, _ := db.Metrics()
	var seed atomic.Uint64
	b.SetParallelism(32) // 64 writers with GOMAXPROCS 2
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(seed.Add(1), 7))
		var k []byte
		for pb.Next() {
			k = key(k, r.Uint64N(keys))
			if _, err := db.Get(k); err != nil {
				b.Error(err)
				return
			}
			batch := db.NewBatch()
			batch.Set(k, value) // same size: the engine adds no counter deltas
			if err := db.Apply(batch); err != nil {
				b.Error(err)
				return
			}
			batch.Close()
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	m1, _ := db.Metrics()
	b.ReportMetric(float64(m1.WALSyncsTotal-m0.WALSyncsTotal)/float64(b.N), "fsyncs/op")
	b.ReportMetric(float64(m1.FlushesTotal-m0.FlushesTotal), "flushes")
	b.ReportMetric(float64(m1.CompactionsTotal-m0.CompactionsTotal), "compactions")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
