package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// worker delivers one subscription. It is the only writer of the
// subscription's position, attempts and dead letters, except for the
// Manager's replays and deletion, which take mu and bump gen so that a
// write the worker prepared before them is dropped.
type worker struct {
	m      *Manager
	t      tenancy.TenantID
	id     string
	env    string
	table  string
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}

	mu   sync.Mutex
	gen  uint64
	gone bool

	// Owned by run.
	attemptN, deadN uint64
	deadCount       int // entries in the dead-letter list
	failures        int
	filter          *Filter
	filterOf        time.Time // the record's Updated the filter was compiled for
	enc             *encoder
	encFor          string
	batch           batch // the delivery being made, its buffer reused
	// cached is the subscription as last read (at cachedAt); it is read
	// again when dirty (the Manager changed it) or after recheckEvery.
	cached   *record
	cachedAt time.Time
	dirty    atomic.Bool
	// pos is the position as last read or written (guarded by mu), valid
	// while havePos and posGen == gen; posRaw its stored bytes (on a
	// fleet pos may be ahead of them: records filtered out are passed in
	// memory and written with the next write).
	pos     position
	posRaw  []byte
	havePos bool
	posGen  uint64
	// nextRead is when the log may be read next: under load, a read
	// that found less than a full batch waits for the window after it.
	nextRead time.Time
	pace     changelog.Pacer
}

// recheckEvery bounds how long a worker trusts its cached subscription
// (its tenant's deletion is noticed within it).
const recheckEvery = 2 * time.Second

// poke wakes the worker to re-read its subscription and position.
func (w *worker) poke() {
	w.dirty.Store(true)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pollEvery bounds how long an idle worker waits before it re-reads its
// subscription (to notice its tenant's deletion).
const pollEvery = 30 * time.Second

func (w *worker) run() {
	s := workerScope(w.t, w.env)
	st := w.m.st
	w.loadCounters()
	for w.ctx.Err() == nil {
		r := w.cached
		var err error
		if r == nil || w.dirty.Swap(false) || time.Since(w.cachedAt) > recheckEvery {
			r, err = st.get(w.t, w.id)
			w.cached, w.cachedAt = r, time.Now()
		}
		if errors.Is(err, storage.ErrNotFound) {
			// Deleted, or its tenant was: nothing of it is left but
			// perhaps the registry entry.
			_ = st.forget(w.t, w.id)
			w.m.dropWorker(w)
			return
		}
		if err != nil {
			w.m.log.Error("reading a subscription", "tenant", w.t, "subscription", w.id, "err", err)
			w.sleep(w.m.o.BackoffMax)
			continue
		}
		if r.State != Active {
			w.sleep(pollEvery)
			continue
		}
		if f := w.m.o.TenantActive; f != nil && !f(w.ctx, w.t) {
			// NB: a suspended tenant's changes wait in the log, and a
			// deleted tenant's subscription is noticed gone above.
			w.cached = nil
			w.sleep(recheckEvery)
			continue
		}
		w.mu.Lock()
		gen := w.gen
		if !w.havePos || w.posGen != gen {
			w.pos, w.posRaw, err = st.positionRaw(w.t, w.id)
			w.havePos, w.posGen = err == nil, gen
		}
		pos := w.pos
		w.mu.Unlock()
		if err != nil {
			w.m.log.Error("reading a subscription's cursor", "tenant", w.t, "subscription", w.id, "err", err)
			w.sleep(w.m.o.BackoffMax)
			continue
		}
		if w.m.o.Lease > 0 {
			var ok bool
			if pos, ok = w.lease(gen, pos); !ok {
				continue
			}
		}
		if pos.Redrive {
			w.redrive(s, r, gen, pos)
			continue
		}
		w.step(s, r, gen, pos)
	}
	if w.m.o.Lease > 0 {
		w.release()
	}
}

// release ends a fleet worker's lease as it stops (its Manager closes),
// so that another gateway takes the subscription over at once.
func (w *worker) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone || !w.havePos || w.posGen != w.gen || w.pos.Holder != w.m.o.Holder {
		return
	}
	p := w.pos
	p.Expires = time.Now()
	pv, _ := json.Marshal(p)
	var b kv.Batch
	b.SetIfEquals(keyspace.WebhookCursor(w.t, w.id), w.posRaw, pv)
	if err := w.m.st.apply(&b); err != nil && !errors.Is(err, kv.ErrConflict) {
		w.m.log.Warn("releasing a subscription's lease", "tenant", w.t, "subscription", w.id, "err", err)
	}
}

