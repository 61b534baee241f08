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
