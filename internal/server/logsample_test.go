package server

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

func TestLogSampler(t *testing.T) {
	s := logSampler{n: 3}
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if ok, n := s.allow(t0.Add(time.Duration(i) * time.Millisecond)); !ok || n != 0 {
			t.Fatalf("event %d: allow = %v, %d; want true, 0", i, ok, n)
		}
	}
	for i := range 5 {
		if ok, _ := s.allow(t0.Add(500 * time.Millisecond)); ok {
			t.Fatalf("event %d over the burst was allowed", i+3)
		}
	}
	// The next second: allowed again, reporting the 5 suppressed.
	if ok, n := s.allow(t0.Add(time.Second)); !ok || n != 5 {
		t.Fatalf("next second: allow = %v, %d; want true, 5", ok, n)
	}
	if ok, n := s.allow(t0.Add(time.Second)); !ok || n != 0 {
		t.Fatalf("after the report: allow = %v, %d; want true, 0", ok, n)
	}
}

func TestQuietKinds(t *testing.T) {
	for _, k := range []apierr.Kind{apierr.ProvisionedThroughputExceeded, apierr.Throttling, apierr.ConditionalCheckFailed, apierr.TransactionCanceled} {
		if !quietKind(k) {
			t.Errorf("%v is flow control; want Debug", k)
		}
	}
	for _, k := range []apierr.Kind{apierr.Validation, apierr.AccessDenied, apierr.InvalidSignature, apierr.Internal} {
		if quietKind(k) {
			t.Errorf("%v logged at Debug; want Info or Error", k)
		}
	}
}

// TestClientErrorLogFlood: a flood of bad requests writes at most a burst
// of Info lines per second, and the server keeps answering all of them.
func TestClientErrorLogFlood(t *testing.T) {
	logs := &syncBuffer{}
	ts := startServer(t, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	const n = 3 * clientErrorBurst
	start := time.Now()
	for range n {
		status, _, _ := ts.do(t, "POST", "DynamoDB_20120810.GetItem", []byte(`{`), testSecret)
		if status != 400 {
			t.Fatalf("malformed body: status %d, want 400", status)
		}
	}
	// The budget is per calendar second: a run of d seconds touches at
	// most floor(d)+2 of them.
	seconds := int(time.Since(start)/time.Second) + 2
	lines := strings.Count(logs.String(), `"msg":"request"`)
	if lines == 0 || lines > seconds*clientErrorBurst {
		t.Errorf("%d request lines for %d client errors in %d calendar seconds; want 1..%d", lines, n, seconds, seconds*clientErrorBurst)
	}
}
