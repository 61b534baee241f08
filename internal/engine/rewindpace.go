package engine

import (
	"context"
	"runtime/metrics"
	"time"
)

// How an in-place restore yields to the other tenants by itself (no
// scheduler has to know about it): it works in short steps, and
//
//   - before a step it waits, up to rewindMaxWait, for a moment when no
//     request of anyone holds a handle of the engine (nothing in flight),
//     so that it does not start its work beside theirs;
//   - after a step it sleeps Options.RewindPause times as long as the
//     step took, so that it uses at most 1/(1+RewindPause) of the time
//     (a core, the WAL's commit pipeline and its fsyncs), and a request
//     arriving meanwhile is delayed by at most one short step;
//   - while requests keep coming (one was served or arrived during the
//     last step) the pause doubles, up to rewindMaxBackoff times, and it
//     halves back with every step nobody else needed the server: a
//     restore beside a busy server works 1/(1+RewindPause·rewindMaxBackoff)
//     of the time, on an idle one 1/(1+RewindPause);
//   - and, if a request came since the previous step ended, it pauses at
//     least until the memory the step allocated is within
//     Options.RewindGCRate garbage collections a second: the collector
//     runs whenever the program has allocated its heap goal's headroom
//     (the goal less the heap found live), so a restore that allocates
//     faster than the others' requests makes it run more often, and
//     every cycle stops the world twice, takes a P of two for its marking
//     and makes allocating requests assist it. Measured (BENCHMARKS.md
//     §19c): the garbage collector, not the CPU the steps take nor the
//     store's stalls, is what raised the others' tail.
//
// The steps are reading rewindReadStep records of the change log (the
// state at the time) and writing back rewindChunk keys (one batch, not
// synced on its own: rewind.go). A step that is slowed by the load (other tenants, other
// processes, the disk) makes the pause after it as long: the restore
// slows down as the machine gets busier. RewindPause < 0 turns all of it
// off (the restore runs flat out).
//
// NB: the wait is bounded so that a server never idle still finishes
// its restores: at worst a step every rewindMaxWait plus its pause.

// rewindMaxWait bounds a restore step's wait for an idle moment.
const rewindMaxWait = 20 * time.Millisecond

// rewindIdlePoll is how often a waiting restore looks again.
const rewindIdlePoll = 500 * time.Microsecond

// rewindReadStep is how many change records a restore reads between two
// pauses while it computes the state at the time.
const rewindReadStep = 256

// rewindMaxBackoff bounds how many times longer than RewindPause a
// restore pauses while other requests keep coming.
const rewindMaxBackoff = 8

// rewindPacer paces one restore's steps.
type rewindPacer struct {
	e     *Engine
	ctx   context.Context
	begin time.Time // the current step's start; zero outside a step
	// gen and opened are the request handles' generation and count
	// opened at the step's start; backoff multiplies the pause.
	gen     *genCount
	opened  uint64
	backoff float64
	// lastGen and lastOpened are the same at the previous step's end.
	lastGen    *genCount
	lastOpened uint64
	// allocs0 is the process's allocated bytes at the step's start.
	allocs0 uint64
	mem     []metrics.Sample // rewindMemMetrics
	// Waited and Paused are the time spent waiting for idle moments and
	// pausing after steps; GCPaused the part of Paused that the
	// allocation bound (RewindGCRate) added.
	Waited, Paused, GCPaused time.Duration
}

// rewindMemMetrics are what the pacer reads of the runtime: the bytes
// allocated so far, the heap goal and the heap live at the last cycle.
var rewindMemMetrics = [...]string{"/gc/heap/allocs:bytes", "/gc/heap/goal:bytes", "/gc/heap/live:bytes"}

// rewindMinHeadroom is the least allocation a garbage collection cycle is
// taken to allow (the runtime's smallest heap goal is 4 MB).
const rewindMinHeadroom = 1 << 20

