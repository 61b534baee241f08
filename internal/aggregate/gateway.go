package aggregate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// KV is where a gateway keeps its aggregates (Options.KV): the control
// plane's seam (package kv; enginekv on a gateway), so that every
// definition, cursor and group is in the engine and none only in a
// gateway.
type KV interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

var _ KV = (*kv.Local)(nil)

// Feed is a table's changes in one tenant environment with opaque
// positions (Options.Feed): on a gateway, the engine table's DynamoDB
// stream mapped to the logical table (remote.AggregateFeed). Its methods
// are those of webhook.Feed.
type Feed interface {
	// Retain checks that the scope sees table and that its changes can be
	// followed (Validation if not).
	Retain(ctx context.Context, s tenancy.Scope, table, consumer string) error
	// Follow returns up to limit changes after from, in commit order per
	// item key; next is after them, after(i) just after entries[i].
	Follow(ctx context.Context, s tenancy.Scope, table, from string, limit int) (entries []changelog.Entry, next string, caughtUp bool, after func(i int) string, err error)
	// Wait returns when a change after from may have committed.
	Wait(ctx context.Context, s tenancy.Scope, table, from string) error
	// Start returns the position of the changes made at or after t.
	Start(ctx context.Context, s tenancy.Scope, table string, t time.Time) (string, error)
}

// Items reads a table's items for a build (Options.Items: the backend,
// through the resolver, with the worker's scope).
type Items interface {
	Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error)
	DescribeTable(ctx context.Context, s tenancy.Scope, in *wire.DescribeTableInput) (*wire.DescribeTableOutput, error)
}

// maxGroupsPerCommit bounds the groups one commit writes: with the
// progress record they are one engine transaction (100 items at most).
const maxGroupsPerCommit = 99

// buildSlack is how far before a build's scan its feed starts: the
// engine's record times are its own clock's, in whole seconds.
const buildSlack = time.Minute

// trimAfter is how long a cursor may go unread before the engine stream
// (24 hours) may have trimmed changes after it.
const trimAfter = 23 * time.Hour

// gateway runs the aggregates of a fleet of gateways (Options.KV): a
// worker per aggregate on every gateway, of which the one holding the
// aggregate's lease (in its progress record) works.
type gateway struct {
	s  *Service
	o  *Options
	db KV

	mu      sync.Mutex
	workers map[string]*gworker
	retired map[tenancy.TenantID]bool
	closed  bool
	done    chan struct{}
	started bool
}

func newGateway(s *Service) *gateway {
	return &gateway{s: s, o: &s.o, db: s.o.KV, workers: map[string]*gworker{}, retired: map[tenancy.TenantID]bool{}, done: make(chan struct{})}
}

func bgCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func isAbsent(err error) bool { return errors.Is(err, kv.ErrNotFound) }

// genRange returns the range of generation gen's groups.
func genRange(ns []byte, name, gen string) (lo, hi []byte) {
	lo = keyspace.AggregateGroup(ns, name, []byte(gen))
	return lo, prefixEnd(lo)
}

func groupKey(ns []byte, name, gen, group string) []byte {
	return keyspace.AggregateGroup(ns, name, []byte(gen+group))
}

func prefixEnd(p []byte) []byte {
	e := bytes.Clone(p)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] < 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil
}

// newGen returns a fresh generation of groups (16 hex digits).
func newGen() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (g *gateway) definition(ctx context.Context, ns []byte, name string) (*Definition, error) {
	b, err := g.db.Get(ctx, keyspace.AggregateDefinition(ns, name))
	if isAbsent(err) {
		return nil, errNoAggregate
	}
	if err != nil {
		return nil, err
	}
	return unmarshalDefinition(b)
}

func (g *gateway) progress(ctx context.Context, ns []byte, name string) (*progress, []byte, error) {
	b, err := g.db.Get(ctx, keyspace.AggregateProgress(ns, name))
	if isAbsent(err) {
		return nil, nil, errNoAggregate
	}
	if err != nil {
		return nil, nil, err
	}
	p := new(progress)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, nil, fmt.Errorf("aggregate: decode progress: %w", err)
	}
	return p, b, nil
}

