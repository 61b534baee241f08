package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The Manager's methods take the Scope the guard admitted to the tenant's
// admin routes: the operator, or an admin key of the tenant. An admin key
// sees and changes only its own environment's subscriptions; the operator
// sees every environment's. A subscription of another tenant or
// environment is NotFound, exactly like one that does not exist.

func checkScope(s tenancy.Scope) error {
	if !s.Valid() || s.Tenant().IsZero() {
		return apierr.New(apierr.AccessDenied, "subscriptions belong to a tenant; name one")
	}
	return nil
}

// consumer is the name under which a subscription holds its table's log.
func consumer(id string) string { return "webhook:" + id }

// own returns subscription id if s may see it.
func (m *Manager) own(s tenancy.Scope, id string) (*record, error) {
	r, _, err := m.ownRaw(s, id)
	return r, err
}

// ownRaw is own with the subscription's stored bytes.
func (m *Manager) ownRaw(s tenancy.Scope, id string) (*record, []byte, error) {
	if err := checkScope(s); err != nil {
		return nil, nil, err
	}
	if !validID(id) {
		return nil, nil, errNotFound(id)
	}
	r, raw, err := m.st.getRaw(s.Tenant(), id)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !s.IsOperator() && r.Env != s.Env() {
		return nil, nil, errNotFound(id)
	}
	if err != nil {
		return nil, nil, apierr.Wrap(apierr.Internal, err, "reading the subscription")
	}
	return r, raw, nil
}

// conflictRetries bounds how often a fleet's read-modify-write of a
// subscription is tried again after another gateway's write came between.
const conflictRetries = 8

// view returns the admin API's view of r.
func (m *Manager) view(t tenancy.TenantID, r *record) (View, error) {
	v := View{ID: r.ID, TenantID: t.String(), Env: r.Env, Table: r.Table, URL: r.URL, Filter: r.Filter,
		FilterNames: r.FilterNames, Events: r.Events, BatchSize: r.BatchSize,
		RetryPeriodSeconds: int64(r.RetryPeriod / time.Second), State: r.State, StateReason: r.StateReason,
		Created: r.Created, Updated: r.Updated, Secrets: []SecretInfo{}}
	now := m.o.Now()
	for i := len(r.Secrets) - 1; i >= 0; i-- {
		sc := r.Secrets[i]
		if !sc.Expires.IsZero() && !now.Before(sc.Expires) {
			continue
		}
		si := SecretInfo{ID: sc.ID, Created: sc.Created}
		if !sc.Expires.IsZero() {
			e := sc.Expires
			si.Expires = &e
		}
		v.Secrets = append(v.Secrets, si)
	}
	if len(r.FilterValues) > 0 {
		v.FilterValues = attr.AppendItemJSON(nil, r.FilterValues)
	}
	pos, err := m.st.position(t, r.ID)
	if err != nil {
		return v, apierr.Wrap(apierr.Internal, err, "reading the subscription's cursor")
	}
	v.Cursor = pos.Cursor
	if m.o.Feed == nil {
		v.Cursor = pos.cursor().String()
	}
	if !pos.FailingSince.IsZero() {
		f := pos.FailingSince
		v.FailingSince = &f
	}
	if v.DeadLetters, err = m.st.deadCount(t, r.ID); err != nil {
		return v, apierr.Wrap(apierr.Internal, err, "counting dead letters")
	}
	return v, nil
}

