package quota

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// gate is the fair admission scheduler. At most limit requests run at once
// (server-wide). A tenant alone may use all of them (soloCap); while other
// tenants are active it may use at most sharedCap, so that it cannot keep
// every core busy with its own requests (see DESIGN.md: a Go process whose
// Ps all run one tenant's goroutines delays every other goroutine by up to
// a scheduler time slice). A request that cannot start waits in its
// tenant's FIFO queue; whenever a slot frees, deficit round robin across
// the tenants with waiters picks the next one, so every waiting tenant gets
// slots in proportion to its weight however many requests it has queued: a
// tenant with 256 connections gets the same share as a tenant with 4.
//
// Each grant costs a flow one unit of deficit; when the request finishes,
// its cost beyond one unit (its consumed capacity) is charged as well, so
// a tenant of heavy requests (1 MB scans) gets fewer of them than a tenant
// of light ones (4 KB gets) gets of its own.
//
// Queues are bounded (per tenant and in total) and waits time out; a
// request that cannot be queued, or waits too long, is shed with an error
// instead of piling up.
type gate struct {
	mu         sync.Mutex
	limit      int           // requests running at once, server-wide
	soloCap    int           // a tenant's cap while no other tenant is active
	sharedCap  int           // a tenant's cap while others are active
	queueLimit int           // waiting requests per tenant
	totalQueue int           // waiting requests in total
	timeout    time.Duration // longest wait in a queue

	// Tenants seen in the current and the previous contention window, and
	// how many of the current window's were in the previous one too.
	window                      int64
	prevValid                   bool // seenPrev counts window-1
	seenCur, seenPrev, seenBoth int
	busy                        list.List // flows with requests running or waiting

	inflight int
	queued   int
	ring     list.List     // flows with waiters, in round-robin order
	cursor   *list.Element // the flow DRR visits next

	// onGrant, if set (tests), is called under mu for every waiter granted
	// a slot from a queue, in grant order.
	onGrant func(tenancy.TenantID)
}

// flow is one tenant's state in the gate; the Manager keeps one per tenant
// state. Its fields are guarded by the gate's mutex.
type flow struct {
	tenant   tenancy.TenantID
	weight   float64
	max      int // the tenant's own cap on running requests; 0: the gate's
	inflight int
	window   int64 // the last contention window the flow was seen in
	deficit  float64
	waiters  list.List // of *waiter, FIFO
	elem     *list.Element
	busyElem *list.Element // in gate.busy while inflight > 0 or waiters queued
}

type waiter struct {
	f       *flow
	ready   chan struct{}
	granted bool
	elem    *list.Element
}

// Errors of Acquire; the Manager turns them into client errors.
var (
	errTenantQueueFull = errors.New("quota: tenant queue full")
	errOverloaded      = errors.New("quota: server queue full")
	errQueueTimeout    = errors.New("quota: queue wait timed out")
)

// contentionWindow is how long a tenant counts as active after a request.
const contentionWindow = time.Second

func newGate(limit, soloCap, sharedCap, queueLimit, totalQueue int, timeout time.Duration) *gate {
	return &gate{limit: limit, soloCap: soloCap, sharedCap: sharedCap, queueLimit: queueLimit, totalQueue: totalQueue, timeout: timeout}
}

// see notes that f makes a request at now. REQUIRES: g.mu.
func (g *gate) see(f *flow, now time.Time) {
	w := now.UnixNano() / int64(contentionWindow)
	// NB: requests race to the mutex with times read before it; one read
	// just before a window boundary must not reset the window after it.
	w = max(w, g.window)
	if w != g.window {
		g.prevValid = w == g.window+1
		g.seenPrev = 0
		if g.prevValid {
			g.seenPrev = g.seenCur
		}
		g.seenCur, g.seenBoth, g.window = 0, 0, w
		// NB: a tenant with requests running or queued is active however
		// long ago it made them (slow requests, a long queue): it is seen
		// in every window it stays busy.
		for e := g.busy.Front(); e != nil; e = e.Next() {
			g.mark(e.Value.(*flow))
		}
	}
	g.mark(f)
}

// mark counts f as seen in the current window. REQUIRES: g.mu.
func (g *gate) mark(f *flow) {
	if f.window == g.window {
		return
	}
	if g.prevValid && f.window == g.window-1 {
		g.seenBoth++
	}
	f.window = g.window
	g.seenCur++
}

// active returns the number of tenants active now: seen in the current
// or the previous window. REQUIRES: g.mu.
func (g *gate) active() int {
	return g.seenCur + g.seenPrev - g.seenBoth
}

// track keeps f in g.busy while it has requests running or waiting.
// REQUIRES: g.mu.
func (g *gate) track(f *flow) {
	busy := f.inflight > 0 || f.waiters.Len() > 0
	switch {
	case busy && f.busyElem == nil:
		f.busyElem = g.busy.PushBack(f)
	case !busy && f.busyElem != nil:
		g.busy.Remove(f.busyElem)
		f.busyElem = nil
	}
}

