package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// rbItem is item i of a tenant, version v, about 200 bytes.
func rbItem(i int, v string) attr.Item {
	return attr.Item{"pk": attr.Str(fmt.Sprintf("item-%07d", i)), "v": attr.Str(v),
		"payload": attr.Str(fmt.Sprintf("%0160d", i))}
}

// BenchmarkTenantRestoreInStore measures an in-place restore of one
// tenant inside a store of many, on disk, with point-in-time recovery on
// for every tenant of a shared table:
//
//   - TENANTDB_RB_TENANTS tenants (default 50) hold TENANTDB_RB_TOTAL
//     items (default 60,000), of which the big tenant holds
//     TENANTDB_RB_BIG (default 10,000); after the time T every tenant
//     overwrites 10% of its items, deletes 5% and creates 5% more.
//   - one-tenant: the big tenant restored to T, then undone, in
//     TENANTDB_RB_ROUNDS rounds (default 12) that take turns among the
//     default pacing (Options.RewindPause and RewindGCRate,
//     rewindpace.go), the pacing by the steps' time alone
//     (RewindGCRate < 0), the same with a pause three times as long, and
//     none;
//   - whole-store: every tenant restored to T, one after the other, without
//     the pacing — the whole store's worth of the same work;
//   - while they run, 32 small tenants issue GetItem and PutItem at a
//     paced 400 requests/s; their p50/p99 latency during the one-tenant
//     restores (by pacing mode) against the same load with no restore,
//     measured just before each; and each round's p99 during its
//     restores ÷ its p99 in a window right after them as long as they
//     took (and ÷ the 3 s before), with the medians over the rounds.
//
// Run with -benchtime 1x.
func BenchmarkTenantRestoreInStore(b *testing.B) {
	nt, total, big := envInt("TENANTDB_RB_TENANTS", 50), envInt("TENANTDB_RB_TOTAL", 60_000), envInt("TENANTDB_RB_BIG", 10_000)
	for n := 0; n < b.N; n++ {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		db, err := storage.Open(b.TempDir(), storage.Options{Logger: log})
		if err != nil {
			b.Fatal(err)
		}
		env := &testEnv{t: b, db: db, clock: &testClock{}, opts: Options{Logger: log, TTLInterval: -1, InMemory: true, Streams: true, Keys: testKeys(b, "")}}
		env.e = env.open()
		if _, err := env.e.CreateTable(testCtx, env.operator().scope("CreateTable"), tableInput("Bench", false)); err != nil {
			b.Fatal(err)
		}
		tenants := make([]testActor, nt)
		sizes := make([]int, nt)
		for i := range tenants {
			tenants[i] = env.tenant(tenancy.RoleAdmin)
			sizes[i] = (total - big) / (nt - 1)
			if _, err := env.e.UpdateContinuousBackups(testCtx, tenants[i].scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: "Bench",
				PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(true)}}); err != nil {
				b.Fatal(err)
			}
		}
		sizes[0] = big
		time.Sleep(1100 * time.Millisecond)

		// load runs fn(tenant, item) for every tenant's items [lo, hi) of
		// its size, in batches of 25, 8 writers.
		load := func(what string, lo, hi float64, fn func(a testActor, i int) wire.WriteRequest) {
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			var items atomic.Int64
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						ti := int(next.Add(1)) - 1
						if ti >= nt {
							return
						}
						a := tenants[ti]
						s := a.scope("BatchWriteItem")
						from, to := int(lo*float64(sizes[ti])), int(hi*float64(sizes[ti]))
						for i := from; i < to; i += 25 {
							var reqs []wire.WriteRequest
							for j := i; j < min(i+25, to); j++ {
								reqs = append(reqs, fn(a, j))
							}
							if _, err := env.e.BatchWriteItem(testCtx, s, &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{"Bench": reqs}}); err != nil {
								b.Error(err)
								return
							}
							items.Add(int64(len(reqs)))
						}
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			b.Logf("%s: %d writes in %v (%.0f/s)", what, items.Load(), el.Round(time.Millisecond), float64(items.Load())/el.Seconds())
		}
		put := func(v string) func(testActor, int) wire.WriteRequest {
			return func(_ testActor, i int) wire.WriteRequest {
				return wire.WriteRequest{PutRequest: &wire.PutRequest{Item: rbItem(i, v)}}
			}
		}
		var at time.Time
		if n := envInt("TENANTDB_RB_LOADBATCH", 0); n > 0 {
			at = rbLoadFast(b, env.e, tenants, sizes, n) // rewind_load_bench_test.go
		} else {
			load("load", 0, 1, put("v1"))
			time.Sleep(5 * time.Millisecond)
			at = time.Now()
			time.Sleep(5 * time.Millisecond)
			load("overwrite 10%", 0, 0.10, put("v2"))
			load("delete 5%", 0.10, 0.15, func(_ testActor, i int) wire.WriteRequest {
				return wire.WriteRequest{DeleteRequest: &wire.DeleteRequest{Key: attr.Item{"pk": rbItem(i, "")["pk"]}}}
			})
			load("create 5%", 1, 1.05, put("v3"))
		}

		// The other tenants' paced load.
		var (
			mu        sync.Mutex
			restoring atomic.Bool
			during    []time.Duration
			idle      []time.Duration
			after     []time.Duration // the window after a round's restores
			tagged    [4][]rbTagged   // during the restores of each pacing mode: what each request overlapped
			modeR     atomic.Int32
			afterWin  atomic.Bool
			stop      = make(chan struct{})
			wg        sync.WaitGroup
			measure   atomic.Bool
		)
		for w := range 32 {
			a := tenants[1+w%(nt-1)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(w)))
				tick := time.NewTicker(80 * time.Millisecond) // 32 × 12.5/s = 400/s
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					i := rng.Intn(sizes[1])
					r0, a0 := restoring.Load(), afterWin.Load()
					tag := rbTagStart(env.e)
					t0 := time.Now()
					var err error
					if rng.Intn(2) == 0 {
						_, err = env.e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Bench", Key: attr.Item{"pk": rbItem(i, "")["pk"]}, ConsistentRead: boolPtr(true)})
					} else {
						_, err = env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Bench", Item: rbItem(i+sizes[1]*2, "load")})
					}
					d := time.Since(t0)
					cls := tag.end(env.e)
					if err != nil {
						b.Error(err)
						return
					}
					if !measure.Load() {
						continue
					}
					mu.Lock()
					if r0 && restoring.Load() {
						during = append(during, d)
						tagged[modeR.Load()] = append(tagged[modeR.Load()], rbTagged{d, cls})
					} else if !r0 && !restoring.Load() && a0 == afterWin.Load() {
						if a0 {
							after = append(after, d)
						} else {
							idle = append(idle, d)
						}
					}
					mu.Unlock()
				}
			}()
		}
		run := func(a testActor, to time.Time) (Rewind, time.Duration) {
			t0 := time.Now()
			if _, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), to, []string{"Bench"}, "bench"); err != nil {
				b.Fatal(err)
			}
			r, err := env.e.RunRewind(context.Background(), a.scope("RestoreTableToPointInTime"), nil)
			if err != nil {
				b.Fatal(err)
			}
			return r, time.Since(t0)
		}
		// NB: the rounds take turns among the pacing modes: the default
		// (each step's time and the garbage collections its allocations
		// bring about, rewindpace.go), by the steps' time alone (the
		// pacing before §19c), the same with a pause three times as long
		// (about as slow as the default: is it only slower?) and none
		// (RewindPause < 0).
		modes := []struct {
			name      string
			pause, gc float64
		}{{"paced", DefaultRewindPause, DefaultRewindGCRate}, {"paced by time only", DefaultRewindPause, -1},
			{"paced by time only, pause x3", 3 * DefaultRewindPause, -1}, {"unpaced", -1, -1}}
		durs := make([][]time.Duration, len(modes))
		pooled := make([][]time.Duration, len(modes))
		// Each round's p99 in the 3 s before its restores, during them,
		// and in a window after them as long as they took, by mode. NB: on
		// a machine whose load comes in bursts, a longer window more
		// likely holds one: the p99 of 3 s is not the baseline of one of
		// 20 s; the window after is.
		rounds := make([][][3]time.Duration, len(modes))
		var keys int64
		idleFrom := 0
		pct := func(ds []time.Duration, p float64) time.Duration {
			slices.Sort(ds)
			if len(ds) == 0 {
				return 0
			}
			return ds[int(p*float64(len(ds)-1))]
		}
		// ratios logs each round's p99 during ÷ after and ÷ before, and
		// returns their medians.
		ratios := func(what string, rs [][3]time.Duration) (after, before float64) {
			var qa, qb []float64
			for _, r := range rs {
				qb = append(qb, float64(r[1])/float64(max(r[0], 1)))
				qa = append(qa, float64(r[1])/float64(max(r[2], 1)))
				b.Logf("%s round: others' p99 3 s before %v, during %v, after (as long) %v: during ÷ after %.2f×, ÷ before %.2f×", what,
					r[0].Round(10*time.Microsecond), r[1].Round(10*time.Microsecond), r[2].Round(10*time.Microsecond), qa[len(qa)-1], qb[len(qb)-1])
			}
			slices.Sort(qa)
			slices.Sort(qb)
			if len(qa) == 0 {
				return 0, 0
			}
			return qa[len(qa)/2], qb[len(qb)/2]
		}
		for round := range envInt("TENANTDB_RB_ROUNDS", 3*len(modes)) {
			m := round % len(modes)
			env.e.opts.RewindPause, env.e.opts.RewindGCRate = modes[m].pause, modes[m].gc
			modeR.Store(int32(m))
			measure.Store(true)
			p0 := rbSample(db)
			time.Sleep(3 * time.Second) // the baseline window
			p1 := rbSample(db)
			stopTrace := rbTrace(b, round)
			restoring.Store(true)
			r, d1 := run(tenants[0], at)
			keys = r.Tables[0].Keys
			_, d2 := run(tenants[0], r.UndoTo)
			restoring.Store(false)
			stopTrace()
			p2 := rbSample(db)
			afterWin.Store(true)
			time.Sleep(d1 + d2)
			afterWin.Store(false)
			measure.Store(false)
			p3 := rbSample(db)
			b.Logf("round %d (%s) before %v", round, modes[m].name, rbDiff(p0, p1))
			b.Logf("round %d (%s) during %v", round, modes[m].name, rbDiff(p1, p2))
			b.Logf("round %d (%s) after  %v", round, modes[m].name, rbDiff(p2, p3))
			mu.Lock()
			rp := [3]time.Duration{pct(slices.Clone(idle[idleFrom:]), .99), pct(slices.Clone(during), .99), pct(slices.Clone(after), .99)}
			idleFrom = len(idle)
			after = after[:0]
			durs[m] = append(durs[m], d1, d2)
			pooled[m] = append(pooled[m], during...)
			rounds[m] = append(rounds[m], rp)
			during = during[:0]
			mu.Unlock()
		}
		close(stop)
		wg.Wait()
		one, unpaced := durs[0], durs[len(modes)-1]
		slices.Sort(one)
		slices.Sort(unpaced)
		med, medUnpaced := one[len(one)/2], unpaced[len(unpaced)/2]
		// NB: logged before the whole store's restore, which may take long.
		b.Logf("one tenant: %d of %d items changed since T; restores %v, median %v (%.0f keys/s)", keys, big, one, med.Round(time.Millisecond), float64(keys)/med.Seconds())
		b.Logf("other tenants: %d requests without a restore p50 %v p99 %v", len(idle), pct(idle, .5), pct(idle, .99))
		var mp float64
		for i, md := range modes {
			slices.Sort(durs[i])
			b.Logf("%s: restores %v, median %v; others during them: %d requests p50 %v p99 %v", md.name, durs[i], durs[i][len(durs[i])/2].Round(time.Millisecond),
				len(pooled[i]), pct(pooled[i], .5), pct(pooled[i], .99))
			rbAttribute(b, "during "+md.name, tagged[i], pct(idle, .99))
			ma, mb := ratios(md.name, rounds[i])
			b.Logf("%s: others' p99 during ÷ after (as long), median of %d rounds %.2f×; during ÷ 3 s before %.2f×", md.name, len(rounds[i]), ma, mb)
			if i == 0 {
				mp = ma
			}
		}

		// The whole store, without the pacing (nobody else is served):
		// compared with the one tenant's unpaced median.
		env.e.opts.RewindPause = -1
		t0 := time.Now()
		var all int64
		for i, a := range tenants {
			r, _ := run(a, at)
			all += r.Tables[0].Keys
			if (i+1)%max(1, nt/10) == 0 {
				b.Logf("whole store: %d of %d tenants, %d changed keys in %v", i+1, nt, all, time.Since(t0).Round(time.Millisecond))
			}
		}
		whole := time.Since(t0)
		env.e.opts.RewindPause = DefaultRewindPause
		b.Logf("whole store: %d tenants, %d items, %d changed keys: %v (%.0f keys/s); ÷ one tenant unpaced %.1f×, ÷ one tenant paced %.1f×", nt, total, all, whole.Round(time.Millisecond),
			float64(all)/whole.Seconds(), whole.Seconds()/medUnpaced.Seconds(), whole.Seconds()/med.Seconds())
		b.ReportMetric(mp, "others-p99-ratio-paced")
		b.ReportMetric(med.Seconds(), "one-tenant-s")
		b.ReportMetric(whole.Seconds(), "whole-store-s")
		b.ReportMetric(float64(pct(idle, .99).Microseconds()), "others-p99-idle-µs")
		b.ReportMetric(float64(pct(pooled[0], .99).Microseconds()), "others-p99-during-µs")
		env.e.Close()
		db.Close()
	}
}