// loadCounters reads the numbers of the last attempt and dead letter and
// the dead letters' count (at the start, and on a fleet whenever the
// worker takes the lease: the previous holder wrote more).
func (w *worker) loadCounters() {
	st := w.m.st
	var err error
	if w.attemptN, err = st.lastN(keyspace.WebhookAttempts(w.t, w.id)); err == nil {
		if w.deadN, err = st.lastN(keyspace.WebhookDeadLetters(w.t, w.id)); err == nil {
			w.deadCount, err = st.countDead(w.t, w.id)
		}
	}
	if err != nil {
		w.m.log.Error("reading a subscription's state", "tenant", w.t, "subscription", w.id, "err", err)
	}
}

// step reads one page of the log after the cursor and delivers what
// passes the filter, once.
func (w *worker) step(s tenancy.Scope, r *record, gen uint64, pos position) {
	if w.filter == nil || !w.filterOf.Equal(r.Updated) {
		f, err := CompileFilter(r.Filter, r.FilterNames, r.FilterValues, r.Events)
		if err != nil {
			w.disable(gen, r, "the filter no longer compiles: "+apierr.Message(err))
			return
		}
		w.filter, w.filterOf = f, r.Updated
	}
	if d := time.Until(w.nextRead); d > 0 && w.sleep(d) {
		return // poked: read the subscription again
	}
	from := pos.Cursor
	readAt := time.Now()
	entries, pageNext, caughtUp, after, err := w.m.feed.Follow(w.ctx, s, r.Table, from, r.BatchSize)
	switch {
	case err == nil:
	case w.ctx.Err() != nil:
		return
	case apierr.Is(err, apierr.TrimmedDataAccess):
		// NB: changes older than the log's retention are gone; go on
		// from the oldest one kept, and say so in the attempts.
		x := st(w).begin(w.t)
		w.attemptN++
		x.attempt(w.id, w.attemptN, Attempt{Time: w.m.o.Now(), Outcome: "skipped", Error: "changes after the cursor were trimmed from the change log before they were delivered; continuing from the oldest retained change"})
		pos.Cursor = ""
		if w.m.o.Feed == nil {
			pos.Cursor = changelog.Cursor{}.String()
		}
		w.commit(gen, x, true, pos)
		return
	case apierr.Is(err, apierr.ResourceNotFound):
		w.disable(gen, r, "the table "+r.Table+" no longer exists")
		return
	default:
		w.m.log.Warn("reading the change log", "tenant", w.t, "subscription", w.id, "err", err)
		w.sleep(w.backoff())
		return
	}
	if w.dirty.Load() {
		// NB: the subscription changed while the page was read (a rotated
		// secret, a new filter; the Manager pokes before it answers): read
		// it again before acting on the page, so that a change committed
		// after that answer is never filtered or signed by the old one.
		return
	}
	if w.enc == nil || w.encFor != r.Table {
		w.enc, w.encFor = w.m.src.encoder(r.Table), r.Table
	}
	// NB: the records are encoded straight into the delivery's body, a
	// buffer the worker reuses (batch.go); what encode(recs) would make
	// of them, byte for byte.
	bt := &w.batch
	bt.reset()
	bt.max = w.m.o.MaxBody
	var first, last string
	next := pageNext
	for i, e := range entries {
		if !w.filter.Match(e.Record) {
			continue
		}
		if !bt.add(w.enc, e) {
			next = after(i - 1)
			break
		}
		if first == "" {
			first = e.SequenceNumber
		}
		last = e.SequenceNumber
	}
	n := bt.len()
	// NB: under load (changelog.Pacer) a read that found less than a
	// full batch (and delivers all of it) makes the next read wait for
	// the window: one delivery carries the window's changes instead of
	// one commit's, and WaitLog, which wakes on any commit of the tenant
	// environment, cannot make the worker read once per commit. At light
	// load the next read starts at once, and adds no lag.
	w.pace.Window = w.m.o.Window
	w.nextRead = w.pace.Next(readAt, len(entries), len(entries) >= r.BatchSize || next != pageNext)
	if n == 0 {
		if next != from {
			pos.Cursor = next
			if w.m.o.Lease > 0 {
				// NB: on a fleet, passing records filtered out is kept in
				// memory and written with the next write (at the latest
				// the lease's renewal): the engine's stream holds every
				// write of the engine table, these included, so writing
				// each would make every poll find one more record.
				w.mu.Lock()
				if w.posGen == gen && w.havePos {
					w.pos.Cursor = next
				}
				w.mu.Unlock()
			} else {
				x := st(w).begin(w.t)
				w.commit(gen, x, false, pos)
			}
		}
		// NB: an empty page waits even when not CaughtUp: that only says
		// a change of the tenant environment (any table) is committing,
		// and WaitLog returns once one has.
		if len(entries) == 0 || caughtUp {
			w.waitLog(s, r.Table, next)
		}
		return
	}
	body := bt.body()
	if d := w.delay(s); d > 0 {
		w.sleep(d)
		return
	}
	status, lat, derr := w.post(s, r, body, n, bt.sender())
	now := w.m.o.Now()
	a := Attempt{Time: now, Status: status, LatencyMS: float64(lat.Microseconds()) / 1000, Records: n, FirstSequence: first, LastSequence: last}
	if derr != nil {
		a.Error = derr.Error()
	}
	x := st(w).begin(w.t)
	w.attemptN++
	switch {
	case status >= 200 && status < 300:
		a.Outcome = "delivered"
		x.attempt(w.id, w.attemptN, a)
		// NB: not synced. A crash that loses this write loses the cursor
		// with it (a crash keeps a prefix of the store's batches) and the
		// batch is delivered again: at least once, receivers deduplicate
		// by eventID. The cursor never passes a record not acknowledged,
		// because this batch is made only after the 2xx.
		w.commit(gen, x, false, position{Cursor: next})
		w.failures = 0
	case status == http.StatusGone:
		a.Outcome = "disabled"
		x.attempt(w.id, w.attemptN, a)
		w.commit(gen, x, true)
		w.disable(gen, r, "the endpoint answered 410 Gone")
	case retryable(status, derr) && (pos.FailingSince.IsZero() || now.Sub(pos.FailingSince) < r.RetryPeriod):
		a.Outcome = "retry"
		x.attempt(w.id, w.attemptN, a)
		if pos.FailingSince.IsZero() {
			pos.FailingSince = now
		}
		w.commit(gen, x, true, pos)
		w.failures++
		w.sleep(w.backoff())
	case w.deadCount >= w.m.o.MaxDeadLetters:
		// NB: a full list does not grow, and nothing is dropped: the
		// subscription stops before the batch until its list is replayed
		// or it is deleted.
		a.Outcome = "disabled"
		x.attempt(w.id, w.attemptN, a)
		w.commit(gen, x, true)
		w.disable(gen, r, fmt.Sprintf("the dead-letter list is full (%d batches): replay it (replay --dead-letters) or delete the subscription, then resume", w.deadCount))
	default:
		// Not retried (a 4xx other than 408, 409, 425 and 429, a redirect) or
		// retried for the whole retry period: the batch goes to the
		// dead-letter list and the cursor moves past it, in one write.
		a.Outcome = "dead-lettered"
		x.attempt(w.id, w.attemptN, a)
		w.deadN++
		x.deadLetter(w.id, DeadLetter{N: w.deadN, Time: now, Status: status, Error: a.Error, Records: bt.records()})
		if w.commit(gen, x, true, position{Cursor: next}) {
			w.deadCount++
			w.failures = 0
		} else {
			// NB: not stored (a lost lease, an engine's error): the batch
			// comes again, not at once. A letter of any size is stored
			// (in parts past deadPartSize).
			w.failures++
			w.sleep(w.backoff())
		}
	}
}

