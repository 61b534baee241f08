package changelog

import (
	"testing"
	"time"
)

func TestPacerOpensTheWindowOnlyUnderLoad(t *testing.T) {
	const w = 10 * time.Millisecond
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name  string
		every time.Duration // between reads
		n     int           // changes per read
		open  bool          // window open after a while
	}{
		{"200 changes a second, one per read", 5 * time.Millisecond, 1, false},
		{"300 a second", 10 * time.Millisecond, 3, false},
		{"1,000 a second, one per read", time.Millisecond, 1, true},
		{"5,000 a second, a window's worth per read", w, 50, true},
		{"idle, a wake a second", time.Second, 0, false},
		{"woken 1,000 times a second for nothing (another table's commits)", time.Millisecond, 0, true},
		{"woken 100 times a second for nothing", 10 * time.Millisecond, 0, false},
	} {
		p := Pacer{Window: w}
		var next time.Time
		for i := range 100 {
			next = p.Next(t0.Add(time.Duration(i)*c.every), c.n, false)
		}
		if got := !next.IsZero(); got != c.open {
			t.Errorf("%s: window open %v, want %v", c.name, got, c.open)
		}
	}
	// Load that stops: the window closes once the horizon has passed.
	p := Pacer{Window: w}
	for i := range 100 {
		p.Next(t0.Add(time.Duration(i)*time.Millisecond), 2, false)
	}
	if p.Next(t0.Add(time.Second), 1, false) != (time.Time{}) {
		t.Error("the window stays open after the load stopped")
	}
	// The empty read after one that found changes is not a wake: 300
	// changes a second, each read on its own and followed by an empty
	// read, keep the window shut.
	p = Pacer{Window: w}
	var next time.Time
	for i := range 100 {
		at := t0.Add(time.Duration(i) * 3333 * time.Microsecond)
		p.Next(at, 1, false)
		next = p.Next(at.Add(50*time.Microsecond), 0, false)
	}
	if !next.IsZero() {
		t.Error("the empty read after each change opened the window at 300 changes a second")
	}
	// A full page reads on at once.
	if p.Next(t0.Add(time.Second), 1000, true) != (time.Time{}) {
		t.Error("a full page waits for the window")
	}
}
