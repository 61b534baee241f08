package audit

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Coalescing of denied attempts.
//
// Anyone who knows (or guesses) one of a tenant's access key ids can make
// the server refuse requests in that tenant's name, for instance with bad
// signatures, and every refusal is recorded in the tenant's log. Recorded
// one by one, a flood of them would grow the victim's log as fast as the
// attacker can send and cost the server a synced write per attempt. So
// each tenant's log takes denial records from a token bucket (deniedBurst
// at once, deniedRate a second after that); the attempts over it are
// counted by (actor, action), and summary records with outcome
// OutcomeDeniedCoalesced and the count in Count are written when the
// window ends (deniedWindow after the first attempt that was not recorded
// on its own), when the tenant's log is read, and on Close. Every attempt
// is thus accounted for, and the log of a flooded tenant grows by a bounded
// number of records a second.

const (
	deniedBurst  = 100
	deniedRate   = 20 // records a second, after the burst
	deniedWindow = time.Second
	// deniedPairs bounds the distinct (actor, action) pairs a window
	// counts; attempts of further pairs are counted under variousPair.
	deniedPairs = 16
	// deniedSweepAt is the number of tenants with rate state above which
	// admitDenial drops the states that have nothing pending.
	deniedSweepAt = 4096
)

// OutcomeDeniedCoalesced is the outcome of a summary record: Count denied
// attempts of Actor and Action that were not recorded one by one.
const OutcomeDeniedCoalesced = "denied-coalesced"

// variousPair counts the attempts of pairs beyond deniedPairs.
var variousPair = pair{actor: "(various)", action: "(various)"}

// DeniedAttempts reports how many denied attempts record r accounts for: 1
// for a denial, its Count for a summary, 0 for anything else.
func DeniedAttempts(r Record) int64 {
	switch r.Outcome {
	case OutcomeDenied:
		return 1
	case OutcomeDeniedCoalesced:
		return r.Count
	}
	return 0
}

// denials is the per-tenant rate state of Denied.
type denials struct {
	mu      sync.Mutex
	closed  bool
	tenants map[tenancy.TenantID]*denialWindow
	// flushing counts the summaries taken but not yet appended; Close
	// waits for them.
	flushing sync.WaitGroup
}

type pair struct{ actor, action string }

type pending struct {
	n           int64
	first, last time.Time
	ev          Event // the last attempt's
}

type denialWindow struct {
	tokens float64
	at     time.Time // when tokens was computed
	// the attempts not recorded on their own since the last summary
	pairs map[pair]*pending
	order []pair // pairs in order of first appearance
	timer *time.Timer
}

// admitDenial reports whether a denial of tenant t at now is recorded on
// its own; if not, it is counted and a summary is scheduled.
func (l *Log) admitDenial(t tenancy.TenantID, ev Event, now time.Time) bool {
	d := &l.denials
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return true // after Close, Append fails and logs; nothing to batch
	}
	if d.tenants == nil {
		d.tenants = map[tenancy.TenantID]*denialWindow{}
	}
	w, ok := d.tenants[t]
	if !ok {
		if len(d.tenants) >= deniedSweepAt {
			d.sweep(now)
		}
		w = &denialWindow{tokens: deniedBurst, at: now}
		d.tenants[t] = w
	}
	w.refill(now)
	if w.tokens >= 1 {
		w.tokens--
		return true
	}
	if len(w.pairs) == 0 {
		w.pairs = map[pair]*pending{}
		w.timer = time.AfterFunc(deniedWindow, func() { l.flushDenials(t, w) })
	}
	k := pair{ev.Actor, ev.Action}
	p, ok := w.pairs[k]
	if !ok {
		if len(w.pairs) >= deniedPairs {
			k = variousPair
			p = w.pairs[k]
		}
		if p == nil {
			p = &pending{first: now}
			w.pairs[k] = p
			w.order = append(w.order, k)
		}
	}
	p.n++
	p.last, p.ev = now, ev
	return false
}

func (w *denialWindow) refill(now time.Time) {
	if dt := now.Sub(w.at); dt > 0 {
		w.tokens = min(deniedBurst, w.tokens+dt.Seconds()*deniedRate)
		w.at = now
	}
}

