package engine

import (
	"context"
	"testing"
)

// TestRewindPacerBacksOff: a restore's pause grows while other requests
// are served during its steps (up to rewindMaxBackoff), shrinks back when
// none are, and RewindPause < 0 turns the pacing off.
func TestRewindPacerBacksOff(t *testing.T) {
	e := &Engine{}
	e.opts.RewindPause = 0.001 // NB: real sleeps, kept tiny
	p := e.rewindPacer(context.Background())
	step := func(busy bool) {
		t.Helper()
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		if busy { // a request served while the step runs
			_, done := e.trackHandle()
			done()
		}
		if err := p.end(); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		step(true)
	}
	if p.backoff != rewindMaxBackoff {
		t.Fatalf("backoff after 5 busy steps = %v, want %v", p.backoff, float64(rewindMaxBackoff))
	}
	step(false)
	if p.backoff != rewindMaxBackoff/2 {
		t.Fatalf("backoff after an idle step = %v, want %v", p.backoff, float64(rewindMaxBackoff/2))
	}
	for range 5 {
		step(false)
	}
	if p.backoff != 1 {
		t.Fatalf("backoff after idle steps = %v, want 1", p.backoff)
	}

	e.opts.RewindPause = -1
	q := e.rewindPacer(context.Background())
	_, done := e.trackHandle() // in flight: an unpaced restore does not wait
	defer done()
	for range 3 {
		if err := q.start(); err != nil {
			t.Fatal(err)
		}
		if err := q.end(); err != nil {
			t.Fatal(err)
		}
	}
	if q.Paused != 0 || q.Waited != 0 || q.backoff != 1 {
		t.Fatalf("unpaced restore paused %v, waited %v, backoff %v", q.Paused, q.Waited, q.backoff)
	}
}

var rewindSink []byte

// TestRewindPacerBoundsGC: a step that allocates much while requests
// are served is followed by a pause long enough for its allocations to
// bring about at most RewindGCRate garbage collections a second; with
// RewindGCRate < 0, no pacing or no request, there is none.
func TestRewindPacerBoundsGC(t *testing.T) {
	for _, tc := range []struct {
		pause, gc  float64
		busy, want bool
	}{{0.001, 20, true, true}, {0.001, 20, false, false}, {0.001, -1, true, false}, {-1, 20, true, false}} {
		e := &Engine{}
		e.opts.RewindPause, e.opts.RewindGCRate = tc.pause, tc.gc
		p := e.rewindPacer(context.Background())
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		if tc.busy { // a request served while the step runs
			_, done := e.trackHandle()
			done()
		}
		for range 64 {
			rewindSink = make([]byte, 1<<20) // 64 MB: many cycles' headroom
		}
		if err := p.end(); err != nil {
			t.Fatal(err)
		}
		if got := p.GCPaused > 0; got != tc.want {
			t.Errorf("RewindPause %v, RewindGCRate %v, a request %v: paused %v for the allocations, want a pause: %v", tc.pause, tc.gc, tc.busy, p.GCPaused, tc.want)
		}
	}
}
