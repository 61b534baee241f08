// Package quota is tenantdb's per-tenant admission control and metering:
// read and write capacity in DynamoDB's units with burst credit, fair
// scheduling of tenants when the server is saturated, load shedding, and
// hourly usage counters for billing. See DESIGN.md.
//
// A Manager decides, before an operation runs, whether it may run (Admit)
// and learns afterwards what it consumed (Ticket.Done). Wrap turns that
// into a decorator of the engine's operations, which is how the server
// uses it.
//
// # Durability of usage
//
// Usage is what tenants are billed from, so what a crash (kill -9 or
// power loss) may lose is stated per kind of request:
//
//   - Exact: a PutItem, UpdateItem, DeleteItem, BatchWriteItem or
//     TransactWriteItems that commits items to the main store. The engine
//     adds its usage counters to the batch that commits its items
//     (StageUsage, wired by the assembly as the engine's Meter) and marks
//     the output's Usage Committed, so Ticket.Done writes nothing more:
//     the usage is durable exactly when the items are. An acknowledged
//     write is always counted after a crash, and an unacknowledged one
//     exactly when its items survived.
//   - Bounded by one WAL sync: every other request of the write class —
//     writes that commit no item (a failed condition, charged one write
//     unit as DynamoDB does; a cancelled or replayed transaction; an
//     invalid request), writes to a silo table (whose items commit in the
//     table's own store, a separate batch) and DDL. Ticket.Done writes its
//     usage before the response as an unsynced batch (storage.ApplyNoSync):
//     it is durable once the next WAL sync completes — that of any later
//     write, or the meter's own, which it starts at once in the background.
//     A crash loses it only if it comes before that sync: those
//     acknowledged while one WAL fsync was in progress (milliseconds).
//   - Bounded by the flush interval: reads, control-plane requests and
//     throttled requests are added up in memory and written in one synced
//     batch every Options.FlushInterval (1 s): a crash loses at most those
//     completed in the last interval (plus the duration of one flush).
//     Making them exact would cost each read a WAL sync.
//   - Token bucket debits are checkpointed every FlushInterval
//     (capstate.go): after a restart a tenant has at most the debits of
//     the last interval back, which for a tenant throttled throughout is
//     its rate x FlushInterval plus one request's overdraw.
//
// On a gateway over a DynamoDB-API engine (Options.Control) every request,
// writes included, is bounded by the flush interval: its counters are
// added up in memory and flushed as the engine's ADD counters, one
// transaction per tenant and hour, shared by every gateway. Writing them
// with each write would double the engine calls per write.
//
// tests/crash checks, against the built binary, that PutItem, UpdateItem,
// BatchWriteItem and TransactWriteItems are metered exactly, and the
// reads' and the buckets' bounds.
package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Options configure a Manager. DB is required; every other zero value
// takes the default documented on its field.
type Options struct {
	// DB stores quota records and usage counters (and the token bucket
	// checkpoints).
	DB *storage.DB
	// Control, if set, stores quota records and usage counters instead of
	// DB: the control plane of gateways over one DynamoDB-API engine
	// (package enginekv), so that every gateway reads the same quotas and
	// adds to the same counters. Usage is then aggregated in memory and
	// flushed every FlushInterval as ADD counters (writes too: see
	// "Durability of usage"); bucket checkpoints stay in DB.
	Control ControlStore
	// MaxStale, if positive, is how long a tenant's quota records are
	// used before they are read again (a quota changed through another
	// gateway applies here within it); 0 reads them once.
	MaxStale time.Duration
	// Settle, if positive, is how long SetQuota waits after its write
	// before it returns (gateways set it to at least every gateway's
	// MaxStale): when a quota change returns, every gateway applies it.
	// 0 never waits.
	Settle time.Duration
	// Alone, if set, reports whether no other gateway may hold a cached
	// copy of a tenant's quota (remote.Backend.Alone): SetQuota then
	// returns without Settle.
	Alone func(ctx context.Context) bool
	// Storage reports per-table storage for usage reports; nil: reports
	// carry no storage figures.
	Storage StorageSource
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the metrics; nil means none are exported.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// Default is the quota of a tenant without a record of its own; zero
	// fields take DefaultReadUnits, DefaultWriteUnits,
	// DefaultBurstSeconds and DefaultWeight.
	Default Limits
	// ControlRate and ControlBurst limit control-plane requests
	// (DescribeTable, CreateTable, ...) per tenant; 0 means
	// DefaultControlRate and DefaultControlBurst.
	ControlRate, ControlBurst float64

	// Disabled turns admission control off: no capacity throttling, no
	// fair queue, no load shedding. Metering and metrics stay on. It is
	// `tenantdb serve --fairness=false`, for benchmarks that show what
	// happens without it.
	Disabled bool
	// MaxInflight is how many reads (and control-plane requests) run at
	// once, server-wide; 0 means DefaultReadInflightPerCPU x GOMAXPROCS.
	// MaxWriteInflight is the same for writes and DDL; 0 means
	// DefaultWriteInflight. Writes spend most of their time waiting for the
	// WAL sync, which they share (group commit), so they get more slots.
	MaxInflight, MaxWriteInflight int
	// TenantInflight caps one tenant's running requests of each class
	// while other tenants are active (made a request in the last second or
	// two) unless its quota says otherwise; alone, a tenant may use every
	// slot. 0 means half of GOMAXPROCS (at least 1) for reads, so that one
	// tenant can never keep every core busy, and a quarter of
	// MaxWriteInflight for writes.
	TenantInflight int
	// TenantQueue bounds the requests one tenant may have waiting; 0 means
	// 1024. TotalQueue bounds all waiting requests; 0 means 8192.
	TenantQueue, TotalQueue int
	// QueueTimeout is the longest a request waits for a slot; 0 means 2s.
	QueueTimeout time.Duration

	// ConnInflight bounds the requests being read, authenticated and
	// decoded at once, server-wide, by the connection gate (AcquireConn;
	// `tenantdb serve --conn-gate`); 0 means DefaultConnInflightPerCPU x
	// GOMAXPROCS.
	// ConnTenantInflight is one tenant's share of it while other tenants
	// are active; 0 means half of GOMAXPROCS (at least 1), as for reads.
	// ConnQueueTimeout is the longest a connection's request waits; 0
	// means DefaultConnQueueTimeout.
	ConnInflight, ConnTenantInflight int
	ConnQueueTimeout                 time.Duration

	// FlushInterval is how often the usage of reads, control-plane and
	// throttled requests is written, and the token buckets checkpointed;
	// 0 means 1s. At most this much of either is lost on kill -9 (writes
	// are not aggregated; see "Durability of usage" above).
	FlushInterval time.Duration
	// MetricTenants caps the tenants with their own metric labels; 0
	// means 100.
	MetricTenants int
	// IdleAfter is how long a tenant's in-memory state outlives its last
	// request once its buckets are full again; 0 means 10 minutes.
	IdleAfter time.Duration

	// Fleet, if set, keeps every tenant's token buckets in one place that
	// all gateways of a fleet share (fleet.go): a tenant's capacity is
	// then enforced across gateways, and this Manager's buckets hold only
	// leases taken from Fleet. nil: the buckets are this server's own.
	Fleet Leaser
	// LeaseSlice is how much of a bucket's rate one lease takes (at least
	// one unit); 0 means DefaultLeaseSlice. Each gateway may overshoot a
	// tenant's fleet-wide capacity by one slice (DESIGN.md).
	LeaseSlice time.Duration
}