func st(w *worker) *store { return w.m.st }

// retryable reports whether a delivery that answered status (0: none)
// with err is retried: connection errors and timeouts, 5xx, 408, 409,
// 425 and 429.
func retryable(status int, err error) bool {
	switch {
	case status == 0:
		return true
	case status >= 500:
		return true
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return true
	}
	return false
}

// redrive delivers the oldest dead letter again; on success it leaves the
// list, on failure the redrive stops (the letter stays).
func (w *worker) redrive(s tenancy.Scope, r *record, gen uint64, pos position) {
	dls, _, err := st(w).deadLetters(w.t, w.id, 1)
	if err != nil {
		w.m.log.Error("reading dead letters", "tenant", w.t, "subscription", w.id, "err", err)
		w.sleep(w.backoff())
		return
	}
	x := st(w).begin(w.t)
	if len(dls) == 0 {
		pos.Redrive = false
		w.commit(gen, x, true, pos)
		return
	}
	d := dls[0]
	body, err := encode(d.Records)
	if err != nil {
		return
	}
	status, lat, derr := w.post(s, r, body, len(d.Records), &sentBody{})
	a := Attempt{Time: w.m.o.Now(), Status: status, LatencyMS: float64(lat.Microseconds()) / 1000, Records: len(d.Records)}
	if len(d.Records) > 0 {
		a.FirstSequence, a.LastSequence = sequenceOf(d.Records[0]), sequenceOf(d.Records[len(d.Records)-1])
	}
	if derr != nil {
		a.Error = derr.Error()
	}
	w.attemptN++
	if status >= 200 && status < 300 {
		a.Outcome = "redriven"
		x.dropDeadLetter(w.id, d.N)
		x.attempt(w.id, w.attemptN, a)
		if w.commit(gen, x, true) {
			w.deadCount--
		}
		return
	}
	a.Outcome = "redrive-failed"
	x.attempt(w.id, w.attemptN, a)
	pos.Redrive = false
	w.commit(gen, x, true, pos)
}

