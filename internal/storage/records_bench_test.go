package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// BenchmarkRecordBytes measures what the store alone pays for a change
// stream: the floor under BenchmarkStreamWrites (tests/bench), with no
// engine, HTTP or encoding in the way. Each op is one synced batch of 25
// item writes as the engine makes them for a BatchWriteItem (read the
// current item, set a ~1 KB item among 100,000 keys); "records" adds
// what a NEW_AND_OLD_IMAGES stream adds to the same batch: one ~2 KB
// value per item under an increasing key beside the items, as the change
// log's records are; "records-1image" the same with ~1 KB records (one
// image: what a NEW_IMAGE stream stores, or a record whose old image
// costs nothing). Values are mostly one repeated byte, as the items of
// tests/bench are. "records-blob" is "records" with Pebble's value
// separation keeping values of 1.5 KB or more (the records, not the
// items) in blob files, which compactions do not rewrite. Every run opens
// a fresh store; the variants alternate over three rounds.
//
//	go test ./internal/storage -run '^$' -bench RecordBytes -benchtime 4000x
func BenchmarkRecordBytes(b *testing.B) {
	variants := []struct {
		name    string
		records int // images per record: 0 (no stream), 1 or 2
		tune    func(*pebble.Options)
	}{
		{"items", 0, nil},
		{"records", 2, nil},
		{"records-1image", 1, nil},
		{"records-blob", 2, func(o *pebble.Options) {
			o.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
				return pebble.ValueSeparationPolicy{
					Enabled: true, MinimumSize: 1536, MaxBlobReferenceDepth: 10,
					RewriteMinimumAge: 5 * time.Minute, TargetGarbageRatio: 0.2,
				}
			}
		}},
	}
	for r := range 3 {
		for i := range variants {
			v := variants[(i+r)%len(variants)]
			b.Run(v.name, func(b *testing.B) { benchRecordBytes(b, v.records, v.tune) })
		}
	}
}

func benchRecordBytes(b *testing.B, records int, tune func(*pebble.Options)) {
	const keys = 100_000
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	opts.testing.tune = tune
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	itemKey := func(n uint64) []byte {
		return binary.BigEndian.AppendUint64([]byte("t0123456789abcdef0i\x00\x00\x00\x00\x00\x00\x00\x01"), n)
	}
	item := func(n uint64) []byte {
		return append(binary.BigEndian.AppendUint64(nil, n), bytes.Repeat([]byte{'x'}, 1000)...)
	}
	pre := db.NewBatch()
	for n := range uint64(keys) {
		pre.Set(itemKey(n), item(n))
	}
	if err := db.Apply(pre); err != nil {
		b.Fatal(err)
	}
	pre.Close()
	var seq atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(32) // 64 writers on 2 cores, as tests/bench's c=64
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			bt := db.NewBatch()
			for range 25 {
				n := rng.Uint64N(keys)
				k := itemKey(n)
				old, err := db.Get(k)
				if err != nil && !errors.Is(err, ErrNotFound) {
					b.Error(err)
					return
				}
				v := item(n)
				bt.Set(k, v)
				if records > 0 {
					rk := binary.BigEndian.AppendUint64([]byte("t0123456789abcdef0c\x00\x00\x00\x00\x00\x00\x00\x01"), seq.Add(1))
					rec := make([]byte, 0, 16+len(old)+len(v))
					rec = append(append(rec, "hdr-of-16-bytes."...), v...)
					if records > 1 {
						rec = append(rec, old...)
					}
					bt.Set(rk, rec)
				}
			}
			if err := db.Apply(bt); err != nil {
				b.Error(err)
			}
			bt.Close()
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	m := db.pdb.Metrics()
	t := m.Total()
	b.ReportMetric(float64(m.WAL.BytesWritten)/float64(b.N), "wal-B/op")
	b.ReportMetric(float64(t.TableBytesFlushed+t.TableBytesCompacted+t.BlobBytesFlushed+t.BlobBytesCompacted)/float64(b.N), "written-B/op")
}
