package backup

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// fakeClock advances only when slept on.
type fakeClock struct {
	t     time.Time
	slept time.Duration
}

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(d)
	c.slept += d
	return nil
}

// TestLimiterPaces: copying B bytes at R bytes/s sleeps B/R in all
// (the copy itself taking no time on the fake clock); a gap in the copy
// is not saved up for a burst; rate 0 never sleeps.
func TestLimiterPaces(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 10<<20)
	c := &fakeClock{t: time.Unix(1e9, 0)}
	l := &limiter{rate: 4 << 20, now: c.now, sleep: c.sleep}
	var out bytes.Buffer
	n, err := copyPaced(context.Background(), l, &out, bytes.NewReader(data), nil)
	if err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("copy: %d bytes, %v", n, err)
	}
	if want := 2500 * time.Millisecond; c.slept != want {
		t.Fatalf("10 MiB at 4 MiB/s slept %v, want %v", c.slept, want)
	}
	c.t = c.t.Add(time.Hour) // idle: no credit for it
	c.slept = 0
	if _, err := copyPaced(context.Background(), l, &out, bytes.NewReader(data[:4<<20]), nil); err != nil {
		t.Fatal(err)
	}
	if want := time.Second; c.slept != want {
		t.Fatalf("4 MiB at 4 MiB/s after an idle hour slept %v, want %v", c.slept, want)
	}
	c.slept = 0
	free := &limiter{now: c.now, sleep: c.sleep}
	if _, err := copyPaced(context.Background(), free, &out, bytes.NewReader(data), nil); err != nil || c.slept != 0 {
		t.Fatalf("rate 0 slept %v (%v)", c.slept, err)
	}
}
