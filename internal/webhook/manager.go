package webhook

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Log is the change log's consumer API as the delivery workers use it
// (the engine implements it).
type Log interface {
	// RetainLog makes table keep a log with both images while consumer
	// holds it; ReleaseLog lets it go.
	RetainLog(ctx context.Context, s tenancy.Scope, table, consumer string) error
	ReleaseLog(ctx context.Context, s tenancy.Scope, table, consumer string) error
	// FollowLog returns up to limit changes after from, in commit order
	// per item key.
	FollowLog(ctx context.Context, s tenancy.Scope, table string, from changelog.Cursor, limit int) (changelog.FollowPage, error)
	// WaitLog returns when a change after from may have committed.
	WaitLog(ctx context.Context, s tenancy.Scope, table string, from changelog.Cursor) error
	// LogCursorAt returns the cursor of the first change at or after t.
	LogCursorAt(ctx context.Context, s tenancy.Scope, table string, t time.Time) (changelog.Cursor, error)
}

// Meter meters delivery work per tenant (package quota implements it).
type Meter interface {
	// MeterDelivery records one delivery attempt of records records and
	// bytes bytes; ok says it was acknowledged.
	MeterDelivery(ctx context.Context, s tenancy.Scope, records int, bytes int64, ok bool, latency time.Duration)
	// DeliveryDelay returns how long the tenant's deliveries must wait for
	// its read capacity (0: deliver now).
	DeliveryDelay(ctx context.Context, s tenancy.Scope) time.Duration
}

// Options configure a Manager. SecretKey is required, and DB or KV, and
// Log or Feed.
type Options struct {
	// DB is the embedded server's store; KV, if set, is used instead
	// (a gateway's: the engine, through enginekv).
	DB Store
	KV KV
	// Log is the embedded engine's change log; Feed, if set, is used
	// instead (a gateway's: the engine table's DynamoDB stream).
	Log  Log
	Feed Feed
	// Lease, when positive, makes delivery a fleet's: any number of
	// Managers share one KV, and a subscription is delivered by the one
	// holding its lease (a holder and an expiry in its position, renewed
	// by every write of the position and at least every Lease/3; taken
	// by another Manager once expired). Zero: this Manager is the only
	// one (the embedded server).
	Lease time.Duration
	// Holder names this Manager among the fleet's (default: random).
	Holder string
	// Rescan is how often a fleet's Manager reads the registry for
	// subscriptions created through another (default Lease/2).
	Rescan time.Duration
	// MaxBody bounds a delivery's body (default 6 MB, Lambda's payload
	// limit); a gateway's is smaller, so that a dead letter fits one
	// engine item.
	MaxBody int
	// SecretKey (32 bytes) seals the signing secrets at rest.
	SecretKey []byte
	// Meter, if set, meters deliveries per tenant.
	Meter Meter
	// AllowPrivate allows http:// URLs and endpoints on loopback, private,
	// link-local and metadata addresses (--allow-private-webhooks).
	AllowPrivate bool
	// Region and Account appear in records' ARNs.
	Region, Account string
	// TenantConcurrency bounds the deliveries of one tenant in flight at
	// once (default 4); MaxPerTenant bounds its subscriptions (default 25).
	TenantConcurrency int
	MaxPerTenant      int
	// Timeout bounds one delivery (default 10 s).
	Timeout time.Duration
	// Window is the least time between two reads of the log by one
	// worker under load (changelog.Pacer) unless the first found a full
	// batch (default 10 ms): under a steady write load a delivery carries
	// the window's changes at once. It bounds the lag it adds; at light
	// load it adds none.
	Window time.Duration
	// BackoffMin and BackoffMax bound the retry delay (defaults 1 s and
	// 5 min); each failure doubles it, with jitter.
	BackoffMin, BackoffMax time.Duration
	// MaxDeadLetters bounds a subscription's dead-letter list (batches;
	// default 10,000). A subscription whose list is full is disabled
	// instead of dead-lettering more, its cursor left before the batch.
	MaxDeadLetters int
	// TenantActive, if set, reports whether a tenant may have its changes
	// delivered now (not suspended or being deleted); its workers wait
	// while it may not.
	TenantActive func(ctx context.Context, t tenancy.TenantID) bool
	// Resolver checks URLs' hosts at creation (default net.DefaultResolver).
	Resolver Resolver
	Logger   *slog.Logger
	Now      func() time.Time
}

// Manager keeps subscriptions and runs their delivery workers.
type Manager struct {
	o      Options
	st     *store
	feed   Feed
	log    *slog.Logger
	client *http.Client
	src    source

	mu      sync.Mutex
	workers map[key]*worker
	retired map[tenancy.TenantID]bool // tenants being (or been) deleted: no worker runs
	slots   map[tenancy.TenantID]chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
}

type key struct {
	t  tenancy.TenantID
	id string
}