// Create subscribes a table of s's tenant (in.Env, or the caller's own
// environment) to in.URL and returns it with its signing secret, the only
// time the secret is shown. Deliveries start with the changes committed
// after it. Errors: Validation for a bad URL (including one the SSRF
// rules refuse), filter, event kind, batch size or retry period;
// AccessDenied for an admin key naming another environment;
// ResourceNotFound for a table the environment does not see;
// LimitExceeded past MaxPerTenant subscriptions.
func (m *Manager) Create(ctx context.Context, s tenancy.Scope, in CreateInput) (View, error) {
	if err := checkScope(s); err != nil {
		return View{}, err
	}
	env := in.Env
	if env == "" {
		env = s.Env()
		if s.IsOperator() || env == "" {
			env = tenancy.LiveEnv
		}
	}
	if !s.IsOperator() && env != s.Env() {
		return View{}, apierr.New(apierr.AccessDenied, "an admin key of environment %s may subscribe only to tables of its own environment", apierr.Clip(s.Env()))
	}
	if l := len(in.Table); l < 3 || l > 255 {
		return View{}, apierr.Validationf("table must be a table name of 3 to 255 characters")
	}
	if in.URL == "" {
		return View{}, apierr.Validationf("url is required")
	}
	if _, err := CheckURL(ctx, m.o.Resolver, in.URL, m.o.AllowPrivate); err != nil {
		return View{}, err
	}
	var values attr.Item
	if len(in.FilterValues) > 0 && string(in.FilterValues) != "null" {
		var err error
		if values, err = attr.ParseItemJSON(in.FilterValues); err != nil {
			return View{}, err
		}
	}
	if _, err := CompileFilter(in.Filter, in.FilterNames, values, in.Events); err != nil {
		return View{}, err
	}
	events, _ := normalizeEvents(in.Events)
	batch := in.BatchSize
	if batch == 0 {
		batch = DefaultBatchSize
	}
	if batch < 1 || batch > MaxBatchSize {
		return View{}, apierr.Validationf("batch_size must be between 1 and %d", MaxBatchSize)
	}
	retry := time.Duration(in.RetryPeriodSeconds) * time.Second
	if in.RetryPeriodSeconds == 0 {
		retry = DefaultRetryPeriod
	}
	if retry < time.Second || retry > MaxRetryPeriod {
		return View{}, apierr.Validationf("retry_period_seconds must be between 1 and %d", int64(MaxRetryPeriod/time.Second))
	}
	t := s.Tenant()
	// NB: a first look, to refuse before holding the table's log; the
	// limit itself is kept by create's write, conditioned on the count.
	if n, old, err := m.st.count(t); err != nil {
		return View{}, apierr.Wrap(apierr.Internal, err, "counting subscriptions")
	} else if old != nil && n >= int64(m.o.MaxPerTenant) {
		return View{}, errLimitExceeded(m.o.MaxPerTenant)
	}
	id := newID()
	ws := workerScope(t, env)
	if err := m.feed.Retain(ctx, ws, in.Table, consumer(id)); err != nil {
		return View{}, err
	}
	now := m.o.Now()
	start, err := m.feed.Start(ctx, ws, in.Table, now)
	if err != nil && !apierr.Is(err, apierr.TrimmedDataAccess) {
		_ = m.feed.Release(context.WithoutCancel(ctx), ws, in.Table, consumer(id))
		return View{}, err
	}
	plain := newSecret()
	r := &record{ID: id, Env: env, Table: in.Table, URL: in.URL, Filter: in.Filter, FilterNames: in.FilterNames,
		FilterValues: values, Events: events, BatchSize: batch, RetryPeriod: retry, State: Active,
		Secrets: []secret{{ID: secretID(now), Sealed: m.st.seal(t, id, plain), Created: now}}, Created: now, Updated: now}
	for i := 0; ; i++ {
		err = m.st.create(t, r, position{Cursor: start}, m.o.MaxPerTenant)
		if errors.Is(err, kv.ErrConflict) && i < createRetries {
			// Another creation or deletion of the tenant's came between
			// (through this gateway or another): count again.
			time.Sleep(time.Duration(rand.N(10*(i+1))) * time.Millisecond)
			continue
		}
		break
	}
	if err != nil {
		_ = m.feed.Release(context.WithoutCancel(ctx), ws, in.Table, consumer(id))
		if errors.Is(err, errLimit) {
			return View{}, errLimitExceeded(m.o.MaxPerTenant)
		}
		return View{}, apierr.Wrap(apierr.Internal, err, "storing the subscription")
	}
	m.startWorker(t, r)
	v, err := m.view(t, r)
	v.Secret = plain
	return v, err
}

// createRetries bounds how often a creation counts again after another
// one's write came between (creations racing through the gateways of a
// fleet: each conflict means another creation or deletion went through).
const createRetries = 64

// errLimitExceeded is the answer of a creation past the limit. NB: it
// names the limit only, never the tenant's count or subscriptions.
func errLimitExceeded(max int) error {
	return apierr.New(apierr.LimitExceeded, "the tenant has %d subscriptions, the most it may have", max)
}

func secretID(t time.Time) string { return "s" + t.UTC().Format("20060102T150405.000") }

