package quota

import "time"

// bucket is a token bucket of capacity units, DynamoDB-style: it refills
// at rate units per second up to size (rate x burst seconds: the burst
// credit of unused capacity), admits a request while it holds more than
// zero, and is debited the request's actual consumption afterwards, which
// may take it below zero (debt, repaid by refill before the next request
// is admitted). Debt is bounded by size so one huge request cannot lock a
// tenant out for longer than the burst window.
//
// A bucket is not safe for concurrent use; tenantState's mutex guards it.
//
// With a lease (a fleet of gateways, fleet.go) the bucket itself is kept
// in the engine, shared by every gateway, and tokens is only this
// gateway's share of it: what it leased and has not spent yet (or its
// debt). Such a bucket does not refill; Admit takes a new lease when it
// is empty.
type bucket struct {
	rate   float64 // units per second; 0 means unlimited
	size   float64 // maximum tokens (burst credit)
	tokens float64
	last   time.Time
	lease  *lease // nil: a local bucket
}

// newBucket returns a full bucket: a tenant that has not used its capacity
// since the server started has its whole burst credit.
func newBucket(rate, burstSeconds float64, now time.Time) bucket {
	b := bucket{last: now}
	b.configure(rate, burstSeconds)
	b.tokens = b.size
	return b
}

// configure changes the rate and burst, keeping the tokens earned so far
// (clamped to the new size).
func (b *bucket) configure(rate, burstSeconds float64) {
	b.rate = rate
	b.size = max(rate*burstSeconds, rate, 1)
	if b.tokens > b.size {
		b.tokens = b.size
	}
	if b.tokens < -b.size {
		b.tokens = -b.size
	}
}

func (b *bucket) refill(now time.Time) {
	if b.lease != nil {
		return // NB: the engine's bucket refills; a lease never does
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.size, b.tokens+b.rate*d.Seconds())
		b.last = now
	}
}

// allow reports whether a request may start at now: the bucket is not
// empty (or the bucket is unlimited).
func (b *bucket) allow(now time.Time) bool {
	if b.rate == 0 {
		return true
	}
	b.refill(now)
	return b.tokens > 0
}

// take debits n units at now.
func (b *bucket) take(now time.Time, n float64) {
	if b.rate == 0 || n <= 0 {
		return
	}
	b.refill(now)
	b.tokens = max(b.tokens-n, -b.size)
}

// full reports whether the bucket holds its whole burst credit (then it is
// indistinguishable from a new one and its state may be dropped). A
// leased bucket is "full" when it owes nothing: dropping it gives up at
// most the unspent rest of its lease, never forgives a debt.
func (b *bucket) full(now time.Time) bool {
	if b.rate == 0 {
		return true
	}
	if b.lease != nil {
		return b.tokens >= 0
	}
	b.refill(now)
	return b.tokens >= b.size
}