// DefaultRewindGCRate is Options.RewindGCRate's default: a restore's
// allocations bring about at most two garbage collections a second.
const DefaultRewindGCRate = 2.0

func (e *Engine) rewindPacer(ctx context.Context) *rewindPacer {
	p := &rewindPacer{e: e, ctx: ctx, backoff: 1}
	p.lastGen = e.moves.current()
	p.lastOpened = p.lastGen.opened.Load()
	if e.opts.RewindGCRate > 0 {
		p.mem = make([]metrics.Sample, len(rewindMemMetrics))
		for i, n := range rewindMemMetrics {
			p.mem[i].Name = n
		}
	}
	return p
}

func (p *rewindPacer) on() bool { return p.e.opts.RewindPause > 0 }

// inFlight is the number of request handles open: requests being served.
// NB: a restore's own handle is not counted (runRewind makes it without
// trackHandle).
func (e *Engine) inFlight() int64 { return e.moves.current().n.Load() }

// start begins a step: it waits for an idle moment (bounded).
func (p *rewindPacer) start() error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if p.on() && p.e.inFlight() > 0 {
		t0 := time.Now()
		deadline := t0.Add(rewindMaxWait)
		for p.e.inFlight() > 0 && time.Now().Before(deadline) {
			if err := sleepCtx(p.ctx, rewindIdlePoll); err != nil {
				return err
			}
		}
		p.Waited += time.Since(t0)
	}
	p.gen = p.e.moves.current()
	p.opened = p.gen.opened.Load()
	p.begin = time.Now()
	p.e.rewindSteps.Add(1)
	if p.on() && p.mem != nil {
		metrics.Read(p.mem[:1])
		p.allocs0 = p.mem[0].Value.Uint64()
	}
	return nil
}

// end ends a step: it pauses RewindPause times the step's duration.
func (p *rewindPacer) end() error {
	if p.begin.IsZero() {
		return nil
	}
	took := time.Since(p.begin)
	p.begin = time.Time{}
	p.e.rewindSteps.Add(1)
	if !p.on() {
		return nil
	}
	gc := p.e.moves.current()
	if gc != p.gen || gc.opened.Load() != p.opened || gc.n.Load() > 0 {
		p.backoff = min(p.backoff*2, rewindMaxBackoff)
	} else {
		p.backoff = max(p.backoff/2, 1)
	}
	// NB: the collections matter only to requests: a restore alone (no
	// request since the previous step ended: during its pause, its wait
	// or this step) allocates as fast as it works.
	busy := gc != p.lastGen || gc.opened.Load() != p.lastOpened || gc.n.Load() > 0
	p.lastGen, p.lastOpened = gc, gc.opened.Load()
	d := time.Duration(float64(took) * p.e.opts.RewindPause * p.backoff)
	if gd := p.gcPause(took); busy && gd > d {
		p.GCPaused += gd - d
		d = gd
	}
	p.Paused += d
	return sleepCtx(p.ctx, d)
}

// gcPause returns how long a step that took took must be followed by a
// pause for its allocations to bring about at most RewindGCRate garbage
// collections a second. NB: the allocations are the process's during the
// step, the restore's and whatever the others allocated meanwhile: on a
// busy server the restore slows down the more.
func (p *rewindPacer) gcPause(took time.Duration) time.Duration {
	if p.mem == nil {
		return 0
	}
	metrics.Read(p.mem)
	allocs, goal, live := p.mem[0].Value.Uint64(), p.mem[1].Value.Uint64(), p.mem[2].Value.Uint64()
	headroom := uint64(rewindMinHeadroom)
	if goal > live+headroom {
		headroom = goal - live
	}
	cycles := float64(allocs-p.allocs0) / float64(headroom)
	return time.Duration(cycles/p.e.opts.RewindGCRate*float64(time.Second)) - took
}

// step ends the current step and starts the next one.
func (p *rewindPacer) step() error {
	if err := p.end(); err != nil {
		return err
	}
	return p.start()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