// capOf returns how many requests f may run now. REQUIRES: g.mu.
func (g *gate) capOf(f *flow) int {
	c := g.soloCap
	if g.active() > 1 {
		c = g.sharedCap
	}
	if f.max > 0 {
		c = f.max
	}
	return min(c, g.limit)
}

// acquire waits for a slot for flow f; the caller passes f to release when
// the request is done. weight and max (0: defaults) come from the tenant's
// quota; now is the time of the request. It reports whether the request
// had to wait. Errors: errTenantQueueFull, errOverloaded, errQueueTimeout,
// or ctx's error.
func (g *gate) acquire(ctx context.Context, f *flow, weight float64, max int, now time.Time) (waited bool, err error) {
	g.mu.Lock()
	f.weight = weight
	if f.weight <= 0 {
		f.weight = DefaultWeight
	}
	f.max = max
	g.see(f, now)
	if f.waiters.Len() == 0 && g.inflight < g.limit && f.inflight < g.capOf(f) {
		// NB: a slot is free and this tenant has nobody queued; any other
		// tenant still queued is held back by its own cap (dispatch runs
		// on every release), so taking the slot is fair.
		g.inflight++
		f.inflight++
		g.track(f)
		g.mu.Unlock()
		return false, nil
	}
	if f.waiters.Len() >= g.queueLimit {
		g.mu.Unlock()
		return false, errTenantQueueFull
	}
	if g.queued >= g.totalQueue {
		g.mu.Unlock()
		return false, errOverloaded
	}
	w := &waiter{f: f, ready: make(chan struct{})}
	w.elem = f.waiters.PushBack(w)
	g.queued++
	if f.elem == nil {
		f.elem = g.ring.PushBack(f)
	}
	g.track(f)
	g.mu.Unlock()

	var timeout <-chan time.Time
	if g.timeout > 0 {
		tm := time.NewTimer(g.timeout)
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-w.ready:
		return true, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = errQueueTimeout
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.granted {
		// Granted while giving up: hand the slot on.
		g.releaseLocked(f, 0)
		return true, err
	}
	g.unqueue(w)
	g.track(f)
	return true, err
}

// maxDebt bounds the deficit a flow can owe for expensive requests, and so
// the number of round-robin visits dispatch may need to find a grant.
const maxDebt = 32

// release frees f's slot; cost is the request's consumed capacity (units),
// of which everything past the first unit is charged to f's deficit.
func (g *gate) release(f *flow, cost float64) {
	g.mu.Lock()
	g.releaseLocked(f, cost)
	g.mu.Unlock()
}

func (g *gate) releaseLocked(f *flow, cost float64) {
	g.inflight--
	f.inflight--
	g.track(f)
	if cost > 1 && f.elem != nil {
		// NB: only a flow still competing pays; an idle one starts afresh.
		f.deficit = max(f.deficit-(cost-1), -maxDebt)
	}
	g.dispatch()
}

// unqueue removes w from its flow's queue (and the flow from the ring if
// it has no waiters left).
func (g *gate) unqueue(w *waiter) {
	f := w.f
	f.waiters.Remove(w.elem)
	g.queued--
	if f.waiters.Len() == 0 {
		g.leaveRing(f)
	}
}

func (g *gate) leaveRing(f *flow) {
	if f.elem == nil {
		return
	}
	if g.cursor == f.elem {
		g.cursor = f.elem.Next()
	}
	g.ring.Remove(f.elem)
	f.elem = nil
	f.deficit = min(f.deficit, 0)
}

// idle reports whether f has nothing running or waiting.
func (g *gate) idle(f *flow) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return f.inflight == 0 && f.waiters.Len() == 0
}

// dispatch grants free slots to queued waiters by deficit round robin.
// REQUIRES: g.mu held.
func (g *gate) dispatch() {
	blocked := 0 // consecutive flows visited that are at their cap
	for g.inflight < g.limit && g.ring.Len() > 0 && blocked < g.ring.Len() {
		if g.cursor == nil {
			g.cursor = g.ring.Front()
		}
		f := g.cursor.Value.(*flow)
		if f.inflight >= g.capOf(f) {
			blocked++
			g.cursor = g.cursor.Next()
			continue
		}
		blocked = 0
		if f.deficit < 1 {
			f.deficit += f.weight
			if f.deficit < 1 {
				g.cursor = g.cursor.Next()
				continue
			}
		}
		f.deficit--
		w := f.waiters.Front().Value.(*waiter)
		g.unqueue(w)
		w.granted = true
		g.inflight++
		f.inflight++
		g.track(f)
		if g.onGrant != nil {
			g.onGrant(f.tenant)
		}
		close(w.ready)
		if f.elem != nil && f.deficit < 1 {
			g.cursor = g.cursor.Next()
		}
	}
}

// stats returns the number of running and waiting requests.
func (g *gate) stats() (inflight, queued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight, g.queued
}
