package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Coalescing denials on a fleet (Options.Shared).
//
// Gateways over one engine share each tenant's log, so they share its
// rate of denial records too, and no count of denied attempts may live
// only in one gateway's memory (a reader on another gateway must find
// every attempt accounted for, and a killed gateway must lose none):
//
//   - The token bucket (deniedBurst, deniedRate) is stored in the chain's
//     head (fleetHeadLen) and spent by the append of the denial record
//     itself, which is conditioned on the head: the fleet records at most
//     deniedBurst denials at once and deniedRate a second, not that many
//     per gateway. A gateway decides from the head it holds; a stale head
//     only overstates the tokens (other gateways only spend them), so an
//     attempt it finds over the rate is over it.
//   - An attempt over the rate is counted, before the request is
//     answered, in the gateway's own record AuditDenials(tenant, gateway)
//     (a conditional write of the counts by (actor, action), one engine
//     write per attempt, never contended by another gateway).
//   - Whoever takes the counts — the gateway's timer deniedWindow after
//     its first count, any gateway reading the tenant's log, Close — reads
//     them and appends their summary records in the same atomic batch as
//     the deletion of the counts, conditioned on the counts read: each
//     attempt is summarized exactly once. A gateway whose counts were
//     taken meanwhile sees its conditional write fail and starts afresh.

// fleetCounts is what this gateway last stored of its counts for one
// tenant.
type fleetCounts struct {
	mu     sync.Mutex
	stored []byte // the stored counts (nil: none stored, or taken)
	timer  *time.Timer
	closed bool
}

func (f *fleetCounts) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	f.closed = true
}

// storedCounts is the stored form of a gateway's counts for one tenant.
type storedCounts struct {
	Pairs []storedPair `json:"p"`
}

type storedPair struct {
	Actor  string `json:"a"`
	Action string `json:"x"`
	N      int64  `json:"n"`
	First  int64  `json:"f"` // unix ns
	Last   int64  `json:"l"`
	Ev     Event  `json:"e"` // the last attempt's
}

func (sc *storedCounts) add(ev Event, now time.Time) {
	k := pair{ev.Actor, ev.Action}
	i := -1
	for j, p := range sc.Pairs {
		if p.Actor == k.actor && p.Action == k.action {
			i = j
			break
		}
	}
	if i < 0 && len(sc.Pairs) >= deniedPairs {
		k = variousPair
		for j, p := range sc.Pairs {
			if p.Actor == k.actor && p.Action == k.action {
				i = j
				break
			}
		}
	}
	if i < 0 {
		sc.Pairs = append(sc.Pairs, storedPair{Actor: k.actor, Action: k.action, First: now.UnixNano()})
		i = len(sc.Pairs) - 1
	}
	p := &sc.Pairs[i]
	p.N++
	p.Last, p.Ev = now.UnixNano(), ev
}

func (sc *storedCounts) summaries() []summary {
	ss := make([]summary, 0, len(sc.Pairs))
	for _, p := range sc.Pairs {
		ss = append(ss, summary{pair{p.Actor, p.Action}, pending{n: p.N, first: time.Unix(0, p.First), last: time.Unix(0, p.Last), ev: p.Ev}})
	}
	return ss
}

// denialTokens is the fleet's denial bucket of the head c holds, at now.
func (c *chain) denialTokens(now time.Time) float64 {
	if !c.bucket {
		return deniedBurst
	}
	dt := float64(now.UnixNano()-c.tokAt) / 1e9
	if dt < 0 {
		dt = 0 // another gateway's clock ahead of this one's
	}
	return min(deniedBurst, c.tokens+dt*deniedRate)
}

// deniedFleet is Denied on a fleet: the denial is recorded if the fleet's
// bucket has a token, else counted in this gateway's stored counts.
func (l *Log) deniedFleet(ctx context.Context, t tenancy.TenantID, ev Event) {
	ctx = context.WithoutCancel(ctx) // NB: a denial stays recorded if the client goes
	c := l.chain(t)
	c.mu.Lock()
	now := l.now()
	if _, gone := l.retired.Load(t); gone {
		c.mu.Unlock()
		return
	}
	for range maxAppendRounds {
		if err := l.load(ctx, t, c); err != nil {
			c.mu.Unlock()
			l.log.Error("audit: recording a denial failed", "tenant", t.String(), "key", ev.Actor, "err", err)
			return
		}
		tok := c.denialTokens(now)
		if tok < 1 {
			break
		}
		// NB: the bucket's time never goes back (another gateway's clock
		// may be ahead): a time moved back would refill it twice.
		at := now.UnixNano()
		if c.bucket && c.tokAt > at {
			at = c.tokAt
		}
		_, err := l.appendOnce(ctx, t, c, []Event{ev}, &spend{tokens: tok - 1, at: at}, nil)
		if errors.Is(err, kv.ErrConflict) {
			c.loaded = false
			continue
		}
		c.mu.Unlock()
		if err != nil && !errors.Is(err, ErrRetired) {
			l.log.Error("audit: recording a denial failed", "tenant", t.String(), "key", ev.Actor, "err", err)
		}
		return
	}
	c.mu.Unlock()
	l.countFleet(ctx, t, ev, now)
}