// Defaults of the admission gates' sizes (see DESIGN.md and
// bench/results/noisy.md for the measurements behind them).
const (
	DefaultReadInflightPerCPU = 4
	DefaultWriteInflight      = 64
)

// maxLeaseRounds bounds the leases one request may wait for (fleet.go):
// one per bucket it is checked against, plus one for a lease that
// another request spent first.
const maxLeaseRounds = 4

// Admission classes: each has its own gate.
const (
	classRead  = iota // reads and control-plane reads: CPU-bound
	classWrite        // writes and DDL: mostly waiting for the WAL sync
	classCount
)

// classOf returns the admission class of an operation.
func classOf(c tenancy.ActionClass) int {
	if c == tenancy.ClassWrite || c == tenancy.ClassDDL {
		return classWrite
	}
	return classRead
}

// Manager is per-tenant admission control and metering. All methods are
// safe for concurrent use.
type Manager struct {
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	store    store
	storage  StorageSource
	defaults Limits
	gates    [classCount]*gate
	meter    meter
	metrics  *metrics
	leases   *prometheus.CounterVec // leases taken from Options.Fleet
	opFlows  [classCount]*flow      // the operator's flows in the gates
	// conns is the connection gate (AcquireConn).
	conns *gate

	states sync.Map // tenancy.TenantID -> *tenantState
	// saveMu serializes bucket checkpoints with Forget; forgotten holds
	// the tenants being deleted, whose buckets are not checkpointed.
	saveMu    sync.Mutex
	forgotten sync.Map // tenancy.TenantID -> struct{}

	closeOnce sync.Once
	closed    chan struct{}
	done      chan struct{}
}