func (g *gateway) groups(ctx context.Context, ns []byte, name, gen string) (map[string]*groupState, error) {
	lo, hi := genRange(ns, name, gen)
	out := map[string]*groupState{}
	var ferr error
	err := g.db.Scan(ctx, lo, hi, func(k, v []byte) bool {
		gs, err := unmarshalGroup(v)
		if err != nil {
			ferr = err
			return false
		}
		out[string(k[len(lo):])] = gs
		return true
	})
	if err == nil {
		err = ferr
	}
	return out, err
}

// create stores d (definition, progress and registry entry in one
// transaction) and starts its worker here.
func (g *gateway) create(ctx context.Context, data tenancy.Scope, ns []byte, d *Definition) error {
	// NB: Retain resolves the table for the caller's scope (a table it
	// cannot see is ResourceNotFound) and refuses an engine without
	// Streams.
	if err := g.o.Feed.Retain(ctx, data, d.Table, consumer(d.Name)); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return apierr.New(apierr.ServiceUnavailable, "the server is shutting down")
	}
	t, _ := splitNamespace(ns)
	if g.retired[t] {
		return apierr.New(apierr.AccessDenied, "the tenant is being deleted")
	}
	var b kv.Batch
	b.SetIfAbsent(keyspace.AggregateDefinition(ns, d.Name), d.marshal())
	b.SetIfAbsent(keyspace.AggregateProgress(ns, d.Name), (&progress{State: stateBuilding}).marshal())
	b.Set(keyspace.AggregateRegistry(ns, d.Name), nil)
	if err := g.db.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
		return apierr.New(apierr.Conflict, "aggregate %s already exists", d.Name)
	} else if err != nil {
		return err
	}
	return g.startLocked(ns, d)
}