// New returns a Manager; Start starts its workers.
func New(o Options) (*Manager, error) {
	db := o.KV
	if db == nil {
		sdb, ok := o.DB.(*storage.DB)
		if !ok {
			return nil, errors.New("webhook: DB (a *storage.DB) or KV is required")
		}
		db = kv.NewLocal(sdb)
	}
	feed := o.Feed
	if feed == nil {
		if o.Log == nil {
			return nil, errors.New("webhook: Log or Feed is required")
		}
		feed = cursorFeed{o.Log}
	}
	st, err := newStore(db, o.SecretKey)
	if err != nil {
		return nil, err
	}
	st.fleet = o.Lease > 0
	if o.Holder == "" {
		o.Holder = newID()[4:]
	}
	if o.Rescan <= 0 {
		o.Rescan = max(o.Lease/2, time.Second)
	}
	if o.MaxBody <= 0 {
		o.MaxBody = maxBody
	}
	if o.TenantConcurrency <= 0 {
		o.TenantConcurrency = 4
	}
	if o.MaxPerTenant <= 0 {
		o.MaxPerTenant = 25
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Millisecond
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 5 * time.Minute
	}
	if o.MaxDeadLetters <= 0 {
		o.MaxDeadLetters = 10000
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Account == "" {
		o.Account = "000000000000"
	}
	m := &Manager{o: o, st: st, feed: feed, log: o.Logger.With("component", "webhook"), src: source{o.Region, o.Account},
		workers: map[key]*worker{}, retired: map[tenancy.TenantID]bool{}, slots: map[tenancy.TenantID]chan struct{}{}}
	m.client = newClient(o.Timeout, o.AllowPrivate)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// newClient returns the HTTP client of deliveries: no proxy, no
// redirects, and unless private webhooks are allowed a dialer that
// refuses blocked addresses after resolution.
func newClient(timeout time.Duration, allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = dialControl
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// Start starts a worker for every stored subscription. Registry entries
// whose subscription is gone (its tenant was deleted) are removed. A
// fleet's Manager reads the registry again every Rescan.
func (m *Manager) Start() error {
	if err := m.scanRegistry(); err != nil {
		return err
	}
	if m.o.Lease > 0 {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			t := time.NewTicker(m.o.Rescan)
			defer t.Stop()
			for {
				select {
				case <-m.ctx.Done():
					return
				case <-t.C:
				}
				if err := m.scanRegistry(); err != nil {
					m.log.Warn("reading the subscriptions' registry", "err", err)
				}
			}
		}()
	}
	return nil
}

func (m *Manager) scanRegistry() error {
	ts, ids, err := m.st.registry()
	if err != nil {
		return err
	}
	for i, t := range ts {
		if m.worker(t, ids[i]) != nil {
			continue
		}
		r, err := m.st.get(t, ids[i])
		if errors.Is(err, storage.ErrNotFound) {
			if err := m.st.forget(t, ids[i]); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		m.startWorker(t, r)
	}
	return nil
}

// Close stops the workers and waits for them.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	m.client.CloseIdleConnections()
	return nil
}

func (m *Manager) startWorker(t tenancy.TenantID, r *record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key{t, r.ID}
	if m.closed || m.workers[k] != nil || m.retired[t] {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	w := &worker{m: m, t: t, id: r.ID, env: r.Env, table: r.Table, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}
	m.workers[k] = w
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.run()
	}()
}

func (m *Manager) worker(t tenancy.TenantID, id string) *worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers[key{t, id}]
}

func (m *Manager) dropWorker(w *worker) {
	m.mu.Lock()
	if m.workers[key{w.t, w.id}] == w {
		delete(m.workers, key{w.t, w.id})
	}
	m.mu.Unlock()
	w.cancel()
}

// RetireTenant stops the delivery workers of tenant t, which is being
// deleted, and starts none for it until UnretireTenant: once it returns,
// no worker writes t's subscription state (cursor, attempts, dead
// letters) and none will, so deleting t's key range leaves nothing
// behind.
//
// NB: a worker writes its state only holding its mu and only while not
// gone, so taking each mu to set gone waits out a write in flight.
func (m *Manager) RetireTenant(t tenancy.TenantID) {
	m.mu.Lock()
	m.retired[t] = true
	var ws []*worker
	for k, w := range m.workers {
		if k.t == t {
			ws = append(ws, w)
			delete(m.workers, k)
		}
	}
	m.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		w.gone = true
		w.mu.Unlock()
		w.cancel()
	}
}

// UnretireTenant starts tenant t's workers again after RetireTenant (its
// deletion failed, or its id was created again).
func (m *Manager) UnretireTenant(t tenancy.TenantID) {
	m.mu.Lock()
	delete(m.retired, t)
	m.mu.Unlock()
	rs, err := m.st.list(t)
	if err != nil {
		m.log.Error("restarting a tenant's delivery workers", "tenant", t, "err", err)
		return
	}
	for _, r := range rs {
		m.startWorker(t, r)
	}
}

// slot returns tenant t's delivery slots: a tenant's deliveries in flight
// are bounded by them, so a slow endpoint holds only its tenant's slots.
func (m *Manager) slot(t tenancy.TenantID) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.slots[t]
	if c == nil {
		c = make(chan struct{}, m.o.TenantConcurrency)
		m.slots[t] = c
	}
	return c
}

// errNotFound is what a subscription that does not exist, or is not the
// caller's to see, answers.
func errNotFound(id string) error {
	return apierr.New(apierr.NotFound, "subscription %s not found", apierr.Clip(id))
}