// New returns a Manager and starts its background flushing. Close it to
// write the last usage.
func New(o Options) (*Manager, error) {
	if o.DB == nil {
		return nil, errNoDB
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	def := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.Default.ReadUnits, DefaultReadUnits)
	def(&o.Default.WriteUnits, DefaultWriteUnits)
	def(&o.Default.BurstSeconds, DefaultBurstSeconds)
	def(&o.Default.Weight, DefaultWeight)
	def(&o.ControlRate, DefaultControlRate)
	def(&o.ControlBurst, DefaultControlBurst)
	if err := o.Default.Validate(""); err != nil {
		return nil, fmt.Errorf("quota: default quota: %w", err)
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = DefaultReadInflightPerCPU * runtime.GOMAXPROCS(0)
	}
	if o.MaxWriteInflight <= 0 {
		o.MaxWriteInflight = DefaultWriteInflight
	}
	if o.TenantQueue <= 0 {
		o.TenantQueue = 1024
	}
	if o.TotalQueue <= 0 {
		o.TotalQueue = 8192
	}
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = 2 * time.Second
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.MetricTenants <= 0 {
		o.MetricTenants = 100
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = 10 * time.Minute
	}
	if o.ConnInflight <= 0 {
		o.ConnInflight = DefaultConnInflightPerCPU * runtime.GOMAXPROCS(0)
	}
	if o.ConnTenantInflight <= 0 {
		o.ConnTenantInflight = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if o.ConnQueueTimeout <= 0 {
		o.ConnQueueTimeout = DefaultConnQueueTimeout
	}
	if o.LeaseSlice <= 0 {
		o.LeaseSlice = DefaultLeaseSlice
	}
	m := &Manager{
		opts:     o,
		log:      o.Logger,
		now:      o.Now,
		store:    store{db: o.DB, ctl: o.Control},
		storage:  o.Storage,
		defaults: o.Default,
		meter:    meter{db: o.DB, ctl: o.Control, acc: map[hourKey]*pending{}, kick: make(chan struct{}, 1)},
		opFlows:  [classCount]*flow{{}, {}},
		conns: newGate(o.ConnInflight, o.ConnInflight, min(o.ConnTenantInflight, o.ConnInflight),
			connQueueLimit, connQueueLimit, o.ConnQueueTimeout),
		closed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	for c, limit := range [classCount]int{o.MaxInflight, o.MaxWriteInflight} {
		shared := o.TenantInflight
		if shared <= 0 && c == classRead {
			shared = max(1, runtime.GOMAXPROCS(0)/2)
		} else if shared <= 0 {
			shared = max(1, limit/4)
		}
		m.gates[c] = newGate(limit, limit, shared, o.TenantQueue, o.TotalQueue, o.QueueTimeout)
	}
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	var err error
	if m.metrics, err = newMetrics(reg, o.MetricTenants, append(m.gates[:], m.conns)); err != nil {
		return nil, fmt.Errorf("quota: registering metrics: %w", err)
	}
	leaseReg := reg
	if o.Fleet == nil {
		leaseReg = prometheus.NewRegistry() // NB: no leases, no series
	}
	if m.leases, err = newLeaseMetrics(leaseReg); err != nil {
		return nil, fmt.Errorf("quota: registering metrics: %w", err)
	}
	m.meter.gone = func(t tenancy.TenantID) bool { _, ok := m.forgotten.Load(t); return ok }
	go m.background()
	return m, nil
}

// Close stops background work and writes pending usage and a checkpoint
// of the token buckets. It does not wait
// for requests still running; their usage is lost if they finish later.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() { close(m.closed) })
	<-m.done
	err := m.meter.flush()
	if cerr := m.saveBuckets(); err == nil {
		err = cerr
	}
	if m.meter.unsynced.Swap(false) {
		if cerr := m.meter.db.SyncWAL(); err == nil {
			err = cerr
		}
	}
	return err
}

// Flush writes pending usage now.
func (m *Manager) Flush() error { return m.meter.flush() }

func (m *Manager) background() {
	defer close(m.done)
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		m.meter.syncLoop(m.closed, func(err error) {
			m.log.Error("quota: usage of writes not synced; retrying", "error", err)
		})
	}()
	defer func() { <-synced }()
	tick := time.NewTicker(m.opts.FlushInterval)
	defer tick.Stop()
	const rebalanceEvery = 10 * time.Second
	lastRebalance := time.Now()
	for {
		select {
		case <-m.closed:
			return
		case <-tick.C:
		}
		if err := m.meter.flush(); err != nil {
			m.log.Error("quota: usage not flushed; retrying", "error", err)
		}
		m.SampleStorage(context.Background())
		if err := m.saveBuckets(); err != nil {
			m.log.Error("quota: token buckets not checkpointed; retrying", "error", err)
		}
		m.meter.nudge() // retries a failed sync of charges
		if time.Since(lastRebalance) >= rebalanceEvery {
			lastRebalance = time.Now()
			m.housekeep()
		}
	}
}

