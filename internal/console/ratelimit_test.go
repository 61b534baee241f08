package console

import (
	"testing"
	"time"
)

// The buckets refill: after the burst, one more failure per period.
func TestLimiterRefills(t *testing.T) {
	l := newLimiter(3, time.Minute)
	now := time.Unix(1e9, 0)
	for i := range 3 {
		if d := l.wait("x", now); d != 0 {
			t.Fatalf("attempt %d held back %s", i, d)
		}
		l.fail("x", now)
	}
	if d := l.wait("x", now); d < time.Minute || d > time.Minute+time.Second {
		t.Fatalf("after the burst: wait %s, want about a minute", d)
	}
	if d := l.wait("y", now); d != 0 {
		t.Fatalf("another name held back %s", d)
	}
	if d := l.wait("x", now.Add(30*time.Second)); d < 30*time.Second || d > 31*time.Second {
		t.Fatalf("half a period later: wait %s", d)
	}
	if d := l.wait("x", now.Add(time.Minute)); d != 0 {
		t.Fatalf("a period later: wait %s", d)
	}
	l.fail("x", now.Add(time.Minute))
	if d := l.wait("x", now.Add(time.Minute)); d == 0 {
		t.Fatal("a failure after the refill is not counted")
	}
}

// Full buckets are dropped once many names are tracked.
func TestLimiterSweeps(t *testing.T) {
	l := newLimiter(1, time.Second)
	now := time.Unix(1e9, 0)
	for i := range limiterSweepAt {
		l.fail(string(rune(i)), now)
	}
	l.fail("late", now.Add(time.Hour))
	if n := len(l.b); n != 1 {
		t.Fatalf("%d buckets after the sweep, want 1", n)
	}
}
