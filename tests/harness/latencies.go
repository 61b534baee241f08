package harness

import (
	"slices"
	"sync"
	"time"
)

// Latencies records request latencies with their start times, from any
// number of goroutines, for percentiles over a window of a run (a move,
// a baseline before it).
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
	at []time.Time
}

// Add records a request started at at that took d.
func (l *Latencies) Add(at time.Time, d time.Duration) {
	l.mu.Lock()
	l.d, l.at = append(l.d, d), append(l.at, at)
	l.mu.Unlock()
}

// P99 returns the 99th percentile and the maximum of the latencies of
// the requests started in [from, to), and how many there were.
func (l *Latencies) P99(from, to time.Time) (p99, top time.Duration, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ds []time.Duration
	for i, d := range l.d {
		if !l.at[i].Before(from) && l.at[i].Before(to) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)*99/100], ds[len(ds)-1], len(ds)
}
