package quota

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func TestBucketBurstDebtRefill(t *testing.T) {
	b := newBucket(10, 300, t0) // 10 units/s, 300 s of burst
	if got, want := b.tokens, 3000.0; got != want {
		t.Fatalf("new bucket holds %v, want the whole burst %v", got, want)
	}
	// Spend the burst in one go: still admitted while above zero.
	b.take(t0, 2999)
	if !b.allow(t0) {
		t.Fatal("bucket with 1 token left refused a request")
	}
	b.take(t0, 5) // the request cost more than was left: debt
	if got, want := b.tokens, -4.0; got != want {
		t.Fatalf("after overdraft tokens = %v, want %v", got, want)
	}
	if b.allow(t0) {
		t.Fatal("bucket in debt admitted a request")
	}
	// 0.4 s repays exactly the debt; still not above zero.
	if b.allow(t0.Add(400 * time.Millisecond)) {
		t.Fatal("bucket at exactly zero admitted a request")
	}
	if !b.allow(t0.Add(500 * time.Millisecond)) {
		t.Fatal("bucket refilled to 1 token refused a request")
	}
	// Refill caps at the burst size.
	if b.allow(t0.Add(time.Hour)); b.tokens != 3000 {
		t.Fatalf("after an idle hour tokens = %v, want the burst cap 3000", b.tokens)
	}
}

func TestBucketDebtIsBounded(t *testing.T) {
	b := newBucket(1, 10, t0)
	b.take(t0, 1e6)
	if got, want := b.tokens, -10.0; got != want {
		t.Fatalf("debt = %v, want it bounded at -size %v", got, want)
	}
	if !b.allow(t0.Add(10*time.Second + time.Millisecond)) {
		t.Fatal("bounded debt was not repaid within one burst window")
	}
}

func TestBucketClockGoingBackwards(t *testing.T) {
	b := newBucket(10, 1, t0)
	b.take(t0, 10)
	if b.allow(t0.Add(-time.Second)) {
		t.Fatal("an earlier clock reading refilled the bucket")
	}
	if got := b.tokens; got != 0 {
		t.Fatalf("tokens = %v after a backwards clock, want 0", got)
	}
}

func TestBucketReconfigureKeepsTokens(t *testing.T) {
	b := newBucket(100, 300, t0)
	b.take(t0, 29000) // 1000 left
	b.configure(1, 300)
	if got, want := b.tokens, 300.0; got != want {
		t.Fatalf("after shrinking the bucket tokens = %v, want capped at %v", got, want)
	}
	b.configure(1000, 300)
	if got, want := b.tokens, 300.0; got != want {
		t.Fatalf("after growing the bucket tokens = %v, want kept at %v", got, want)
	}
}

func TestBucketUnlimited(t *testing.T) {
	b := newBucket(0, 300, t0)
	b.take(t0, 1e9)
	if !b.allow(t0) {
		t.Fatal("unlimited bucket refused")
	}
}
