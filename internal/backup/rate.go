package backup

import (
	"context"
	"io"
	"os"
	"runtime"
	"time"
)

// DefaultMaxRate is the copy rate a backup is limited to when none is
// asked for (CreateOptions.MaxRate, `backup create --max-rate`), in
// bytes per second: BENCHMARKS.md §25 measures what writers keep.
const DefaultMaxRate = 32 << 20

// copyChunk is how much a backup reads, hashes and writes at a time.
const copyChunk = 1 << 20

// syncEvery is how much a backup writes into a file between fsyncs, so
// that the disk gets its writes in small flushes instead of one large
// flush per file at its end, which stalls the server's WAL syncs.
const syncEvery = 16 << 20

// limiter paces a backup's reading to rate bytes per second; a zero
// rate (or a nil limiter) does not limit.
type limiter struct {
	rate  float64
	next  time.Time // when the bytes granted so far are paid for
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

func newLimiter(bytesPerSec int64) *limiter {
	return &limiter{rate: float64(bytesPerSec), now: time.Now, sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait pays for n bytes: it sleeps until the rate allows them. A pause
// in the backup (waiting for the disk) is not saved up for a later
// burst.
func (l *limiter) wait(ctx context.Context, n int) error {
	// NB: between chunks, let the server's goroutines have the core the
	// hashing ran on (2-core machines: the backup would otherwise hold a P
	// for up to a scheduler slice).
	runtime.Gosched()
	if l == nil || l.rate <= 0 {
		return ctx.Err()
	}
	now := l.now()
	if l.next.Before(now) {
		l.next = now
	}
	l.next = l.next.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	if d := l.next.Sub(now); d > 0 {
		return l.sleep(ctx, d)
	}
	return ctx.Err()
}

// copyPaced copies src to dst in chunks paid for to l, and returns the
// bytes copied. If sync is not nil it is dst's file, synced every
// syncEvery bytes.
func copyPaced(ctx context.Context, l *limiter, dst io.Writer, src io.Reader, sync *os.File) (int64, error) {
	buf := make([]byte, copyChunk)
	var n, unsynced int64
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			if _, err := dst.Write(buf[:k]); err != nil {
				return n, err
			}
			n += int64(k)
			if unsynced += int64(k); sync != nil && unsynced >= syncEvery {
				if err := sync.Sync(); err != nil {
					return n, err
				}
				unsynced = 0
			}
			if err := l.wait(ctx, k); err != nil {
				return n, err
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}