// housekeep rebalances metric labels and drops the state of idle tenants.
func (m *Manager) housekeep() {
	now := m.now()
	var active []*tenantState
	m.states.Range(func(k, v any) bool {
		st := v.(*tenantState)
		if st.recent.Load() > 0 {
			active = append(active, st)
			return true
		}
		st.mu.Lock()
		idle := now.Sub(st.lastUsed) > m.opts.IdleAfter && st.full(now) &&
			m.gates[classRead].idle(st.flows[classRead]) && m.gates[classWrite].idle(st.flows[classWrite]) &&
			m.conns.idle(st.connFlow)
		st.mu.Unlock()
		if idle {
			m.states.Delete(k)
			m.metrics.forget(st)
		}
		return true
	})
	m.metrics.rebalance(active)
}

// tenantState is one tenant's capacity and quota records, in memory.
type tenantState struct {
	tenant   tenancy.TenantID
	flows    [classCount]*flow // in the gates; guarded by the gates' mutexes
	connFlow *flow             // in the connection gate

	mu        sync.Mutex
	loaded    bool
	record    *Limits           // stored tenant-wide record, nil if none
	recordsAt time.Time         // when record and tables were read (Options.MaxStale)
	tables    map[string]Limits // stored per-table records
	eff       Limits            // effective tenant-wide limits
	read      bucket
	write     bucket
	control   bucket
	tread     map[string]*bucket // tables with a read limit
	twrite    map[string]*bucket // tables with a write limit
	lastUsed  time.Time
	// debits counts the debits of the buckets (and changes of their
	// quotas); savedGen is its value at the last checkpoint, and saved
	// says the store holds one (capstate.go).
	debits, savedGen uint64
	saved            bool

	metrics atomic.Pointer[tenantMetrics]
	recent  atomic.Int64 // requests since the last metrics rebalance
}

