// Package aggregate maintains aggregates — per-group counts and exact
// decimal sums over a table's items — from the table's change log,
// exactly once, and serves them to the admin API.
//
// An aggregate belongs to one tenant environment (namespace): its
// definition, groups and consumer cursor live inside that namespace's key
// range (keyspace.Aggregate), so the tenant's deletion removes them and no
// other tenant's request can name them. A worker per aggregate follows the
// table's log in the namespace (which on a shared table holds only that
// tenant's changes) and folds each change — the old image leaves its
// group, the new image joins its group — into the groups, writing the
// groups it touched and the new cursor in one atomic batch. See DESIGN.md.
package aggregate

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Log is the change-log consumer API the aggregator reads (the engine's).
type Log interface {
	// RetainLog and ReleaseLog keep table's log with both images while
	// the consumer holds it.
	RetainLog(ctx context.Context, s tenancy.Scope, table, consumer string) error
	ReleaseLog(ctx context.Context, s tenancy.Scope, table, consumer string) error
	// FollowLog returns up to limit changes after from.
	FollowLog(ctx context.Context, s tenancy.Scope, table string, from Cursor, limit int) (FollowPage, error)
	// WaitLog returns when a change after from may have committed.
	WaitLog(ctx context.Context, s tenancy.Scope, table string, from Cursor) error
	// SnapshotLog calls each for every item of table in one consistent
	// snapshot and returns that snapshot's log position: every change at
	// or before at is in it and, of the later ones, exactly those whose
	// cursors are in included.
	SnapshotLog(ctx context.Context, s tenancy.Scope, table string, each func(attr.Item) error) (at Cursor, included []Cursor, err error)
}

// Tables writes materialised aggregate items through the engine.
type Tables interface {
	PutItem(ctx context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error)
	DeleteItem(ctx context.Context, s tenancy.Scope, in *wire.DeleteItemInput) (*wire.DeleteItemOutput, error)
}

// Options configure a Service. DB, Log and Scope are required.
type Options struct {
	// DB is the main store, where aggregates live.
	DB *storage.DB
	// Log is the change log to follow.
	Log Log
	// Tables writes materialised items; nil refuses item templates.
	Tables Tables
	// Scope returns the scope the server's own work for tenant
	// environment (t, env) runs with.
	Scope func(t tenancy.TenantID, env string) tenancy.Scope
	// PageSize is how many changes one batch folds at most (default 500).
	PageSize int
	// Window is the least time between two reads of the log by one
	// worker under load (changelog.Pacer) unless the first read a full
	// page (default 10 ms): under a steady write load a batch folds the
	// window's changes at once instead of one commit's each. It bounds
	// the lag it adds; at light load it adds none.
	Window time.Duration
	// Registerer receives the lag metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Now; nil means time.Now.
	Now func() time.Time
	// Shared lists the tenants of a shared table, for aggregates the
	// operator defines for every tenant; nil refuses those.
	Shared Shared
	// FleetInterval is how often every-tenant aggregates are extended to
	// tenants that started writing to their table (default 1s).
	FleetInterval time.Duration

	// KV, with Feed and Items, makes this a gateway's service
	// (gateway.go): aggregates live in the control plane's store (the
	// engine), follow Feed, are built by reading Items, and are worked by
	// the gateway holding each one's lease. DB and Log are not used.
	KV    KV
	Feed  Feed
	Items Items
	// Holder names this gateway in leases; Lease is how long it holds an
	// aggregate without renewing (default 10s); Rescan how often it looks
	// for aggregates created through other gateways (default Lease/2).
	Holder string
	Lease  time.Duration
	Rescan time.Duration
	// Settle is how long after a build's scan the feed must have been
	// read to its end before the build commits: the bound on a committed
	// change reaching the engine's stream (default 2s).
	Settle time.Duration
}

// Service runs the aggregates' workers and answers the admin API.
type Service struct {
	o       Options
	st      store
	log     *slog.Logger
	metrics *metrics

	mu      sync.Mutex // guards workers, closed; serializes create and delete
	workers map[string]*worker
	// fence is held (read) by every write into a tenant's range and
	// (write) to retire a tenant; retired are the tenants being, or been,
	// deleted.
	fence   sync.RWMutex
	retired map[tenancy.TenantID]bool
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	// fleetDone is closed when the every-tenant reconciler has stopped.
	fleetDone chan struct{}
	started   bool
	// gw serves the aggregates of a gateway (Options.KV), nil embedded.
	gw *gateway
}

// New returns a Service; Start starts the workers of existing aggregates.
func New(o Options) (*Service, error) {
	if o.KV != nil {
		if o.Feed == nil || o.Items == nil || o.Scope == nil || o.Holder == "" {
			return nil, errors.New("aggregate: a gateway's service needs KV, Feed, Items, Scope and Holder")
		}
		if o.Lease <= 0 {
			o.Lease = 10 * time.Second
		}
		if o.Rescan <= 0 {
			o.Rescan = max(o.Lease/2, time.Second)
		}
		if o.Settle <= 0 {
			o.Settle = 2 * time.Second
		}
	} else if o.DB == nil || o.Log == nil || o.Scope == nil {
		return nil, errors.New("aggregate: DB, Log and Scope are required")
	}
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FleetInterval <= 0 {
		o.FleetInterval = time.Second
	}
	s := &Service{o: o, st: store{o.DB}, log: o.Logger.With("component", "aggregate"), workers: map[string]*worker{},
		retired: map[tenancy.TenantID]bool{}}
	s.metrics = newMetrics(o.Registerer, s)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.fleetDone = make(chan struct{})
	if o.KV != nil {
		s.gw = newGateway(s)
	}
	return s, nil
}

// Start starts a worker for every aggregate in the store, and the
// reconciler of every-tenant aggregates.
func (s *Service) Start() error {
	if s.gw != nil {
		return s.gw.start()
	}
	nss, names, err := s.st.registry()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.started = true
		go s.fleetLoop()
	}
	for i := range nss {
		d, err := s.st.definition(nss[i], names[i])
		if errors.Is(err, errNoAggregate) {
			continue // the tenant was deleted; its range went with it
		}
		if err != nil {
			return err
		}
		if err := s.startLocked(nss[i], d); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every worker and waits for them.
func (s *Service) Close() error {
	if s.gw != nil {
		s.cancel()
		s.gw.close()
		return nil
	}
	s.mu.Lock()
	s.closed = true
	ws := make([]*worker, 0, len(s.workers))
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	s.cancel()
	for _, w := range ws {
		<-w.done
	}
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.fleetDone
	}
	return nil
}

func workerKey(ns []byte, name string) string { return string(ns) + "\x00" + name }

// namespace returns the tenant environment the admitted scope acts on:
// its own environment, or live for the operator.
func namespace(sc tenancy.Scope) (t tenancy.TenantID, env string, ns []byte) {
	env = sc.Env()
	if sc.IsOperator() {
		env = tenancy.LiveEnv
	}
	return sc.Tenant(), env, keyspace.Namespace(sc.Tenant(), env)
}

// dataScope returns the scope to reach table data with for an admitted
// caller: its own (so the resolver's policy applies) or, for the
// operator, which has no data-plane access of its own, the server's.
func (s *Service) dataScope(sc tenancy.Scope) tenancy.Scope {
	if sc.IsOperator() {
		t, env, _ := namespace(sc)
		return s.o.Scope(t, env)
	}
	return sc
}

func consumer(name string) string { return "aggregate:" + name }

func notFound(name string) error {
	return apierr.New(apierr.NotFound, "aggregate %s not found", apierr.Clip(name))
}

// Create defines an aggregate for the scope's tenant environment and
// starts maintaining it; it is built from the table's current items
// first (State "building" until then).
func (s *Service) Create(ctx context.Context, sc tenancy.Scope, d Definition) (Info, error) {
	if sc.Tenant().IsZero() {
		return Info{}, apierr.Validationf("an aggregate belongs to a tenant")
	}
	if err := d.Validate(); err != nil {
		return Info{}, err
	}
	if len(d.Item) > 0 && s.o.Tables == nil {
		return Info{}, apierr.Validationf("this server does not materialise aggregates as items")
	}
	d.Created = s.o.Now().UTC().Truncate(time.Millisecond)
	_, _, ns := namespace(sc)
	if s.gw != nil {
		if err := s.gw.create(ctx, s.dataScope(sc), ns, &d); err != nil {
			return Info{}, err
		}
		return s.gw.info(ctx, ns, &d, false)
	}
	if err := s.create(ctx, s.dataScope(sc), ns, &d); err != nil {
		return Info{}, err
	}
	return s.info(ns, &d, false)
}

// create persists d in ns and starts its worker; data is the scope to
// reach the table with.
func (s *Service) create(ctx context.Context, data tenancy.Scope, ns []byte, d *Definition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return apierr.New(apierr.ServiceUnavailable, "the server is shutting down")
	}
	if _, err := s.st.definition(ns, d.Name); err == nil {
		return apierr.New(apierr.Conflict, "aggregate %s already exists", d.Name)
	} else if !errors.Is(err, errNoAggregate) {
		return err
	}
	// NB: RetainLog resolves the table for the caller's scope: a table
	// the caller cannot see is ResourceNotFound, as in DynamoDB.
	if err := s.o.Log.RetainLog(ctx, data, d.Table, consumer(d.Name)); err != nil {
		return err
	}
	t, _ := splitNamespace(ns)
	if err := s.fenced(t, func() error { return s.st.create(ns, d) }); err != nil {
		return err
	}
	return s.startLocked(ns, d)
}

