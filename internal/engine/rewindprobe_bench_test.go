package engine

import (
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"runtime/trace"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/storage"
)

// What BenchmarkTenantRestoreInStore measures beside the other tenants'
// latency, to tell what raises it during a restore: the process's
// garbage collector (cycles, stop-the-world pauses, the CPU it used,
// bytes allocated), the scheduler (how long runnable goroutines waited
// for a P: a request behind a restore step waits there) and the store
// (write stalls, flushes, compactions, WAL syncs). A probe is a sample of
// cumulative counters; the difference of two is a window's.

var rbProbeNames = []string{
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/allocs:bytes",
	"/sched/pauses/total/gc:seconds",
	"/sched/latencies:seconds",
}

type rbProbe struct {
	at      time.Time
	samples []metrics.Sample
	store   storage.Metrics
	cpu     time.Duration // the process's user and system CPU
}

func rbSample(db *storage.DB) rbProbe {
	p := rbProbe{at: time.Now(), samples: make([]metrics.Sample, len(rbProbeNames))}
	for i, n := range rbProbeNames {
		p.samples[i].Name = n
	}
	metrics.Read(p.samples)
	p.store, _ = db.Metrics()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		p.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return p
}

// rbWindow is what happened between two probes.
type rbWindow struct {
	Secs        float64
	GCCycles    uint64
	AllocMB     float64
	CPU         float64 // seconds of CPU the process used
	GCPauseP99  time.Duration
	GCPauseMax  time.Duration
	GCPauseSum  time.Duration
	SchedP99    time.Duration // goroutines' wait for a P
	SchedP999   time.Duration
	SchedOver1  float64 // the fraction of waits longer than 1 ms
	Stalls      int64
	StallTime   time.Duration
	Flushes     int64
	Compactions int64
	WALSyncs    uint64
	WALSyncMean time.Duration
}

func (w rbWindow) String() string {
	return fmt.Sprintf("%.1fs: GC %d cycles (%.1f/s), pauses p99 %v max %v sum %v, process CPU %.2f cores, alloc %.0f MB/s; sched wait p99 %v p99.9 %v, >1ms %.3f%%; stalls %d (%v), flushes %d, compactions %d, WAL syncs %d (mean %v)",
		w.Secs, w.GCCycles, float64(w.GCCycles)/w.Secs, w.GCPauseP99, w.GCPauseMax, w.GCPauseSum, w.CPU/w.Secs, w.AllocMB/w.Secs,
		w.SchedP99, w.SchedP999, 100*w.SchedOver1, w.Stalls, w.StallTime.Round(time.Millisecond), w.Flushes, w.Compactions, w.WALSyncs, w.WALSyncMean.Round(time.Microsecond))
}

// rbDiff returns the window from a to b.
func rbDiff(a, b rbProbe) rbWindow {
	w := rbWindow{Secs: b.at.Sub(a.at).Seconds()}
	for i := range a.samples {
		x, y := a.samples[i].Value, b.samples[i].Value
		switch rbProbeNames[i] {
		case "/gc/cycles/total:gc-cycles":
			w.GCCycles = y.Uint64() - x.Uint64()
		case "/gc/heap/allocs:bytes":
			w.AllocMB = float64(y.Uint64()-x.Uint64()) / 1e6
		case "/sched/pauses/total/gc:seconds":
			h := histDiff(x.Float64Histogram(), y.Float64Histogram())
			w.GCPauseP99, w.GCPauseMax, w.GCPauseSum = histQ(h, .99), histQ(h, 1), histSum(h)
		case "/sched/latencies:seconds":
			h := histDiff(x.Float64Histogram(), y.Float64Histogram())
			w.SchedP99, w.SchedP999 = histQ(h, .99), histQ(h, .999)
			w.SchedOver1 = histOver(h, 1e-3)
		}
	}
	w.CPU = (b.cpu - a.cpu).Seconds()
	w.Stalls = b.store.WriteStallsTotal - a.store.WriteStallsTotal
	w.StallTime = b.store.WriteStallDurationTotal - a.store.WriteStallDurationTotal
	w.Flushes = b.store.FlushesTotal - a.store.FlushesTotal
	w.Compactions = b.store.CompactionsTotal - a.store.CompactionsTotal
	w.WALSyncs = b.store.WALSyncsTotal - a.store.WALSyncsTotal
	if w.WALSyncs > 0 {
		w.WALSyncMean = (b.store.WALSyncDurationTotal - a.store.WALSyncDurationTotal) / time.Duration(w.WALSyncs)
	}
	return w
}

