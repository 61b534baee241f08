package engine

import (
	"fmt"
	"math/rand"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// pitrBenchEnv is a shared table Bench and a tenant of it, with
// point-in-time recovery on or off.
func pitrBenchEnv(b *testing.B, pitr bool) (*testEnv, testActor) {
	env := openEnv(b)
	env.e.Close()
	env.opts.Streams = true
	env.e = env.open()
	if _, err := env.e.CreateTable(testCtx, env.operator().scope("CreateTable"), tableInput("Bench", false)); err != nil {
		b.Fatal(err)
	}
	a := env.tenant(tenancy.RoleAdmin)
	if pitr {
		if _, err := env.e.UpdateContinuousBackups(testCtx, a.scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: "Bench",
			PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(true)}}); err != nil {
			b.Fatal(err)
		}
	}
	return env, a
}

// BenchmarkPITRWrites compares puts to a shared table without and with
// point-in-time recovery (a hidden log stream of both images), in one
// run. Each put overwrites one of 1,000 items of 1 KB.
func BenchmarkPITRWrites(b *testing.B) {
	for _, pitr := range []bool{false, true} {
		b.Run(fmt.Sprintf("put/pitr=%v", pitr), func(b *testing.B) {
			env, a := pitrBenchEnv(b, pitr)
			s := a.scope("PutItem")
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16)
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := env.e.PutItem(testCtx, s, &wire.PutItemInput{TableName: "Bench", Item: benchItem(n.Add(1) % 1000)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			// NB: the process's CPU per put is steadier than ns/op on a
			// machine shared with other work.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkRestore measures restoring a tenant's view of 20,000 items of
// 1 KB: from a backup, and to a point in time 1,000 overwrites ago.
func BenchmarkRestore(b *testing.B) {
	const items = 20_000
	env, a := pitrBenchEnv(b, true)
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	for i := int64(0); i < items; i += 25 {
		var reqs []wire.WriteRequest
		for j := i; j < i+25; j++ {
			reqs = append(reqs, wire.WriteRequest{PutRequest: &wire.PutRequest{Item: benchItem(j)}})
		}
		if _, err := env.e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{"Bench": reqs}}); err != nil {
			b.Fatal(err)
		}
	}
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	at := epoch(env.clock.Now())
	env.clock.Set(env.clock.Now().Add(time.Second))
	for i := int64(0); i < 1000; i++ {
		a.put("Bench", benchItem(i*7))
	}
	bk, err := env.e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: "Bench", BackupName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64 // b.Run calls each function more than once
	b.Run("from-backup", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := env.e.RestoreTableFromBackup(testCtx, a.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{
				TargetTableName: fmt.Sprintf("FromBackup%d", seq.Add(1)), BackupArn: bk.BackupDetails.BackupArn}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/items, "µs/item")
	})
	b.Run("to-point-in-time", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := env.e.RestoreTableToPointInTime(testCtx, a.scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{
				SourceTableName: "Bench", TargetTableName: fmt.Sprintf("ToTime%d", seq.Add(1)), RestoreDateTime: &at}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/items, "µs/item")
	})
	b.Run("create-backup", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := env.e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: "Bench", BackupName: "again"}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/items, "µs/item")
	})
}

// BenchmarkPITRLogDisk measures what a 7-day window costs: a steady load
// of overwrites of 1 KB items of random bytes (one every 30 s of simulated time, for 9
// simulated days, trimming every simulated hour) on a table with
// point-in-time recovery. It reports the bytes each change keeps in the
// log (logical, and on disk after a flush) and that the log holds only
// the window's changes at the end: history does not grow without bound.
// Run it with -benchtime 1x.
func BenchmarkPITRLogDisk(b *testing.B) {
	for i := 0; i < b.N; i++ {
		env, a := pitrBenchEnv(b, true)
		const step, days = 30 * time.Second, 9
		env.clock.Set(env.clock.Now().Add(2 * time.Second))
		start := env.clock.Now()
		n := 0
		var peak uint64
		var peakN int
		rnd := rand.New(rand.NewSource(1))
		item := func(i int) attr.Item {
			data := make([]byte, 1000)
			rnd.Read(data) // NB: incompressible, as most user data is not zeros
			return attr.Item{"pk": attr.Str(fmt.Sprint("item-", i%1000)), "data": attr.Bin(data)}
		}
		ns := keyspace.Namespace(a.p.Tenant, a.p.Env)
		lo, hi := keyspace.ChangeLogRange(ns)
		for t := start; t.Before(start.Add(days * 24 * time.Hour)); t = t.Add(step) {
			env.clock.Set(t)
			a.put("Bench", item(n))
			n++
			if n%120 == 0 { // every simulated hour
				env.e.trimChangeLog()
			}
			if n%20_000 == 0 {
				if err := env.db.Flush(); err != nil {
					b.Fatal(err)
				}
				d, err := env.db.EstimateDiskUsage(lo, hi)
				if err != nil {
					b.Fatal(err)
				}
				if d > peak {
					peak, peakN = d, n
				}
			}
		}
		env.e.trimChangeLog()
		var kept, logical int
		it := env.db.NewIter(lo, hi)
		for ok := it.First(); ok; ok = it.Next() {
			kept++
			logical += len(it.Key()) + len(it.Value())
		}
		it.Close()
		pg, err := env.e.FollowLog(testCtx, a.scope("GetRecords"), "Bench", changelog.Cursor{}, 10_000)
		if err != nil {
			b.Fatal(err)
		}
		window := int(7 * 24 * time.Hour / step)
		if kept < window-1 || kept > window+130 || len(pg.Entries) != min(kept, 10_000) {
			b.Fatalf("after %d changes over %d days the log keeps %d (FollowLog %d); the window holds %d", n, days, kept, len(pg.Entries), window)
		}
		// NB: what the log takes on disk once the trimmed history is
		// compacted away, against its peak: bounded, not growing.
		if err := env.db.Compact(lo, hi); err != nil {
			b.Fatal(err)
		}
		final, err := env.db.EstimateDiskUsage(lo, hi)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(final)/float64(kept), "final-disk-B/kept")
		b.ReportMetric(float64(final)/float64(peak), "final/peak-disk")
		b.ReportMetric(float64(n), "changes")
		b.ReportMetric(float64(kept), "kept")
		b.ReportMetric(float64(logical)/float64(kept), "logical-B/change")
		b.ReportMetric(float64(peak)/float64(min(peakN, window)), "disk-B/change")
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