// commit applies x unless a replay or deletion came since gen, or the
// subscription no longer exists; with a position, it writes it too.
//
// NB: the subscription is looked up under mu, and its tenant's deletion
// retires the worker (Manager.RetireTenant) before deleting the range,
// taking mu: so no write of the worker lands in a deleted tenant's range.
func (w *worker) commit(gen uint64, x *tx, sync bool, pos ...position) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != gen || w.gone {
		return false
	}
	if w.m.o.Lease > 0 {
		// NB: every write of a fleet's worker renews its lease, and
		// carries a position passed in memory (run's lease()).
		if len(pos) == 0 && w.havePos && w.posGen == gen && !bytesEqualPos(w.pos, w.posRaw) {
			pos = append(pos, w.pos)
		}
		for i := range pos {
			pos[i].Holder, pos[i].Expires = w.m.o.Holder, time.Now().Add(w.m.o.Lease)
		}
	}
	for _, p := range pos {
		x.setPosition(w.id, p)
	}
	old := w.posRaw
	raw := x.guard(w.id, old)
	had := w.havePos && w.posGen == gen
	w.havePos = false
	var err error
	if sync {
		err = x.commit()
	} else {
		err = x.commitNoSync()
	}
	if errors.Is(err, kv.ErrConflict) {
		// The subscription is gone (the worker stops), or on a fleet its
		// position changed under it: a replay, or another gateway took
		// the lease. Read both again.
		w.dirty.Store(true)
		return false
	}
	if err != nil {
		w.m.log.Error("writing a subscription's state", "tenant", w.t, "subscription", w.id, "err", err)
		return false
	}
	if x.pos != nil {
		w.pos, w.posRaw, w.havePos, w.posGen = *x.pos, raw, true, gen
	} else if had {
		w.havePos = true
	}
	return true
}

// bytesEqualPos reports whether p is what raw stores.
func bytesEqualPos(p position, raw []byte) bool {
	var q position
	if raw == nil || json.Unmarshal(raw, &q) != nil {
		return false
	}
	return p.Cursor == q.Cursor && p.FailingSince.Equal(q.FailingSince) && p.Redrive == q.Redrive &&
		p.Holder == q.Holder && p.Expires.Equal(q.Expires)
}

// lease makes sure this worker holds its subscription's lease (a fleet's,
// Options.Lease) for a while yet, taking or renewing it with a write of
// pos conditioned on the stored bytes; it returns the position to go on
// from, and false (after waiting) while another gateway holds it.
func (w *worker) lease(gen uint64, pos position) (position, bool) {
	now := time.Now()
	me := w.m.o.Holder
	l := w.m.o.Lease
	if pos.Holder == me && pos.Expires.Sub(now) > l*2/3 {
		return pos, true
	}
	if pos.Holder != "" && pos.Holder != me && now.Before(pos.Expires) {
		// Held by another gateway: look again when it may have expired.
		w.mu.Lock()
		w.havePos = false
		w.mu.Unlock()
		w.sleep(min(pos.Expires.Sub(now)+rand.N(l/8+1), l/3))
		return pos, false
	}
	taking := pos.Holder != me
	x := st(w).begin(w.t)
	if !w.commit(gen, x, true, pos) {
		w.sleep(rand.N(l/8 + 1))
		return pos, false
	}
	if taking {
		w.loadCounters()
		w.m.log.Info("delivering a subscription", "tenant", w.t, "subscription", w.id, "holder", me)
	}
	w.mu.Lock()
	pos = w.pos
	w.mu.Unlock()
	return pos, true
}