// take removes and returns w's pending counts. d.mu is held.
func (w *denialWindow) take() []summary {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	ss := make([]summary, 0, len(w.order))
	for _, k := range w.order {
		p := w.pairs[k]
		ss = append(ss, summary{k, *p})
	}
	w.pairs, w.order = nil, nil
	return ss
}

type summary struct {
	pair
	pending
}

// flushDenials writes the summaries of w (the timer's), if it is still
// tenant t's window and has anything to report.
func (l *Log) flushDenials(t tenancy.TenantID, w *denialWindow) { l.flushWindow(t, w) }

// flushDenialsOf writes tenant t's pending summaries now (before its log
// is read, so that a reader sees every attempt accounted for).
func (l *Log) flushDenialsOf(t tenancy.TenantID) {
	if l.shared {
		l.takeFleet(context.Background(), t, nil)
		return
	}
	l.flushWindow(t, nil)
}

// flushWindow writes tenant t's pending summaries if its window is want
// (any window if want is nil).
func (l *Log) flushWindow(t tenancy.TenantID, want *denialWindow) {
	d := &l.denials
	d.mu.Lock()
	w := d.tenants[t]
	if w == nil || (want != nil && w != want) || len(w.pairs) == 0 {
		d.mu.Unlock()
		return
	}
	ss := w.take()
	d.flushing.Add(1)
	d.mu.Unlock()
	defer d.flushing.Done()
	l.appendSummaries(t, ss)
}

func (l *Log) appendSummaries(t tenancy.TenantID, ss []summary) {
	for i, ev := range summaryEvents(ss) {
		if _, err := l.append(context.Background(), t, ev); err != nil && !errors.Is(err, ErrRetired) {
			l.log.Error("audit: recording coalesced denials failed", "tenant", t.String(), "count", ss[i].n, "err", err)
		}
	}
}

// summaryEvents sorts ss by first attempt and returns their summary
// records' events, in that order.
func summaryEvents(ss []summary) []Event {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].first.Before(ss[j].first) })
	evs := make([]Event, 0, len(ss))
	for _, s := range ss {
		ev := s.ev
		ev.Actor, ev.Action = s.actor, s.action
		ev.Outcome, ev.Count = OutcomeDeniedCoalesced, s.n
		ev.Reason = "not recorded one by one (over the denial rate) from " +
			s.first.UTC().Format(time.RFC3339Nano) + " to " + s.last.UTC().Format(time.RFC3339Nano) +
			"; the last: " + s.ev.Reason
		if s.pair == variousPair {
			ev.Role, ev.Source = "", ""
		}
		evs = append(evs, ev)
	}
	return evs
}

// sweep drops the rate state of tenants with no pending summary and a full
// bucket. d.mu is held.
func (d *denials) sweep(now time.Time) {
	for t, w := range d.tenants {
		w.refill(now)
		if len(w.pairs) == 0 && w.tokens >= deniedBurst {
			delete(d.tenants, t)
		}
	}
}

// forgetDenials drops tenant t's pending summaries (the tenant was
// deleted).
func (l *Log) forgetDenials(t tenancy.TenantID) {
	if v, ok := l.fleet.LoadAndDelete(t); ok {
		v.(*fleetCounts).stop()
	}
	d := &l.denials
	d.mu.Lock()
	defer d.mu.Unlock()
	if w, ok := d.tenants[t]; ok {
		w.take()
		delete(d.tenants, t)
	}
}

// Close writes the pending summaries of coalesced denials now. Call it
// before the store closes; later denials are recorded one by one (and fail
// with the closed store).
func (l *Log) Close() {
	d := &l.denials
	d.mu.Lock()
	d.closed = true
	all := map[tenancy.TenantID][]summary{}
	for t, w := range d.tenants {
		if len(w.pairs) > 0 {
			all[t] = w.take()
		}
	}
	d.tenants = nil
	d.mu.Unlock()
	d.flushing.Wait() // summaries a timer or a reader took before
	for t, ss := range all {
		l.appendSummaries(t, ss)
	}
	l.closeFleet()
}