// List returns the subscriptions s may see, oldest first.
func (m *Manager) List(ctx context.Context, s tenancy.Scope) ([]View, error) {
	if err := checkScope(s); err != nil {
		return nil, err
	}
	rs, err := m.st.list(s.Tenant())
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "listing subscriptions")
	}
	out := []View{}
	for _, r := range rs {
		if !s.IsOperator() && r.Env != s.Env() {
			continue
		}
		v, err := m.view(s.Tenant(), r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Get returns subscription id. Errors: NotFound.
func (m *Manager) Get(ctx context.Context, s tenancy.Scope, id string) (View, error) {
	r, err := m.own(s, id)
	if err != nil {
		return View{}, err
	}
	return m.view(s.Tenant(), r)
}

// Pause stops deliveries of subscription id (its cursor stays).
func (m *Manager) Pause(ctx context.Context, s tenancy.Scope, id string) (View, error) {
	return m.setState(s, id, Paused)
}

// Resume restarts a paused or disabled subscription where it stopped.
func (m *Manager) Resume(ctx context.Context, s tenancy.Scope, id string) (View, error) {
	return m.setState(s, id, Active)
}

func (m *Manager) setState(s tenancy.Scope, id string, to State) (View, error) {
	w := m.worker(s.Tenant(), id)
	if w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	var r *record
	for i := 0; ; i++ {
		cur, raw, err := m.ownRaw(s, id)
		if err != nil {
			return View{}, err
		}
		r = cur
		r.State, r.StateReason, r.Updated = to, "", m.o.Now()
		if to == Paused {
			r.StateReason = "paused by " + s.KeyID()
		}
		err = m.st.putIf(s.Tenant(), r, raw, nil)
		if errors.Is(err, kv.ErrConflict) && i < conflictRetries {
			continue // another gateway changed it: read it again
		}
		if err != nil {
			return View{}, apierr.Wrap(apierr.Internal, err, "storing the subscription")
		}
		break
	}
	if w != nil {
		w.poke()
	} else {
		m.startWorker(s.Tenant(), r)
	}
	return m.view(s.Tenant(), r)
}

// Delete removes subscription id, its cursor, attempts and dead letters,
// and releases its hold on the table's log.
func (m *Manager) Delete(ctx context.Context, s tenancy.Scope, id string) error {
	w := m.worker(s.Tenant(), id)
	if w != nil {
		w.mu.Lock()
	}
	r, err := m.own(s, id)
	if err == nil {
		err = m.st.remove(s.Tenant(), id)
		if errors.Is(err, storage.ErrNotFound) {
			err = errNotFound(id) // deleted meanwhile, through another gateway
		} else if err != nil {
			err = apierr.Wrap(apierr.Internal, err, "deleting the subscription")
		}
	}
	if w != nil {
		if err == nil {
			w.gone = true
			w.gen++
		}
		w.mu.Unlock()
		if err == nil {
			m.dropWorker(w)
		}
	}
	if err != nil {
		return err
	}
	if err := m.feed.Release(ctx, workerScope(s.Tenant(), r.Env), r.Table, consumer(id)); err != nil && !apierr.Is(err, apierr.ResourceNotFound) {
		m.log.Warn("releasing a deleted subscription's log", "tenant", s.Tenant(), "subscription", id, "err", err)
	}
	return nil
}

// Replay moves subscription id's cursor to from: an RFC 3339 time (the
// first change committed at or after it), a SequenceNumber of a delivered
// record (that record and the changes after it) or a cursor as show
// prints it (the changes after it). Changes already delivered are
// delivered again. Errors: Validation for anything else,
// TrimmedDataAccess for a point older than the log's retention.
func (m *Manager) Replay(ctx context.Context, s tenancy.Scope, id, from string) (View, error) {
	r, err := m.own(s, id)
	if err != nil {
		return View{}, err
	}
	pos, err := m.st.position(s.Tenant(), id)
	if err != nil {
		return View{}, apierr.Wrap(apierr.Internal, err, "reading the subscription's cursor")
	}
	c, err := m.parseFrom(ctx, s.Tenant(), r, pos, from)
	if err != nil {
		return View{}, err
	}
	if err := m.movePosition(s.Tenant(), id, func(p *position) { p.Cursor, p.FailingSince = c, time.Time{} }); err != nil {
		return View{}, err
	}
	return m.view(s.Tenant(), r)
}

// ParseFrom parses a replay point without a log (for fuzzing and
// validation): it reports which kind from is.
func parseFromKind(from string) (t time.Time, c changelog.Cursor, seq changelog.Position, kind int) {
	if tt, err := time.Parse(time.RFC3339Nano, from); err == nil {
		return tt, c, seq, 1
	}
	if p, ok := changelog.ParseSequenceNumber(from); ok {
		return t, c, p, 2
	}
	if cc, err := changelog.ParseCursor(from); err == nil {
		return t, cc, seq, 3
	}
	return t, c, seq, 0
}

func (m *Manager) parseFrom(ctx context.Context, tenant tenancy.TenantID, r *record, pos position, from string) (string, error) {
	if t, err := time.Parse(time.RFC3339Nano, from); err == nil {
		return m.feed.Start(ctx, workerScope(tenant, r.Env), r.Table, t)
	}
	return m.feed.Seek(ctx, workerScope(tenant, r.Env), r.Table, pos.Cursor, from)
}

// movePosition changes the stored position under the worker's lock, so
// that the worker drops a write it prepared before.
func (m *Manager) movePosition(t tenancy.TenantID, id string, f func(*position)) error {
	w := m.worker(t, id)
	if w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	for i := 0; ; i++ {
		pos, raw, err := m.st.positionRaw(t, id)
		if err != nil {
			return apierr.Wrap(apierr.Internal, err, "reading the subscription's cursor")
		}
		f(&pos)
		var b kv.Batch
		pv, _ := json.Marshal(pos)
		if m.st.fleet {
			// NB: the holder's next write, conditioned on what it read,
			// fails; it reads this position and goes on from it.
			b.SetIfEquals(keyspace.WebhookCursor(t, id), raw, pv)
			if raw == nil {
				// NB: a position is written where none is only while
				// the subscription exists (not after a deletion).
				b.ExpectPresent(keyspace.WebhookSubscription(t, id))
			}
		} else {
			b.Set(keyspace.WebhookCursor(t, id), pv)
		}
		err = m.st.apply(&b)
		if errors.Is(err, kv.ErrConflict) && i < conflictRetries {
			continue
		}
		if err != nil {
			return apierr.Wrap(apierr.Internal, err, "storing the subscription's cursor")
		}
		break
	}
	if w != nil {
		w.gen++
		w.poke()
	}
	return nil
}

// Deliveries returns subscription id's most recent delivery attempts,
// newest first (at most limit, at most 200 are kept).
func (m *Manager) Deliveries(ctx context.Context, s tenancy.Scope, id string, limit int) ([]Attempt, error) {
	if _, err := m.own(s, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > maxAttempts {
		limit = maxAttempts
	}
	out, err := m.st.attempts(s.Tenant(), id, limit)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading deliveries")
	}
	if out == nil {
		out = []Attempt{}
	}
	return out, nil
}

// DeadLetters returns subscription id's dead-letter list, oldest first
// (at most limit).
func (m *Manager) DeadLetters(ctx context.Context, s tenancy.Scope, id string, limit int) ([]DeadLetter, error) {
	if _, err := m.own(s, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	out, _, err := m.st.deadLetters(s.Tenant(), id, limit)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading dead letters")
	}
	if out == nil {
		out = []DeadLetter{}
	}
	return out, nil
}

// RedriveDeadLetters asks subscription id's worker to deliver its dead
// letters again, oldest first, before it goes on with the log: each one
// delivered leaves the list; the first that fails stops the redrive and
// stays.
func (m *Manager) RedriveDeadLetters(ctx context.Context, s tenancy.Scope, id string) (View, error) {
	r, err := m.own(s, id)
	if err != nil {
		return View{}, err
	}
	if err := m.movePosition(s.Tenant(), id, func(p *position) { p.Redrive = true }); err != nil {
		return View{}, err
	}
	return m.view(s.Tenant(), r)
}

// RotateSecret gives subscription id a new signing secret and returns it
// (shown only here). The previous one keeps signing, beside the new one,
// for overlap (0: 24 h), so receivers can switch without losing
// deliveries; a secret rotated out earlier stops at once.
func (m *Manager) RotateSecret(ctx context.Context, s tenancy.Scope, id string, overlap time.Duration) (View, error) {
	if overlap < 0 || overlap > MaxRetryPeriod {
		return View{}, apierr.Validationf("the overlap must be between 0 and %s", MaxRetryPeriod)
	}
	if overlap == 0 {
		overlap = DefaultOverlap
	}
	w := m.worker(s.Tenant(), id)
	if w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
	}
	var r *record
	var plain string
	for i := 0; ; i++ {
		cur, raw, err := m.ownRaw(s, id)
		if err != nil {
			return View{}, err
		}
		r = cur
		now := m.o.Now()
		var keep []secret
		if n := len(r.Secrets); n > 0 {
			cur := r.Secrets[n-1]
			cur.Expires = now.Add(overlap)
			keep = append(keep, cur)
		}
		plain = newSecret()
		keep = append(keep, secret{ID: secretID(now), Sealed: m.st.seal(s.Tenant(), id, plain), Created: now})
		r.Secrets, r.Updated = keep, now
		err = m.st.putIf(s.Tenant(), r, raw, nil)
		if errors.Is(err, kv.ErrConflict) && i < conflictRetries {
			continue
		}
		if err != nil {
			return View{}, apierr.Wrap(apierr.Internal, err, "storing the subscription")
		}
		break
	}
	if w != nil {
		w.poke() // NB: before the answer, so the next delivery signs with the new secret
	}
	v, err := m.view(s.Tenant(), r)
	v.Secret = plain
	return v, err
}