// state returns t's state, loading its quota records on first use.
//
// NB: housekeep may drop a state that a request still holds (only once
// its buckets are full and its flow idle, so nothing is lost but the
// debit of a request racing with the drop).
func (m *Manager) state(t tenancy.TenantID) (*tenantState, error) {
	v, ok := m.states.Load(t)
	if !ok {
		v, _ = m.states.LoadOrStore(t, &tenantState{tenant: t, flows: [classCount]*flow{{tenant: t}, {tenant: t}}, connFlow: &flow{tenant: t}})
	}
	st := v.(*tenantState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.loaded && m.opts.MaxStale > 0 && time.Since(st.recordsAt) >= m.opts.MaxStale {
		// Another gateway may have changed the quota: read it again (NB:
		// its age counts from the read's start; SetSettle relies on it).
		start := time.Now()
		rec, tables, err := m.store.load(t)
		if err != nil {
			return nil, err
		}
		st.record, st.tables, st.recordsAt = rec, tables, start
		m.applyLocked(st, m.now(), false)
	}
	if !st.loaded {
		start := time.Now()
		rec, tables, err := m.store.load(t)
		if err != nil {
			return nil, err
		}
		st.recordsAt = start
		now := m.now()
		st.read = newBucket(0, 0, now)
		st.write = newBucket(0, 0, now)
		st.control = bucket{last: now}
		st.control.configure(m.opts.ControlRate, m.opts.ControlBurst/m.opts.ControlRate)
		st.control.tokens = st.control.size
		st.record, st.tables = rec, tables
		m.attach(st, &st.control, "control")
		m.applyLocked(st, now, true)
		if err := m.restoreBucketsLocked(st, now); err != nil {
			return nil, err
		}
		st.loaded = true
	}
	return st, nil
}

// applyLocked configures st's buckets from its records. REQUIRES: st.mu.
func (m *Manager) applyLocked(st *tenantState, now time.Time, fill bool) {
	eff := m.defaults
	if r := st.record; r != nil {
		inherit(&eff, *r)
	}
	st.eff = eff
	if !fill {
		// NB: a checkpoint taken before the change must be rewritten:
		// restored, it would be refilled at the new rate since it was
		// taken (capstate.go), less than the buckets hold if the rate
		// was lowered, or apply to a table bucket removed since.
		st.debits++
	}
	cfg := func(b *bucket, rate float64, name string) {
		b.refill(now)
		b.configure(rate, eff.BurstSeconds)
		if fill {
			b.tokens = b.size
		}
		m.attach(st, b, name)
	}
	cfg(&st.read, eff.ReadUnits, "read")
	cfg(&st.write, eff.WriteUnits, "write")
	tread, twrite := map[string]*bucket{}, map[string]*bucket{}
	for name, l := range st.tables {
		burst := l.BurstSeconds
		if burst == 0 {
			burst = eff.BurstSeconds
		}
		for _, x := range []struct {
			rate     float64
			old, new map[string]*bucket
			kind     string
		}{{l.ReadUnits, st.tread, tread, "table-read/"}, {l.WriteUnits, st.twrite, twrite, "table-write/"}} {
			if x.rate == 0 {
				continue
			}
			b := x.old[name]
			if b == nil {
				nb := newBucket(x.rate, burst, now)
				b = &nb
				m.attach(st, b, x.kind+name)
			} else {
				b.refill(now)
				b.configure(x.rate, burst)
			}
			x.new[name] = b
		}
	}
	st.tread, st.twrite = nil, nil
	if len(tread) > 0 {
		st.tread = tread
	}
	if len(twrite) > 0 {
		st.twrite = twrite
	}
}

// inherit overwrites the fields of dst that src sets.
func inherit(dst *Limits, src Limits) {
	if src.ReadUnits != 0 {
		dst.ReadUnits = src.ReadUnits
	}
	if src.WriteUnits != 0 {
		dst.WriteUnits = src.WriteUnits
	}
	if src.BurstSeconds != 0 {
		dst.BurstSeconds = src.BurstSeconds
	}
	if src.Weight != 0 {
		dst.Weight = src.Weight
	}
	if src.MaxInflight != 0 {
		dst.MaxInflight = src.MaxInflight
	}
}

// full reports whether st is indistinguishable from a fresh state.
// REQUIRES: st.mu.
func (st *tenantState) full(now time.Time) bool {
	if !st.read.full(now) || !st.write.full(now) || !st.control.full(now) {
		return false
	}
	for _, bs := range []map[string]*bucket{st.tread, st.twrite} {
		for _, b := range bs {
			if !b.full(now) {
				return false
			}
		}
	}
	return true
}

// allow checks st's buckets for op, of class c (op.ClassOf(in)), on the
// tables of its input in and returns the throttle reason, or -1. With
// the reason it returns the leased bucket that is empty but may be
// renewed now, if that is what refuses the request (renew, then ask
// again). REQUIRES: st.mu.
func (st *tenantState) allow(op *dynamo.Op, c tenancy.ActionClass, in any, now time.Time) (int, *bucket) {
	// renewable reports the leased bucket b that refuses a request, if
	// the engine did not refuse it a lease until later.
	renewable := func(b *bucket) *bucket {
		if b.lease != nil && !now.Before(b.lease.retryAt) {
			return b
		}
		return nil
	}
	switch c {
	case tenancy.ClassRead, tenancy.ClassWrite:
		b, tb := &st.read, st.tread
		if c == tenancy.ClassWrite {
			b, tb = &st.write, st.twrite
		}
		if !b.allow(now) {
			return reasonCapacity, renewable(b)
		}
		if tb != nil {
			for _, t := range op.Tables(in) {
				if tbk := tb[t]; tbk != nil && !tbk.allow(now) {
					return reasonCapacity, renewable(tbk)
				}
			}
		}
	default:
		if !st.control.allow(now) {
			return reasonControl, renewable(&st.control)
		}
		st.control.take(now, 1)
		st.debits++
	}
	return -1, nil
}

// debit charges u to st. REQUIRES: st.mu.
func (st *tenantState) debit(u wire.Usage, now time.Time) {
	st.debits++
	st.read.take(now, u.ReadUnits)
	st.write.take(now, u.WriteUnits)
	if st.tread == nil && st.twrite == nil {
		return
	}
	u.EachTable(func(table string, read, write float64) {
		if b := st.tread[table]; b != nil && read != 0 {
			b.take(now, read)
		}
		if b := st.twrite[table]; b != nil && write != 0 {
			b.take(now, write)
		}
	})
}

// Ticket is an admitted request. Its Done must be called exactly once.
type Ticket struct {
	m     *Manager
	st    *tenantState // nil for the operator
	gate  *gate        // nil when admission control is off
	flow  *flow
	op    string
	start time.Time
	// write: the operation is of the write class (writes and DDL), whose
	// usage, unless the engine committed it with the items
	// (Usage.Committed), is charged to the store before Done returns
	// (meter.charge).
	write bool
}

// StageUsage adds to b the usage u of one request of operation op by s's
// tenant, as Ticket.Done would record it. The engine calls it with the
// batch that commits the request's items, and then marks u Committed so
// that Done does not write it again: the usage is durable exactly when
// the items are. The operator's requests are not metered.
func (m *Manager) StageUsage(b *storage.Batch, s tenancy.Scope, op string, u wire.Usage) {
	if t := s.Tenant(); !t.IsZero() {
		m.meter.stage(b, t, m.now(), op, u)
	}
}

// The client-visible errors of admission control.
var (
	// NB: the limit is the quota the operator sets (tenantdb quota set),
	// not the table's ProvisionedThroughput: the message must not send a
	// tenant to UpdateTable, which changes nothing here.
	errCapacity = apierr.New(apierr.ProvisionedThroughputExceeded,
		"The tenant's capacity quota was exceeded: its read or write units per second (for the tenant, or for this table) are a quota the platform operator sets with `tenantdb quota set`, not the table's provisioned throughput, so UpdateTable does not raise it. Retry with backoff, or ask the operator to raise the quota.")
	errControl = apierr.New(apierr.Throttling, "Rate of requests exceeds the allowed throughput.")
)

func shedError(reason int, cause error) error {
	switch reason {
	case reasonQueueFull:
		return apierr.Wrap(apierr.Throttling, cause, "Too many requests of this tenant are waiting for the server; reduce concurrency or retry with backoff.")
	case reasonQueueTimeout:
		return apierr.Wrap(apierr.Throttling, cause, "The request waited too long for the server's capacity; retry with backoff.")
	default:
		return apierr.Wrap(apierr.ServiceUnavailable, cause, "The server is overloaded; retry with backoff.")
	}
}

// Admit decides whether op, admitted by the guard as s, with the decoded
// input in may run now. It returns at once with
// ProvisionedThroughputExceeded when the tenant's (or one of the tables')
// read or write capacity is used up, and with Throttling when its
// control-plane rate is; it waits in the fair queue while the server is
// saturated, and returns Throttling (the tenant's queue is full, or the
// wait timed out) or ServiceUnavailable (the server's queue is full, or
// ctx ended) when the request is shed. A rejected request has had no
// effect. On success the caller runs the operation and calls Done.
func (m *Manager) Admit(ctx context.Context, s tenancy.Scope, o *dynamo.Op, in any) (*Ticket, error) {
	op := o.Name
	tk := &Ticket{m: m, op: op}
	t := s.Tenant()
	// NB: o.ClassOf, not o.Class: a PartiQL statement that writes is
	// admitted, queued and charged as a write.
	ac := o.ClassOf(in)
	class := classOf(ac)
	tk.write = class == classWrite
	f, weight, maxInflight := m.opFlows[class], float64(DefaultWeight), 0
	var now time.Time
	if !t.IsZero() {
		now = m.now()
		tk.start = now
		st, err := m.state(t)
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading the tenant's quota")
		}
		tk.st, f = st, st.flows[class]
		st.recent.Add(1)
		if !m.opts.Disabled {
			reason := -1
			// NB: a request may need a lease for each of its buckets (the
			// tenant's and its tables'); one engine call per lease.
			for round := 0; ; round++ {
				st.mu.Lock()
				st.lastUsed = now
				var empty *bucket
				reason, empty = st.allow(o, ac, in, now)
				weight, maxInflight = st.eff.Weight, st.eff.MaxInflight
				st.mu.Unlock()
				if empty == nil || round == maxLeaseRounds {
					break
				}
				if err := m.renew(ctx, st, empty); err != nil {
					return nil, err
				}
				now = m.now()
			}
			if reason >= 0 {
				m.rejected(st, op, o.Tables(in), now, reason)
				if reason == reasonControl {
					return nil, errControl
				}
				return nil, errCapacity
			}
		}
	}
	if m.opts.Disabled {
		return tk, nil
	}
	if now.IsZero() {
		now = m.now() // the operator's request
	}
	g := m.gates[class]
	waited, err := g.acquire(ctx, f, weight, maxInflight, now)
	if waited {
		m.metrics.queueWait.Observe(m.now().Sub(now).Seconds())
	}
	if err != nil {
		reason := reasonOverloaded
		switch {
		case errors.Is(err, errTenantQueueFull):
			reason = reasonQueueFull
		case errors.Is(err, errQueueTimeout):
			reason = reasonQueueTimeout
		}
		if tk.st != nil {
			m.rejected(tk.st, op, o.Tables(in), m.now(), reason)
		}
		return nil, shedError(reason, err)
	}
	tk.gate, tk.flow = g, f
	return tk, nil
}

