package aggregate

import (
	"context"
	"fmt"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"testing"
	"time"
)

// TestWorkerWaitsWhileChangesInFlight: a change of the namespace being
// committed makes a page "not caught up"; the worker must wait for the
// commit rather than read again at once (it spun, reading the log
// thousands of times a second, while the tenant wrote to any logged
// table).
func TestWorkerWaitsWhileChangesInFlight(t *testing.T) {
	ctx := context.Background()
	l := newFakeLog("tickets")
	s := openService(t, memDB(t), l, nil)
	defer s.Close()
	d := Definition{Name: "by-status", Table: "tickets", GroupBy: "status", Count: true}
	if _, err := s.Create(ctx, testScope(), d); err != nil {
		t.Fatal(err)
	}
	l.put("t1", ticket("OPEN", "1"))
	waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))

	fe := l.begin("t2", ticket("OPEN", "1"), false) // in flight until committed
	// A commit of another table of the namespace wakes the worker, which
	// then finds nothing for its table and a change in flight.
	l.mu.Lock()
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	before := l.follows.Load()
	time.Sleep(200 * time.Millisecond)
	if n := l.follows.Load() - before; n > 5 {
		t.Errorf("the worker read the log %d times in 200 ms with one change in flight and nothing to fold; it must wait for the commit", n)
	}
	l.commit(fe)
	waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))
}

// TestWorkerBatchesSteadyWrites: under a steady stream of commits the
// worker reads the log at most once per Window (unless it read a full
// page), so one batch folds many commits' changes, and every change is
// still folded exactly once.
func TestWorkerBatchesSteadyWrites(t *testing.T) {
	ctx := context.Background()
	l := newFakeLog("tickets")
	const window = 20 * time.Millisecond
	s := openServiceWith(t, Options{DB: memDB(t), Log: l, PageSize: 1000, Window: window})
	defer s.Close()
	d := Definition{Name: "by-status", Table: "tickets", GroupBy: "status", Count: true}
	if _, err := s.Create(ctx, testScope(), d); err != nil {
		t.Fatal(err)
	}
	l.put("t0", ticket("OPEN", "1"))
	base := waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d))).Applied

	before, start := l.follows.Load(), time.Now()
	const writes = 300
	for i := range writes {
		l.put(fmt.Sprintf("t%d", i%40), ticket([]string{"OPEN", "CLOSED", "PENDING"}[i%3], "1"))
		if i%2 == 1 {
			time.Sleep(time.Millisecond) // two commits a millisecond: well above Pacer's threshold on a slow machine too
		}
	}
	elapsed := time.Since(start)
	reads := l.follows.Load() - before
	want := l.recount(t, d)
	waitFor(t, s, d.Name, func(in Info) bool { return in.Applied >= base+writes && caughtUpTo(l, want)(in) })
	time.Sleep(3 * window)
	if in := waitFor(t, s, d.Name, caughtUpTo(l, want)); in.Applied != base+writes {
		t.Errorf("applied = %d, want %d", in.Applied, base+writes)
	}
	// NB: once the window is open reads are at least a window apart, so
	// at most one per window that passed, plus the one under way when the
	// writes began; before it opens (changelog.Pacer: PaceRecords changes
	// within the horizon) a read per commit and the empty read after it.
	if limit := int64(elapsed/window) + 2 + 2*changelog.PaceRecords; reads > limit {
		t.Errorf("%d reads of the log for %d commits in %v; want at most %d (one per %v window once open)", reads, writes, elapsed, limit, window)
	}
}
