package server

import (
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Request log levels and sampling.
//
// A request that succeeds is logged at Debug. Flow-control answers
// (throttling, shedding, a failed condition, a cancelled or conflicting
// transaction) are part of normal operation and come in floods under load,
// so they are logged at Debug too; /metrics counts them. Other client
// errors (validation, denied access, bad signatures) are logged at Info,
// but at most clientErrorBurst lines per second: a client hammering the
// server with bad requests must not turn the log into the bottleneck.
// Server errors are always logged, at Error.

// clientErrorBurst is the number of Info lines for client errors the
// server writes per second; the rest are counted and reported in the next
// line that is written.
const clientErrorBurst = 50

// quietKind reports whether a client error of kind k is flow control,
// logged at Debug.
func quietKind(k apierr.Kind) bool {
	switch k {
	case apierr.ProvisionedThroughputExceeded, apierr.Throttling, apierr.RequestLimitExceeded,
		apierr.ServiceUnavailable, apierr.ConditionalCheckFailed, apierr.TransactionCanceled,
		apierr.TransactionConflict:
		return true
	}
	return false
}

// logSampler lets through at most n events per second and counts the rest.
type logSampler struct {
	n          int
	mu         sync.Mutex
	second     int64 // the Unix second the window is in
	used       int
	suppressed int64
}

// allow reports whether an event at now may be logged and, if so, how many
// were suppressed since the last one that was.
func (s *logSampler) allow(now time.Time) (ok bool, suppressed int64) {
	sec := now.Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec != s.second {
		s.second, s.used = sec, 0
	}
	if s.used >= s.n {
		s.suppressed++
		return false, 0
	}
	s.used++
	suppressed, s.suppressed = s.suppressed, 0
	return true, suppressed
}