// disable stops the subscription with reason (it keeps its cursor; resume
// starts it again).
func (w *worker) disable(gen uint64, r *record, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != gen || w.gone {
		return
	}
	cur, raw, err := st(w).getRaw(w.t, w.id)
	if err != nil || cur.State != Active {
		return
	}
	w.cached = nil
	cur.State, cur.StateReason, cur.Updated = Disabled, reason, w.m.o.Now()
	if err := st(w).putIf(w.t, cur, raw, nil); err != nil {
		w.m.log.Error("disabling a subscription", "tenant", w.t, "subscription", w.id, "err", err)
	}
	w.m.log.Info("subscription disabled", "tenant", w.t, "subscription", w.id, "reason", reason)
}

// post sends one delivery and returns the status (0 without a response)
// and how long it took. It holds one of the tenant's delivery slots while
// the request is in flight. The transport reads body through sent, which
// says when it is done with it.
func (w *worker) post(s tenancy.Scope, r *record, body []byte, n int, sent *sentBody) (int, time.Duration, error) {
	secrets := w.secrets(r)
	slot := w.m.slot(w.t)
	select {
	case slot <- struct{}{}:
	case <-w.ctx.Done():
		return 0, 0, w.ctx.Err()
	}
	defer func() { <-slot }()
	start := time.Now()
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, r.URL, sent.reader(body))
	if err != nil {
		return 0, 0, err
	}
	// NB: what NewRequest sets for a *bytes.Reader body, which this is
	// not: the length (not chunked), and a way to read it again.
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return sent.reader(body), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tenantdb-webhook/1")
	req.Header.Set("Tenantdb-Subscription", r.ID)
	req.Header.Set(SignatureHeader, Sign(w.m.o.Now(), body, secrets...))
	resp, err := w.m.client.Do(req)
	lat := time.Since(start)
	status := 0
	if err == nil {
		status = resp.StatusCode
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		lat = time.Since(start)
	}
	if m := w.m.o.Meter; m != nil {
		m.MeterDelivery(w.ctx, s, n, int64(len(body)), status >= 200 && status < 300, lat)
	}
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap()
		}
		return 0, lat, err
	}
	return status, lat, nil
}

// secrets returns the subscription's signing secrets in force: the
// current one first, then a rotated-out one within its overlap.
func (w *worker) secrets(r *record) []string {
	now := w.m.o.Now()
	var out []string
	for i := len(r.Secrets) - 1; i >= 0; i-- {
		sc := r.Secrets[i]
		if !sc.Expires.IsZero() && !now.Before(sc.Expires) {
			continue
		}
		p, err := st(w).open(w.t, r.ID, sc.Sealed)
		if err != nil {
			w.m.log.Error("opening a signing secret", "tenant", w.t, "subscription", w.id, "err", err)
			continue
		}
		out = append(out, p)
	}
	return out
}

func (w *worker) delay(s tenancy.Scope) time.Duration {
	if m := w.m.o.Meter; m != nil {
		return m.DeliveryDelay(w.ctx, s)
	}
	return 0
}

// backoff returns the delay before the next retry: BackoffMin doubled per
// consecutive failure up to BackoffMax, with jitter (a uniform pick in
// its upper half), so that failing subscriptions do not retry in step.
func (w *worker) backoff() time.Duration {
	d := w.m.o.BackoffMin
	for i := 1; i < w.failures && d < w.m.o.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, w.m.o.BackoffMax)
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or until the worker is poked or stopped; it reports
// whether it was interrupted.
func (w *worker) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-w.wake:
	case <-w.ctx.Done():
	}
	return true
}

// waitLog waits until a change after from may have committed, the worker
// is poked, or pollEvery passed.
func (w *worker) waitLog(s tenancy.Scope, table string, from string) {
	ctx, cancel := context.WithTimeout(w.ctx, pollEvery)
	defer cancel()
	done := make(chan struct{})
	go func() {
		select {
		case <-w.wake:
			cancel()
		case <-done:
		}
	}()
	err := w.m.feed.Wait(ctx, s, table, from)
	close(done)
	if err != nil && ctx.Err() == nil {
		w.sleep(w.backoff())
	}
}

// sequenceOf returns the SequenceNumber of an encoded record.
func sequenceOf(raw json.RawMessage) string {
	var r Record
	_ = json.Unmarshal(raw, &r)
	return r.Dynamodb.SequenceNumber
}