// countFleet adds ev to this gateway's stored counts of tenant t.
func (l *Log) countFleet(ctx context.Context, t tenancy.TenantID, ev Event, now time.Time) {
	v, _ := l.fleet.LoadOrStore(t, &fleetCounts{})
	f := v.(*fleetCounts)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return // the tenant is being deleted, or the log closed
	}
	key := keyspace.AuditDenials(t, l.gw)
	for range 3 {
		var sc storedCounts
		if f.stored != nil {
			if err := json.Unmarshal(f.stored, &sc); err != nil {
				f.stored = nil
				continue
			}
		}
		sc.add(ev, now)
		enc, err := json.Marshal(sc)
		if err != nil {
			break
		}
		var b kv.Batch
		if f.stored == nil {
			b.SetIfAbsent(key, enc)
		} else {
			b.SetIfEquals(key, f.stored, enc)
		}
		if t != keyspace.Platform {
			// NB: no count outlives a deleted tenant's range.
			b.ExpectPresent(keyspace.TenantRecord(t))
		}
		err = l.db.Apply(ctx, &b)
		if err == nil {
			f.stored = enc
			if f.timer == nil {
				f.timer = time.AfterFunc(deniedWindow, func() {
					f.mu.Lock()
					f.timer = nil
					f.mu.Unlock()
					l.takeFleet(context.Background(), t, l.gw)
				})
			}
			return
		}
		if !errors.Is(err, kv.ErrConflict) {
			l.log.Error("audit: counting a denial failed", "tenant", t.String(), "err", err)
			return
		}
		f.stored = nil // taken by a reader meanwhile (or the tenant is gone)
	}
	l.log.Error("audit: counting a denial failed: the stored counts keep changing", "tenant", t.String())
}

// takeFleet appends the summaries of the stored counts of tenant t —
// every gateway's, or gateway only's — each in one batch with the
// deletion of the counts it summarizes.
func (l *Log) takeFleet(ctx context.Context, t tenancy.TenantID, only []byte) {
	lo, hi := keyspace.AuditDenialsRange(t)
	if only != nil {
		lo = keyspace.AuditDenials(t, only)
		hi = append(lo[:len(lo):len(lo)], 0)
	}
	type counts struct{ k, v []byte }
	var all []counts
	err := l.db.Scan(ctx, lo, hi, func(k, v []byte) bool {
		all = append(all, counts{bytes.Clone(k), bytes.Clone(v)})
		return true
	})
	if err != nil {
		l.log.Error("audit: reading coalesced denials failed", "tenant", t.String(), "err", err)
		return
	}
	c := l.chain(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cs := range all {
		for range maxAppendRounds {
			if _, gone := l.retired.Load(t); gone {
				return
			}
			var sc storedCounts
			if err := json.Unmarshal(cs.v, &sc); err != nil {
				l.log.Error("audit: corrupt coalesced denials", "tenant", t.String())
				break
			}
			k, v := cs.k, cs.v
			_, err := l.appendOnce(ctx, t, c, summaryEvents(sc.summaries()), nil, func(b *kv.Batch) { b.DeleteIfEquals(k, v) })
			if errors.Is(err, kv.ErrConflict) {
				// The head moved, or the counts grew or were taken.
				cur, gerr := l.db.Get(ctx, cs.k)
				if errors.Is(gerr, kv.ErrNotFound) {
					break // taken by another reader
				}
				if gerr != nil {
					l.log.Error("audit: reading coalesced denials failed", "tenant", t.String(), "err", gerr)
					break
				}
				cs.v = cur
				c.loaded = false
				continue
			}
			if err != nil && !errors.Is(err, ErrRetired) {
				l.log.Error("audit: recording coalesced denials failed", "tenant", t.String(), "err", err)
			}
			break
		}
	}
}

// closeFleet takes this gateway's stored counts (Close).
func (l *Log) closeFleet() {
	l.fleet.Range(func(k, v any) bool {
		f := v.(*fleetCounts)
		f.stop()
		f.mu.Lock()
		pending := f.stored != nil
		f.mu.Unlock()
		if pending {
			l.takeFleet(context.Background(), k.(tenancy.TenantID), l.gw)
		}
		return true
	})
}