func (g *gateway) startLocked(ns []byte, d *Definition) error {
	if g.closed || g.workers[workerKey(ns, d.Name)] != nil {
		return nil
	}
	c, err := d.compile()
	if err != nil {
		return err
	}
	t, env := splitNamespace(ns)
	w := &gworker{g: g, ns: ns, tenant: t, env: env, def: d, c: c, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(g.s.ctx)
	w.cancel = cancel
	g.workers[workerKey(ns, d.Name)] = w
	go func() {
		w.run(ctx)
		g.mu.Lock()
		if g.workers[workerKey(ns, d.Name)] == w {
			delete(g.workers, workerKey(ns, d.Name))
		}
		g.mu.Unlock()
	}()
	return nil
}

// start starts the workers of the aggregates in the registry, and looks
// at it again every Rescan for those created through other gateways.
func (g *gateway) start() error {
	if err := g.rescan(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.started {
		g.started = true
		go g.loop()
	}
	return nil
}

func (g *gateway) loop() {
	defer close(g.done)
	t := time.NewTicker(g.o.Rescan)
	defer t.Stop()
	for {
		select {
		case <-g.s.ctx.Done():
			return
		case <-t.C:
			if err := g.rescan(); err != nil {
				g.s.log.Warn("reading the aggregates' registry", "err", err)
			}
		}
	}
}

func (g *gateway) rescan() error {
	ctx, cancel := bgCtx()
	defer cancel()
	lo, hi := keyspace.AggregateRegistryRange()
	type entry struct {
		ns   []byte
		name string
	}
	var es []entry
	if err := g.db.Scan(ctx, lo, hi, func(k, _ []byte) bool {
		if ns, name, ok := keyspace.SplitAggregateRegistry(k); ok {
			es = append(es, entry{bytes.Clone(ns), name})
		}
		return true
	}); err != nil {
		return err
	}
	for _, e := range es {
		t, _ := splitNamespace(e.ns)
		g.mu.Lock()
		skip := g.closed || g.retired[t] || g.workers[workerKey(e.ns, e.name)] != nil
		g.mu.Unlock()
		if skip {
			continue
		}
		d, err := g.definition(ctx, e.ns, e.name)
		if errors.Is(err, errNoAggregate) {
			// Deleted with its tenant: drop the registry entry, unless the
			// aggregate was created again meanwhile.
			var b kv.Batch
			b.Expect(keyspace.AggregateDefinition(e.ns, e.name), nil)
			b.Delete(keyspace.AggregateRegistry(e.ns, e.name))
			if err := g.db.Apply(ctx, &b); err != nil && !errors.Is(err, kv.ErrConflict) {
				g.s.log.Warn("removing an aggregate's registry entry", "aggregate", e.name, "err", err)
			}
			continue
		}
		if err != nil {
			return err
		}
		g.mu.Lock()
		err = g.startLocked(e.ns, d)
		g.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (g *gateway) close() {
	g.mu.Lock()
	g.closed = true
	ws := make([]*gworker, 0, len(g.workers))
	for _, w := range g.workers {
		ws = append(ws, w)
	}
	started := g.started
	g.mu.Unlock()
	for _, w := range ws {
		w.cancel()
		<-w.done
	}
	if started {
		<-g.done
	}
}

func (g *gateway) retire(t tenancy.TenantID) {
	g.mu.Lock()
	g.retired[t] = true
	var ws []*gworker
	for k, w := range g.workers {
		if w.tenant == t {
			w.cancel()
			ws = append(ws, w)
			delete(g.workers, k)
		}
	}
	g.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}

func (g *gateway) unretire(t tenancy.TenantID) {
	g.mu.Lock()
	delete(g.retired, t)
	g.mu.Unlock()
	if err := g.rescan(); err != nil {
		g.s.log.Error("restarting a tenant's aggregates", "tenant", t, "err", err)
	}
}

func (g *gateway) worker(ns []byte, name string) *gworker {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.workers[workerKey(ns, name)]
}

// info reads an aggregate's progress and (with groups) its groups: the
// progress again after the groups, until both are of one commit.
func (g *gateway) info(ctx context.Context, ns []byte, d *Definition, groups bool) (Info, error) {
	var p *progress
	var gs map[string]*groupState
	for attempt := 0; ; attempt++ {
		var raw []byte
		var err error
		if p, raw, err = g.progress(ctx, ns, d.Name); err != nil {
			return Info{}, err
		}
		if !groups {
			break
		}
		if gs, err = g.groups(ctx, ns, d.Name, p.Gen); err != nil {
			return Info{}, err
		}
		// NB: a commit between the two reads moves the groups and the
		// progress together: read until one commit's pair is seen.
		_, again, err := g.progress(ctx, ns, d.Name)
		if err != nil {
			return Info{}, err
		}
		if bytes.Equal(raw, again) || attempt >= 20 {
			break
		}
	}
	in := Info{Definition: *d, State: p.State, Cursor: p.Cursor, Applied: p.Applied, Rebuilds: p.Rebuilds, Scanned: p.Scanned, Error: p.Reason}
	if p.Last != 0 {
		t := time.UnixMilli(p.Last).UTC()
		in.LastChange = &t
	}
	if !p.Rebuilt.IsZero() {
		t := p.Rebuilt
		in.Rebuilt = &t
	}
	now := g.o.Now()
	if w := g.worker(ns, d.Name); w != nil && w.holding() {
		var e string
		in.LagMillis, e = w.status(now)
		if e != "" {
			in.Error = e
		}
		if sc := w.scanned.Load(); in.State == stateBuilding && sc > 0 {
			in.Scanned = sc
		}
	} else if p.Holder != "" && now.Before(p.Expires) {
		in.LagMillis = p.LagMS
	}
	if groups {
		in.Groups = groupsOut(d, gs)
	}
	return in, nil
}

// groupsOut is the groups as Info shows them.
func groupsOut(d *Definition, gs map[string]*groupState) map[string]Group {
	out := map[string]Group{}
	for k, g := range gs {
		o := Group{}
		if d.Count {
			n := g.Count
			o.Count = &n
		}
		for _, a := range d.Sum {
			if o.Sum == nil {
				o.Sum = map[string]string{}
			}
			v := "0"
			if x := g.Sums[a]; x != nil {
				v = x.String()
			}
			o.Sum[a] = v
		}
		out[groupText(k)] = o
	}
	return out
}

func (g *gateway) names(ctx context.Context, ns []byte) ([]string, error) {
	lo := keyspace.AggregateRegistry(ns, "")
	var out []string
	err := g.db.Scan(ctx, lo, prefixEnd(lo), func(k, _ []byte) bool {
		if kns, name, ok := keyspace.SplitAggregateRegistry(k); ok && bytes.Equal(kns, ns) {
			out = append(out, name)
		}
		return true
	})
	return out, err
}

func (g *gateway) list(ctx context.Context, ns []byte) ([]Info, error) {
	names, err := g.names(ctx, ns)
	if err != nil {
		return nil, err
	}
	out := []Info{}
	for _, n := range names {
		d, err := g.definition(ctx, ns, n)
		if errors.Is(err, errNoAggregate) {
			continue
		}
		if err != nil {
			return nil, err
		}
		in, err := g.info(ctx, ns, d, false)
		if errors.Is(err, errNoAggregate) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (g *gateway) show(ctx context.Context, ns []byte, name string) (Info, error) {
	d, err := g.definition(ctx, ns, name)
	if errors.Is(err, errNoAggregate) {
		return Info{}, notFound(name)
	}
	if err != nil {
		return Info{}, err
	}
	in, err := g.info(ctx, ns, d, true)
	if errors.Is(err, errNoAggregate) {
		return Info{}, notFound(name)
	}
	return in, err
}

// remove deletes an aggregate: its definition, progress and registry
// entry in one transaction (a worker of another gateway, whose every
// write is conditioned on the progress, writes nothing more), then its
// groups.
func (g *gateway) remove(ctx context.Context, ns []byte, name string) error {
	if _, err := g.definition(ctx, ns, name); errors.Is(err, errNoAggregate) {
		return notFound(name)
	} else if err != nil {
		return err
	}
	g.mu.Lock()
	w := g.workers[workerKey(ns, name)]
	delete(g.workers, workerKey(ns, name))
	g.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
	var b kv.Batch
	b.Delete(keyspace.AggregateDefinition(ns, name))
	b.Delete(keyspace.AggregateProgress(ns, name))
	b.Delete(keyspace.AggregateRegistry(ns, name))
	if err := g.db.Apply(ctx, &b); err != nil {
		return err
	}
	lo, hi := keyspace.AggregateGroups(ns, name)
	var r kv.Batch
	r.DeleteRange(lo, hi)
	return g.db.Apply(ctx, &r)
}

// rebuild marks the aggregate to be rebuilt: the worker holding it sees
// the mark at its next write (its conditions fail) and rebuilds.
func (g *gateway) rebuild(ctx context.Context, ns []byte, name string) (Info, error) {
	d, err := g.definition(ctx, ns, name)
	if errors.Is(err, errNoAggregate) {
		return Info{}, notFound(name)
	}
	if err != nil {
		return Info{}, err
	}
	for {
		p, raw, err := g.progress(ctx, ns, name)
		if errors.Is(err, errNoAggregate) {
			return Info{}, notFound(name)
		}
		if err != nil {
			return Info{}, err
		}
		p.State, p.Reason = stateBuilding, ""
		var b kv.Batch
		b.SetIfEquals(keyspace.AggregateProgress(ns, name), raw, p.marshal())
		if err := g.db.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
			continue
		} else if err != nil {
			return Info{}, err
		}
		if w := g.worker(ns, name); w != nil {
			w.poke()
		}
		return g.info(ctx, ns, d, false)
	}
}

// lags returns how far behind the aggregates this gateway works are.
func (g *gateway) lags(now time.Time) []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []time.Duration
	for _, w := range g.workers {
		if w.holding() {
			ms, _ := w.status(now)
			out = append(out, time.Duration(ms)*time.Millisecond)
		}
	}
	return out
}

// errLost says the worker's last write found the progress changed: it
// lost the lease, the aggregate was deleted or a rebuild was requested.
var errLost = errors.New("aggregate: the progress changed under the worker")

// gworker works one aggregate on a gateway while it holds the lease.
type gworker struct {
	g      *gateway
	ns     []byte
	tenant tenancy.TenantID
	env    string
	def    *Definition
	c      *compiled
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by run: the progress as last read or written (raw), and the
	// groups of its generation as last committed.
	p     *progress
	raw   []byte
	cache groupCache
	// seen is when the feed was last read at the cursor, as the progress
	// said before this worker took the lease.
	seen time.Time

	scanned atomic.Uint64

	mu          sync.Mutex
	held        bool
	caughtUp    bool
	behindSince time.Time
	lastErr     string
	wake        chan struct{}
}

func (w *gworker) holding() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held
}

func (w *gworker) status(now time.Time) (int64, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.caughtUp || w.behindSince.IsZero() {
		return 0, w.lastErr
	}
	return max(0, now.Sub(w.behindSince).Milliseconds()), w.lastErr
}

func (w *gworker) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.lastErr = ""
	} else {
		w.lastErr = apierr.Message(err)
	}
}

func (w *gworker) poke() {
	w.mu.Lock()
	c := w.wake
	w.mu.Unlock()
	if c != nil {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (w *gworker) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	w.mu.Lock()
	if w.wake == nil {
		w.wake = make(chan struct{}, 1)
	}
	c := w.wake
	w.mu.Unlock()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-c:
	}
}

func (w *gworker) setHeld(b bool) {
	w.mu.Lock()
	w.held = b
	w.mu.Unlock()
}

// run takes the aggregate's lease whenever it is free and works it while
// held, until ctx ends or the aggregate is gone.
func (w *gworker) run(ctx context.Context) {
	defer close(w.done)
	defer w.setHeld(false)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		took, wait, err := w.take(ctx)
		if errors.Is(err, errNoAggregate) {
			return // deleted (or with its tenant)
		}
		if err != nil {
			w.setErr(err)
			w.sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		if !took {
			w.setHeld(false)
			w.sleep(ctx, wait)
			continue
		}
		w.setHeld(true)
		err = w.work(ctx)
		w.cache.reset()
		if ctx.Err() != nil {
			w.release()
			return
		}
		if errors.Is(err, errLost) {
			continue
		}
		if err != nil {
			w.setErr(err)
			w.g.s.log.Warn("aggregate worker failed; retrying", "aggregate", w.def.Name, "err", err)
			w.sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// take reads the progress and takes (or renews) the lease if it is free
// or this gateway's; otherwise it says how long to wait.
func (w *gworker) take(ctx context.Context) (bool, time.Duration, error) {
	g := w.g
	p, raw, err := g.progress(ctx, w.ns, w.def.Name)
	if err != nil {
		return false, 0, err
	}
	now := time.Now()
	l := g.o.Lease
	if p.Holder != "" && p.Holder != g.o.Holder && now.Before(p.Expires) {
		return false, min(p.Expires.Sub(now)+mrand.N(l/8+1), l/3), nil
	}
	w.p, w.raw, w.seen = p, raw, p.Seen
	if err := w.put(ctx, nil, nil); errors.Is(err, errLost) {
		return false, mrand.N(l/8 + 1), nil
	} else if err != nil {
		return false, 0, err
	}
	g.s.log.Info("working an aggregate", "aggregate", w.def.Name, "holder", g.o.Holder)
	return true, 0, nil
}

// release gives the lease up as the gateway stops (another takes over at
// once instead of after the lease).
func (w *gworker) release() {
	if w.p == nil || w.p.Holder != w.g.o.Holder {
		return
	}
	ctx, cancel := bgCtx()
	defer cancel()
	np := *w.p
	np.Holder, np.Expires = "", time.Time{}
	var b kv.Batch
	b.SetIfEquals(keyspace.AggregateProgress(w.ns, w.def.Name), w.raw, np.marshal())
	_ = w.g.db.Apply(ctx, &b)
}

// put writes w.p, renewing the lease, with ops, in one transaction
// conditioned on the progress as w last read or wrote it. errLost: it
// was not.
func (w *gworker) put(ctx context.Context, np *progress, ops []kv.Op) error {
	if np == nil {
		c := *w.p
		np = &c
	}
	now := time.Now()
	np.Holder, np.Expires, np.Seen = w.g.o.Holder, now.Add(w.g.o.Lease), now.UTC()
	raw := np.marshal()
	b := kv.Batch{Ops: ops}
	// NB: the one condition that makes the aggregate exactly once across
	// gateways: the groups move only with the progress this worker read.
	b.SetIfEquals(keyspace.AggregateProgress(w.ns, w.def.Name), w.raw, raw)
	if err := w.g.db.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
		return errLost
	} else if err != nil {
		return err
	}
	w.p, w.raw = np, raw
	return nil
}

// renew renews the lease if a third of it has passed.
func (w *gworker) renew(ctx context.Context) error {
	if time.Until(w.p.Expires) > w.g.o.Lease*2/3 {
		return nil
	}
	return w.put(ctx, nil, nil)
}

// work maintains the aggregate while this gateway holds its lease.
func (w *gworker) work(ctx context.Context) error {
	g := w.g
	sc := g.o.Scope(w.tenant, w.env)
	table := w.def.Table
	if w.p.State == stateReady && !w.seen.IsZero() && g.o.Now().Sub(w.seen) > trimAfter {
		// NB: nobody read the stream at the cursor for longer than the
		// engine keeps changes: some may be gone. Never count around a
		// gap: rebuild, saying why.
		np := *w.p
		np.State, np.Reason = stateBuilding, fmt.Sprintf("the engine stream may have trimmed changes after the cursor (not read since %s); rebuilding", w.seen.UTC().Format(time.RFC3339))
		if err := w.put(ctx, &np, nil); err != nil {
			return err
		}
	}
	if w.p.State == stateBuilding {
		if err := w.build(ctx, sc); err != nil {
			return err
		}
		w.setErr(nil)
	}
	cur := w.p.Cursor
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.renew(ctx); err != nil {
			return err
		}
		if w.p.State == stateBuilding {
			return errLost // a rebuild was requested: start over
		}
		entries, next, caughtUp, after, err := g.o.Feed.Follow(ctx, sc, table, cur, g.o.PageSize)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			w.mu.Lock()
			w.caughtUp = false
			w.behindSince = entries[0].Time
			w.mu.Unlock()
			if next, err = w.apply(ctx, sc, entries, next, after); err != nil {
				return err
			}
			cur = next
			w.setErr(nil)
			continue
		}
		// NB: nothing of this tenant's: the position moves on in memory
		// (passing other tenants' records) and is written with the next
		// commit or renewal; a restart reads those records again.
		cur = next
		if time.Until(w.p.Expires) <= g.o.Lease*2/3 && cur != w.p.Cursor {
			np := *w.p
			np.Cursor, np.LagMS = cur, 0
			if err := w.put(ctx, &np, nil); err != nil {
				return err
			}
		}
		w.setErr(nil)
		if caughtUp {
			w.mu.Lock()
			w.caughtUp = true
			w.mu.Unlock()
			if err := g.o.Feed.Wait(ctx, sc, table, cur); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
}

// apply folds entries into the groups and commits them with the new
// cursor in one transaction — cut so that it writes at most
// maxGroupsPerCommit groups — and returns the cursor it committed.
func (w *gworker) apply(ctx context.Context, sc tenancy.Scope, entries []changelog.Entry, next string, after func(int) string) (string, error) {
	g := w.g
	gen := w.p.Gen
	read := func(k string) (*groupState, error) {
		b, err := g.db.Get(ctx, groupKey(w.ns, w.def.Name, gen, k))
		if isAbsent(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return unmarshalGroup(b)
	}
	f := newFold(w.c, w.tenant.String(), func(k string) (*groupState, error) { return w.cache.load(k, read) })
	np := *w.p
	np.Reason = ""
	cursor := next
	for i := range entries {
		e := &entries[i]
		if n := w.newGroups(f, e); len(f.touched)+n > maxGroupsPerCommit {
			cursor = after(i - 1) // NB: i > 0: one change touches at most 2 groups
			break
		}
		if err := f.apply(e); err != nil {
			return "", err
		}
		np.Applied++
		np.Last = e.Time.UnixMilli()
	}
	np.Cursor = cursor
	np.LagMS = max(0, g.o.Now().Sub(entries[0].Time).Milliseconds())
	var ops []kv.Op
	for _, k := range f.keys() {
		gs := f.touched[k]
		key := groupKey(w.ns, w.def.Name, gen, k)
		if gs.empty() {
			ops = append(ops, kv.Op{Kind: kv.OpDelete, Key: key})
		} else {
			ops = append(ops, kv.Op{Kind: kv.OpSet, Key: key, Value: gs.marshal()})
		}
	}
	if err := w.put(ctx, &np, ops); err != nil {
		w.cache.reset()
		return "", err
	}
	w.cache.committed(f.touched)
	now := g.o.Now()
	for i := range entries {
		g.s.metrics.observe(now.Sub(entries[i].Time))
	}
	if len(w.def.Item) > 0 && len(f.touched) > 0 {
		if err := w.materialize(ctx, sc, f.touched); err != nil {
			w.setErr(err)
		}
	}
	return cursor, nil
}

// newGroups returns how many groups not yet touched by f change e would
// touch.
func (w *gworker) newGroups(f *fold, e *changelog.Entry) int {
	if w.c.ownItem(f.tenant, e.Keys) {
		return 0
	}
	n := 0
	seen := ""
	for _, img := range [2]attr.Item{imageOld(e), imageNew(e)} {
		k, ok, err := w.c.groupOf(f.tenant, img)
		if err != nil || !ok {
			continue
		}
		if _, t := f.touched[k]; !t && k != seen {
			n++
			seen = k
		}
	}
	return n
}

func imageOld(e *changelog.Entry) attr.Item {
	if e.Event == changelog.Insert {
		return nil
	}
	return e.Old
}

func imageNew(e *changelog.Entry) attr.Item {
	if e.Event == changelog.Remove {
		return nil
	}
	return e.New
}

// contribution is what an image adds to the aggregate, as text: its group
// and its summed values ("" for an image that counts nowhere). Two images
// with one contribution change nothing when one replaces the other.
func (c *compiled) contribution(tenant string, img attr.Item) (string, error) {
	k, ok, err := c.groupOf(tenant, img)
	if err != nil || !ok {
		return "", err
	}
	var b strings.Builder
	b.WriteString(k)
	for _, a := range c.def.Sum {
		b.WriteByte(0)
		if v, ok := img[a]; ok && v.Type == attr.N {
			d := DecimalOf(v.N)
			b.WriteString(d.String())
		} else {
			b.WriteByte(1)
		}
	}
	return b.String(), nil
}

// itemID is an item's identity: its key attributes (names sorted) encoded.
func itemID(names []string, it attr.Item) string {
	var b []byte
	for _, n := range names {
		b = append(b, n...)
		b = append(b, 0)
		b = attr.AppendKey(b, it[n])
	}
	return string(b)
}

// build recomputes the groups from the table's items into a new
// generation and commits it with the cursor it is exact at.
//
// NB: the scan is no snapshot, so the build pairs it with the feed by
// contribution: the feed is read from P, a minute before the scan began,
// and a change of an item is folded only from the first one whose old
// image contributes what the scan saw of the item (nothing, for an item
// the scan did not see); the earlier ones are in the scan. Per item the
// changes from P are in commit order, and folding them from any point
// where the item's contribution equals the scanned one sums to its
// contribution at the end — the changes telescope — so which of several
// such points is the scan's does not matter, and the first change after
// the scan read the item is always one. Once the feed is read to its end
// at least Settle after the scan ended, every change the scan may hold
// has been seen, and the rest are folded as they come. DESIGN.md, "On a
// gateway".
func (w *gworker) build(ctx context.Context, sc tenancy.Scope) error {
	g := w.g
	w.cache.reset()
	np := *w.p
	oldGen, dead := np.Gen, np.Next
	np.Next = newGen()
	if err := w.put(ctx, &np, nil); err != nil {
		return err
	}
	if dead != "" {
		// A build that did not finish (its gateway died): its groups
		// are nobody's.
		lo, hi := genRange(w.ns, w.def.Name, dead)
		var b kv.Batch
		b.DeleteRange(lo, hi)
		if err := g.db.Apply(ctx, &b); err != nil {
			return err
		}
	}
	table := w.def.Table
	start, err := g.o.Feed.Start(ctx, sc, table, g.o.Now().Add(-buildSlack))
	if err != nil {
		return err
	}
	desc, err := g.o.Items.DescribeTable(ctx, sc, &wire.DescribeTableInput{TableName: table})
	if err != nil {
		return err
	}
	var names []string
	for _, k := range desc.Table.KeySchema {
		names = append(names, k.AttributeName)
	}
	sort.Strings(names)
	tenant := w.tenant.String()
	f := newFold(w.c, tenant, func(string) (*groupState, error) { return nil, nil })
	scanned := map[string]string{} // item → its contribution, for the items that count
	w.scanned.Store(0)
	var esk wire.Item
	for {
		out, err := g.o.Items.Scan(ctx, sc, &wire.ScanInput{TableName: table, ExclusiveStartKey: esk, ConsistentRead: ptr(true)})
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			w.scanned.Add(1)
			if w.c.ownItem(tenant, project(it, w.def.Item)) {
				continue
			}
			c, err := w.c.contribution(tenant, it)
			if err != nil {
				return err
			}
			if c != "" {
				scanned[itemID(names, it)] = c
			}
			if err := f.change(nil, it); err != nil {
				return err
			}
		}
		if err := w.renew(ctx); err != nil {
			return err
		}
		if esk = out.LastEvaluatedKey; len(esk) == 0 {
			break
		}
	}
	scanEnd := time.Now()
	synced := map[string]bool{}
	cur := start
	applied := uint64(0)
	var last int64
	for {
		entries, next, caughtUp, _, err := g.o.Feed.Follow(ctx, sc, table, cur, 1000)
		if err != nil {
			return err
		}
		for i := range entries {
			e := &entries[i]
			if w.c.ownItem(tenant, e.Keys) {
				continue
			}
			id := itemID(names, e.Keys)
			if !synced[id] {
				c, err := w.c.contribution(tenant, imageOld(e))
				if err != nil {
					return err
				}
				if c != scanned[id] {
					continue // NB: before the scan read the item: the scan holds it
				}
				synced[id] = true
			}
			if err := f.apply(e); err != nil {
				return err
			}
			applied++
			last = e.Time.UnixMilli()
		}
		cur = next
		if err := w.renew(ctx); err != nil {
			return err
		}
		if len(entries) > 0 || !caughtUp {
			continue
		}
		if time.Since(scanEnd) >= g.o.Settle {
			break
		}
		if err := g.o.Feed.Wait(ctx, sc, table, cur); err != nil {
			return err
		}
	}
	// Write the new generation, 99 groups per transaction, each
	// conditioned on the progress; the last with the progress that makes
	// it the aggregate's.
	keys := f.keys()
	var ops []kv.Op
	for _, k := range keys {
		gs := f.touched[k]
		if gs.empty() {
			continue
		}
		ops = append(ops, kv.Op{Kind: kv.OpSet, Key: groupKey(w.ns, w.def.Name, w.p.Next, k), Value: gs.marshal()})
		if len(ops) == maxGroupsPerCommit {
			if err := w.put(ctx, nil, ops); err != nil {
				return err
			}
			ops = nil
		}
	}
	done := *w.p
	done.State, done.Reason, done.Gen, done.Next = stateReady, "", w.p.Next, ""
	done.Cursor, done.Skip = cur, nil
	done.Applied, done.Last, done.LagMS = applied, last, 0
	done.Rebuilt, done.Rebuilds, done.Scanned = g.o.Now().UTC().Truncate(time.Millisecond), w.p.Rebuilds+1, w.scanned.Load()
	if err := w.put(ctx, &done, ops); err != nil {
		return err
	}
	var stale map[string]*groupState
	if oldGen != "" {
		// The previous generation is nobody's now (every writer of it
		// conditions on a progress that named it).
		if len(w.def.Item) > 0 {
			stale, _ = g.groups(ctx, w.ns, w.def.Name, oldGen)
		}
		lo, hi := genRange(w.ns, w.def.Name, oldGen)
		var b kv.Batch
		b.DeleteRange(lo, hi)
		if err := g.db.Apply(ctx, &b); err != nil {
			w.setErr(err)
		}
	}
	for k := range stale {
		if _, ok := f.touched[k]; !ok {
			f.touched[k] = &groupState{} // its item is deleted
		}
	}
	if len(w.def.Item) > 0 {
		if err := w.materialize(ctx, sc, f.touched); err != nil {
			w.setErr(err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// materialize writes the items of groups (an empty group's is deleted)
// through the backend with the worker's scope.
func (w *gworker) materialize(ctx context.Context, sc tenancy.Scope, groups map[string]*groupState) error {
	tables := w.g.o.Tables
	var first error
	for k, gs := range groups {
		var err error
		if gs.empty() {
			_, err = tables.DeleteItem(ctx, sc, &wire.DeleteItemInput{TableName: w.def.Table, Key: w.c.itemKey(w.tenant.String(), k)})
		} else {
			var it attr.Item
			if it, err = w.c.item(w.tenant.String(), k, gs); err == nil {
				_, err = tables.PutItem(ctx, sc, &wire.PutItemInput{TableName: w.def.Table, Item: it})
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}