type hist struct {
	counts  []uint64
	buckets []float64
}

func histDiff(a, b *metrics.Float64Histogram) hist {
	h := hist{counts: make([]uint64, len(b.Counts)), buckets: b.Buckets}
	for i := range b.Counts {
		h.counts[i] = b.Counts[i] - a.Counts[i]
	}
	return h
}

// histQ returns the upper bound of the bucket holding quantile q.
func histQ(h hist, q float64) time.Duration {
	var n uint64
	for _, c := range h.counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= want && c > 0 {
			hi := h.buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = h.buckets[i]
			}
			return time.Duration(hi * 1e9)
		}
	}
	return 0
}

func histSum(h hist) time.Duration {
	var s float64
	for i, c := range h.counts {
		lo, hi := h.buckets[i], h.buckets[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo
		}
		s += float64(c) * (lo + hi) / 2
	}
	return time.Duration(s * 1e9)
}

func histOver(h hist, v float64) float64 {
	var n, over uint64
	for i, c := range h.counts {
		n += c
		if h.buckets[i] >= v {
			over += c
		}
	}
	if n == 0 {
		return 0
	}
	return float64(over) / float64(n)
}

// rbTrace starts an execution trace of round's restores into the file
// $TENANTDB_RB_TRACE.<round> if that variable is set, and returns what
// stops it.
func rbTrace(b *testing.B, round int) (stop func()) {
	base := os.Getenv("TENANTDB_RB_TRACE")
	if base == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", base, round))
	if err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}
}

// rbTag is what a request of the other tenants overlapped: a restore
// step, a garbage collection (a stop-the-world pause or a cycle's end).
type rbTag struct {
	steps  uint64
	gc     [2]metrics.Sample
	pauses uint64
	cycles uint64
}

func rbGCState(s []metrics.Sample) (pauses, cycles uint64) {
	metrics.Read(s)
	for _, c := range s[0].Value.Float64Histogram().Counts {
		pauses += c
	}
	return pauses, s[1].Value.Uint64()
}

// rbTagStart is taken as a request starts, rbTag.end as it ends.
func rbTagStart(e *Engine) *rbTag {
	t := &rbTag{steps: e.rewindSteps.Load()}
	t.gc[0].Name, t.gc[1].Name = "/sched/pauses/total/gc:seconds", "/gc/cycles/total:gc-cycles"
	t.pauses, t.cycles = rbGCState(t.gc[:])
	return t
}

// rbClasses name what rbTag.end returns.
var rbClasses = [4]string{"neither", "restore step only", "GC only", "step and GC"}

func (t *rbTag) end(e *Engine) int {
	s := e.rewindSteps.Load()
	p, c := rbGCState(t.gc[:])
	cls := 0
	if s != t.steps || s%2 == 1 {
		cls |= 1
	}
	if p != t.pauses || c != t.cycles {
		cls |= 2
	}
	return cls
}

// rbTagged is a request's latency and its class.
type rbTagged struct {
	d   time.Duration
	cls int
}

// rbAttribute logs, of the requests made during restores, how many
// overlapped each class, their p50/p99, and how many of those slower than
// slow (the p99 of the same load without a restore) did.
func rbAttribute(b *testing.B, what string, rs []rbTagged, slow time.Duration) {
	var by [4][]time.Duration
	var tail [4]int
	n := 0
	for _, r := range rs {
		by[r.cls] = append(by[r.cls], r.d)
		if r.d > slow {
			tail[r.cls]++
			n++
		}
	}
	for c, ds := range by {
		slices.Sort(ds)
		p50, p99 := time.Duration(0), time.Duration(0)
		if len(ds) > 0 {
			p50, p99 = ds[len(ds)/2], ds[int(.99*float64(len(ds)-1))]
		}
		b.Logf("%s: %-17s %5d requests (%4.1f%%) p50 %8v p99 %8v; slower than %v: %d of %d", what, rbClasses[c], len(ds), 100*float64(len(ds))/float64(max(len(rs), 1)),
			p50.Round(time.Microsecond), p99.Round(time.Microsecond), slow.Round(time.Microsecond), tail[c], n)
	}
}
