package console

import (
	"math"
	"net"
	"sync"
	"time"
)

// Sign-in rate limits: failed sign-ins are counted per client address and
// per access key id in token buckets; while a bucket is empty, sign-ins
// from that address (or with that key id) are refused before the key is
// checked at all, so guessing a secret costs at least the refill period
// per guess after the burst.
const (
	signinAddrBurst  = 10
	signinAddrRefill = 30 * time.Second // one more failure allowed per period
	signinKeyBurst   = 5
	signinKeyRefill  = time.Minute
	// limiterSweepAt is the number of tracked names above which full
	// buckets are dropped.
	limiterSweepAt = 10000
)

// limiter is a set of token buckets of failures, one per name.
type limiter struct {
	burst  float64
	refill time.Duration
	mu     sync.Mutex
	b      map[string]*failBucket
}

type failBucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(burst int, refill time.Duration) *limiter {
	return &limiter{burst: float64(burst), refill: refill, b: map[string]*failBucket{}}
}

// level returns name's bucket brought up to now. REQUIRES: l.mu.
func (l *limiter) level(name string, now time.Time) *failBucket {
	b := l.b[name]
	if b == nil {
		return &failBucket{tokens: l.burst, at: now}
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+float64(d)/float64(l.refill))
		b.at = now
	}
	return b
}

// wait returns how long name must wait before its next attempt (0: it
// may try now).
func (l *limiter) wait(name string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.level(name, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1-b.tokens)*float64(l.refill)).Round(time.Second) + time.Second
}

// fail counts a failed attempt of name.
func (l *limiter) fail(name string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.b) >= limiterSweepAt {
		for n := range l.b {
			if l.level(n, now).tokens >= l.burst {
				delete(l.b, n)
			}
		}
	}
	b := l.level(name, now)
	b.tokens = math.Max(0, b.tokens-1)
	l.b[name] = b
}

// clientAddr is the host of a request's remote address (the connection's
// peer: no forwarding header is trusted).
func clientAddr(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}
