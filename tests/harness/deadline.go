package harness

import (
	"context"
	"testing"
	"time"
)

// deadlineMargin is how long before the test binary's deadline Context
// ends: time for the test to fail with its own message and clean up
// before go test kills the binary.
const deadlineMargin = 30 * time.Second

// Deadline returns when a test's waits should give up: deadlineMargin
// before the test binary's deadline (go test -timeout); false without
// one.
func Deadline(t *testing.T) (time.Time, bool) {
	d, ok := t.Deadline()
	if !ok {
		return time.Time{}, false
	}
	return d.Add(-deadlineMargin), true
}

// Context returns a context for a test's requests and waits that ends at
// Deadline (never without one), cancelled when the test ends.
//
// NB: a bound, not a timing: a wait on the server (a page to load, a
// delivery, a request) may take many times its usual time on a loaded
// machine, and a fixed bound of a minute fails the test there; this one
// only turns a hang into the test's own failure message.
func Context(t *testing.T) context.Context {
	var ctx context.Context
	var cancel context.CancelFunc
	if d, ok := Deadline(t); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	t.Cleanup(cancel)
	return ctx
}