func (m *Manager) rejected(st *tenantState, op string, tables []string, now time.Time, reason int) {
	m.meter.recordThrottled(st.tenant, now, op, tables)
	tm := m.metrics.of(st)
	tm.requests.Inc()
	tm.throttled[reason].Inc()
}

// Done records what the admitted operation consumed — out.Consumed() when
// err is nil — and frees its slot. A write that failed its condition is
// charged one write unit, as DynamoDB charges failed conditional writes.
func (tk *Ticket) Done(out wire.Output, err error) {
	m := tk.m
	var u wire.Usage
	switch {
	case err == nil && out != nil:
		u = out.Consumed()
	case apierr.Is(err, apierr.ConditionalCheckFailed):
		u.WriteUnits = 1
	}
	if tk.gate != nil {
		tk.gate.release(tk.flow, u.ReadUnits+u.WriteUnits)
	}
	st := tk.st
	if st == nil {
		return
	}
	now := m.now()
	if !m.opts.Disabled {
		st.mu.Lock()
		st.debit(u, now)
		st.mu.Unlock()
	}
	switch {
	case u.Committed:
		// NB: the engine wrote it with the request's items (StageUsage);
		// writing it again would count the request twice.
	case tk.write && m.meter.ctl == nil:
		m.meter.charge(st.tenant, now, tk.op, u)
	default:
		m.meter.record(st.tenant, now, tk.op, u, false)
	}
	tm := m.metrics.of(st)
	tm.requests.Inc()
	tm.latency.Observe(now.Sub(tk.start).Seconds())
	if u.ReadUnits != 0 {
		tm.readUnits.Add(u.ReadUnits)
	}
	if u.WriteUnits != 0 {
		tm.writeUnit.Add(u.WriteUnits)
	}
}