// errRetired is what a write into a retired tenant's range returns.
var errRetired = errors.New("aggregate: the tenant is being deleted")

// fenced runs write, a write into tenant t's range, unless t is retired.
func (s *Service) fenced(t tenancy.TenantID, write func() error) error {
	s.fence.RLock()
	defer s.fence.RUnlock()
	if s.retired[t] {
		return errRetired
	}
	return write()
}

// RetireTenant stops the workers of tenant t, which is being deleted,
// and starts none for it until UnretireTenant: once it returns, nothing
// of the service writes into t's range (groups, progress, definitions)
// and nothing will, so deleting the range leaves nothing behind.
func (s *Service) RetireTenant(t tenancy.TenantID) {
	if s.gw != nil {
		s.gw.retire(t)
		return
	}
	s.fence.Lock()
	s.retired[t] = true
	s.fence.Unlock()
	s.mu.Lock()
	var ws []*worker
	for k, w := range s.workers {
		if w.tenant == t {
			w.cancel()
			ws = append(ws, w)
			delete(s.workers, k)
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}

// UnretireTenant starts tenant t's workers again after RetireTenant (its
// deletion failed, or its id was created again).
func (s *Service) UnretireTenant(t tenancy.TenantID) {
	if s.gw != nil {
		s.gw.unretire(t)
		return
	}
	s.fence.Lock()
	delete(s.retired, t)
	s.fence.Unlock()
	nss, names, err := s.st.registry()
	if err != nil {
		s.log.Error("restarting a tenant's aggregates", "tenant", t, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, ns := range nss {
		if nt, _ := splitNamespace(ns); nt != t || s.closed || s.workers[workerKey(ns, names[i])] != nil {
			continue
		}
		d, err := s.st.definition(ns, names[i])
		if err != nil {
			continue // gone with the range, or unreadable: as Start
		}
		if err := s.startLocked(ns, d); err != nil {
			s.log.Error("restarting an aggregate", "tenant", t, "aggregate", names[i], "err", err)
		}
	}
}

func (s *Service) startLocked(ns []byte, d *Definition) error {
	c, err := d.compile()
	if err != nil {
		return err
	}
	t, env := splitNamespace(ns)
	w := &worker{
		svc: s, ns: ns, tenant: t, env: env, def: d, c: c,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(s.ctx)
	w.cancel = cancel
	s.workers[workerKey(ns, d.Name)] = w
	go w.run(ctx)
	return nil
}

// splitNamespace returns the tenant and environment of a namespace
// prefix (keyspace.Namespace).
func splitNamespace(ns []byte) (tenancy.TenantID, string) {
	var t tenancy.TenantID
	copy(t[:], ns[1:17])
	return t, string(ns[18 : len(ns)-1])
}

// Info is an aggregate as the admin API shows it.
type Info struct {
	Definition
	// State is "building" or "ready".
	State string `json:"state"`
	// Cursor is the log position the groups include.
	Cursor string `json:"cursor"`
	// Applied counts the changes folded in since the last rebuild.
	Applied uint64 `json:"applied"`
	// LagMillis is how far the aggregate is behind the latest committed
	// write (0 when caught up).
	LagMillis int64 `json:"lag_ms"`
	// LastChange is the commit time of the last change folded in.
	LastChange *time.Time `json:"last_change,omitempty"`
	// Rebuilt is when the last rebuild finished; Rebuilds counts them and
	// Scanned is how many items the last (or running) one read.
	Rebuilt  *time.Time `json:"rebuilt,omitempty"`
	Rebuilds uint64     `json:"rebuilds"`
	Scanned  uint64     `json:"scanned"`
	// Error is the worker's last error, if its last attempt failed.
	Error string `json:"error,omitempty"`
	// Groups are the groups by value (show only).
	Groups map[string]Group `json:"groups,omitempty"`
}

// Group is one group's figures.
type Group struct {
	// Count is the number of items in the group (if the aggregate counts).
	Count *int64 `json:"count,omitempty"`
	// Sum maps each summed attribute to its exact decimal sum.
	Sum map[string]string `json:"sum,omitempty"`
}

func (s *Service) info(ns []byte, d *Definition, groups bool) (Info, error) {
	// NB: one snapshot for the progress and the groups: a worker commits
	// both in one batch, and two reads could see the groups after a
	// commit with the progress from before it.
	snap := s.st.db.NewSnapshot()
	defer snap.Close()
	p, err := progressIn(snap, ns, d.Name)
	if err != nil {
		return Info{}, err
	}
	in := Info{Definition: *d, State: p.State, Cursor: p.Cursor, Applied: p.Applied, Rebuilds: p.Rebuilds, Scanned: p.Scanned}
	if p.Last != 0 {
		t := time.UnixMilli(p.Last).UTC()
		in.LastChange = &t
	}
	if !p.Rebuilt.IsZero() {
		t := p.Rebuilt
		in.Rebuilt = &t
	}
	s.mu.Lock()
	w := s.workers[workerKey(ns, d.Name)]
	s.mu.Unlock()
	if w != nil {
		in.LagMillis, in.Error = w.status(s.o.Now())
		if sc := w.scanned.Load(); in.State == stateBuilding && sc > 0 {
			in.Scanned = sc
		}
	}
	if !groups {
		return in, nil
	}
	gs, err := groupsIn(snap, ns, d.Name)
	if err != nil {
		return Info{}, err
	}
	in.Groups = map[string]Group{}
	for k, g := range gs {
		out := Group{}
		if d.Count {
			n := g.Count
			out.Count = &n
		}
		for _, a := range d.Sum {
			if out.Sum == nil {
				out.Sum = map[string]string{}
			}
			v := "0"
			if x := g.Sums[a]; x != nil {
				v = x.String()
			}
			out.Sum[a] = v
		}
		in.Groups[groupText(k)] = out
	}
	return in, nil
}

// List returns the aggregates of the scope's tenant environment, without
// their groups.
func (s *Service) List(ctx context.Context, sc tenancy.Scope) ([]Info, error) {
	_, _, ns := namespace(sc)
	if s.gw != nil {
		return s.gw.list(ctx, ns)
	}
	names, err := s.st.names(ns)
	if err != nil {
		return nil, err
	}
	out := []Info{}
	for _, n := range names {
		d, err := s.st.definition(ns, n)
		if errors.Is(err, errNoAggregate) {
			continue
		}
		if err != nil {
			return nil, err
		}
		in, err := s.info(ns, d, false)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Show returns one aggregate with its groups. Errors: NotFound.
func (s *Service) Show(ctx context.Context, sc tenancy.Scope, name string) (Info, error) {
	_, _, ns := namespace(sc)
	if s.gw != nil {
		return s.gw.show(ctx, ns, name)
	}
	d, err := s.st.definition(ns, name)
	if errors.Is(err, errNoAggregate) {
		return Info{}, notFound(name)
	}
	if err != nil {
		return Info{}, err
	}
	return s.info(ns, d, true)
}

// Delete stops and removes an aggregate (its materialised items stay in
// the table). Errors: NotFound.
func (s *Service) Delete(ctx context.Context, sc tenancy.Scope, name string) error {
	_, _, ns := namespace(sc)
	if s.gw != nil {
		return s.gw.remove(ctx, ns, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.st.definition(ns, name)
	if errors.Is(err, errNoAggregate) {
		return notFound(name)
	}
	if err != nil {
		return err
	}
	if d.Fleet && !sc.IsOperator() {
		return apierr.New(apierr.AccessDenied, "aggregate %s was defined by the operator for every tenant of %s; only the operator deletes it", d.Name, d.Table)
	}
	return s.deleteLocked(ctx, s.dataScope(sc), ns, d)
}

// deleteLocked stops and removes aggregate d of ns. REQUIRES: s.mu held.
func (s *Service) deleteLocked(ctx context.Context, data tenancy.Scope, ns []byte, d *Definition) error {
	name := d.Name
	if w := s.workers[workerKey(ns, name)]; w != nil {
		w.cancel()
		<-w.done
		delete(s.workers, workerKey(ns, name))
	}
	if err := s.st.remove(ns, name); err != nil {
		return err
	}
	if err := s.o.Log.ReleaseLog(ctx, data, d.Table, consumer(name)); err != nil && !apierr.Is(err, apierr.ResourceNotFound) {
		return err
	}
	return nil
}

// Rebuild recomputes an aggregate from the table's current items, online:
// writes go on, and changes after the snapshot are folded in afterwards.
// It returns at once with State "building"; show reports progress.
// Errors: NotFound.
func (s *Service) Rebuild(ctx context.Context, sc tenancy.Scope, name string) (Info, error) {
	_, _, ns := namespace(sc)
	if s.gw != nil {
		return s.gw.rebuild(ctx, ns, name)
	}
	s.mu.Lock()
	d, err := s.st.definition(ns, name)
	if errors.Is(err, errNoAggregate) {
		s.mu.Unlock()
		return Info{}, notFound(name)
	}
	if err != nil {
		s.mu.Unlock()
		return Info{}, err
	}
	w := s.workers[workerKey(ns, name)]
	s.mu.Unlock()
	if w == nil {
		return Info{}, notFound(name)
	}
	if err := w.requestRebuild(ctx); err != nil {
		return Info{}, err
	}
	return s.info(ns, d, false)
}

// Lag returns, for every running aggregate, how far it is behind.
func (s *Service) lags(now time.Time) []time.Duration {
	if s.gw != nil {
		return s.gw.lags(now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]time.Duration, 0, len(s.workers))
	for _, w := range s.workers {
		ms, _ := w.status(now)
		out = append(out, time.Duration(ms)*time.Millisecond)
	}
	return out
}
