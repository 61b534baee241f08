// Package engine implements DynamoDB's semantics on the storage seam:
// tables and indexes, items, conditions, updates, queries and scans,
// batches, transactions, TTL and tags.
//
// Every exported operation takes a tenancy.Scope as its second argument and
// rejects the zero Scope. It resolves its table through package resolve,
// which decides isolation; all physical keys it touches are derived from
// the resolved Target's namespace (see package keyspace), so one tenant's
// operation cannot reach another tenant's range. See DESIGN.md.
package engine

import (
	"container/list"
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Options configure an Engine.
type Options struct {
	Logger *slog.Logger
	// Now returns the current time; defaults to time.Now (tests override it
	// for TTL).
	Now func() time.Time
	// TTLInterval is how often expired items are swept; 0 means 10s,
	// negative disables the sweeper.
	TTLInterval time.Duration
	// Region and Account appear in ARNs.
	Region  string
	Account string
	// SiloDir is where tenants' silo stores live (one per tenant:
	// SiloDir/<tenant>/store); "" keeps silo stores in memory (tests).
	SiloDir string
	// InMemory opens silo stores in memory (tests).
	InMemory bool
	// MaxOpenSilos bounds the silo stores open at once: beyond it the
	// least recently used idle ones are closed (a store in use is never
	// closed, so the bound is exceeded while more are in use); 0 means
	// DefaultMaxOpenSilos.
	MaxOpenSilos int
	// SiloIdle closes a silo store nobody used for that long; 0 means
	// DefaultSiloIdle, negative never.
	SiloIdle time.Duration
	// SiloCacheSize is the block cache shared by all silo stores; 0 means
	// 32 MB.
	SiloCacheSize int64
	// Tiers, if not nil, says which tenants are of the silo tier: all of
	// such a tenant's items live in its silo store. Nil: none is.
	Tiers Tiers
	// Endpoint is the address DescribeEndpoints reports; "" means
	// "127.0.0.1:8000". The server sets it to its listen address.
	Endpoint string
	// MaxTenantTables bounds the tables one tenant environment may own;
	// 0 means DefaultMaxTenantTables. Every tenant table costs catalog
	// memory, a copy under the global DDL lock on each create, and (silo)
	// an open store, so one tenant must not be able to create them
	// without limit.
	MaxTenantTables int
	// Meter, if not nil, receives the usage of every item write request
	// (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
	// TransactWriteItems) that commits to the main store, to add to the
	// batch that commits its items; the output's Usage is then marked
	// Committed. Nil: usage is only reported in the output.
	Meter Meter
	// Expired, if not nil, is told after TTL expiry deleted items of
	// tenant t (no request of t did, so metering would not otherwise
	// sample its storage in that hour).
	Expired func(t tenancy.TenantID)

	// Streams makes StreamSpecification real: enabling a table's stream
	// creates a change log stream that records every committed change of
	// the table (package changelog), DescribeTable reports it and the
	// DynamoDB Streams operations read it. Off, an enabled stream is
	// refused (a backend without the Streams operations must not let a
	// client enable a stream it cannot read). The server sets it.
	Streams bool
	// StreamSecret is the key material (32 bytes or more) of the change
	// log's shard iterators and ids; nil means a random key per process.
	StreamSecret []byte
	// StreamRetention is how long change records are kept; 0 means 24h.
	StreamRetention time.Duration
	// StreamRollover is how long each shard of a new stream is open; 0
	// means 4h.
	StreamRollover time.Duration

	// RewindPause paces in-place tenant restores (rewindpace.go): a
	// restore waits for a moment with no request in flight before each
	// short step, and after it sleeps RewindPause times as long as the
	// step took, leaving the other tenants that share of the WAL and the
	// CPU. 0 means DefaultRewindPause; negative, no pacing at all.
	RewindPause float64
	// RewindGCRate bounds the garbage collections an in-place restore
	// brings about (rewindpace.go): after a step it pauses at least until
	// its allocations come to RewindGCRate collection cycles a second.
	// 0 means DefaultRewindGCRate; negative, no such bound (RewindPause
	// alone); RewindPause < 0 turns it off too.
	RewindGCRate float64

	// Keys holds the tenants' data keys, under which every item, index
	// entry and change record is sealed (values.go); nil means an
	// in-memory keyring under a random key, for a store that does not
	// outlive the process (tests). The server passes its keyring.
	Keys *tenantkey.Keyring
}

// Meter adds a write request's usage to the storage batch that commits
// the request's items, so that the usage is durable exactly when the
// items are. The metering layer (quota) provides it and owns its record
// format; the assembly wires it.
type Meter interface {
	// StageUsage adds to b the usage u of one request of operation op
	// (its wire name) made with scope s.
	StageUsage(b *storage.Batch, s tenancy.Scope, op string, u wire.Usage)
}

// Tiers tells the engine the tier of a tenant (the catalog knows it).
type Tiers interface {
	// SiloTier reports whether tenant t is of the silo tier. A tenant
	// that does not exist is not. NB: a tenant's tier changes only
	// through a tier move (movetier.go), which first pins every existing
	// table's placement: otherwise its items would be looked for in the
	// wrong store.
	SiloTier(ctx context.Context, t tenancy.TenantID) (bool, error)
}

// DefaultMaxTenantTables is DynamoDB's default per-account table quota.
const DefaultMaxTenantTables = 2500

// Engine is the local DynamoDB implementation on one storage.DB.
type Engine struct {
	db     *storage.DB
	vals   *values
	opts   Options
	log    *slog.Logger
	locks  lockTable
	closed chan struct{}
	// TransferOps serves the export and import operations (transfers.go).
	TransferOps
	wg sync.WaitGroup

	// res resolves table names for scopes and holds the published
	// definitions; the engine persists them (defstore.go) and publishes.
	res *resolve.Resolver

	// ddl serializes catalog changes (create, update, delete, tags, TTL
	// settings) and table id allocation.
	ddl sync.Mutex

	// mu guards the silo stores (silopool.go). NB: it is taken before the
	// resolver's lock (acquireSilo's allowed reads the published tables),
	// never after.
	mu    sync.RWMutex
	silos map[tenancy.TenantID]*silo // open, opening or closing
	idle  list.List                  // open stores nobody holds, most recently used first
	// nclosing counts the stores in silos being closed.
	nclosing int
	// silom are the silo stores' metrics (silometrics.go).
	silom siloMetrics
	// holdOpens, while a checkpoint copies the stores, makes opens of
	// stores not in silos wait until it is closed (checkpoint.go).
	holdOpens chan struct{}
	// checkpointMu makes checkpoints one at a time.
	checkpointMu sync.Mutex
	// shared are the caches all silo stores share; openStore is
	// storage.Open (tests slow it down).
	shared    *storage.Shared
	openStore func(dir string, o storage.Options) (*storage.DB, error)

	// registered caches the (table id, namespace) pairs known to be in the
	// persisted registry of namespaces holding a table's data.
	registered sync.Map
	// backfills holds the indexes being backfilled (tableID<<16 | index no).
	backfills sync.Map
	// ttl is where the next TTL sweep pass resumes.
	ttl ttlCursor
	// dropped holds the tenants DropTenant was called for (until a tenant
	// is created again with the same id: ReviveTenant); anyDropped says
	// whether it ever held any. Writers check it
	// with their stripes held (see locked), so no request admitted before a
	// tenant's deletion can write into its range after DropTenant.
	dropped    sync.Map // tenancy.TenantID -> struct{}
	anyDropped atomic.Bool

	// rewindMu serializes the starts and ends of in-place tenant
	// restores; fences holds the namespaces being restored (string(ns) ->
	// *rewindFence) and nfences counts them (rewind.go).
	rewindMu sync.Mutex
	fences   sync.Map
	nfences  atomic.Int32
	// rewinding holds the namespaces whose restore RunRewind is running.
	rewinding sync.Map
	// rewindSteps counts the restore steps begun and ended (odd while
	// one runs; rewindpace.go).
	rewindSteps atomic.Uint64

	// clog is the change log; streams caches the descriptors of streams
	// receiving changes ([table, stream] -> changelog.Stream).
	clog    *changelog.Log
	streams sync.Map

	// moves holds the placement overrides, cutover gates and handle
	// generations of tenant moves (movegate.go, move.go).
	moves moveGates
	// mover runs the moves in progress (move.go); moveHook, guarded by
	// mover.mu, hears of moves ending; tierHook sets a tenant's tier at
	// the end of a tier move (movetier.go).
	mover    mover
	moveHook func(tenancy.TenantID, schema.MoveStatus)
	tierHook func(context.Context, tenancy.TenantID, string) error
}

// isDropped reports whether DropTenant was called for tenant t.
func (e *Engine) isDropped(t tenancy.TenantID) bool {
	if !e.anyDropped.Load() {
		return false
	}
	_, ok := e.dropped.Load(t)
	return ok
}

// Open returns an Engine over db and starts its background work (TTL).
// The caller keeps ownership of db and closes it after Engine.Close.
func Open(db *storage.DB, opts Options) (_ *Engine, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TTLInterval == 0 {
		opts.TTLInterval = 10 * time.Second
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.Account == "" {
		opts.Account = "000000000000"
	}
	if opts.MaxTenantTables <= 0 {
		opts.MaxTenantTables = DefaultMaxTenantTables
	}
	if opts.MaxOpenSilos <= 0 {
		opts.MaxOpenSilos = DefaultMaxOpenSilos
	}
	if opts.RewindPause == 0 {
		opts.RewindPause = DefaultRewindPause
	}
	if opts.RewindGCRate == 0 {
		opts.RewindGCRate = DefaultRewindGCRate
	}
	if opts.SiloIdle == 0 {
		opts.SiloIdle = DefaultSiloIdle
	}
	e := &Engine{
		db:          db,
		opts:        opts,
		log:         opts.Logger,
		closed:      make(chan struct{}),
		silos:       map[tenancy.TenantID]*silo{},
		TransferOps: TransferOps{Missing: "this server has no export root (start it with --export-root DIR or TENANTDB_EXPORT_ROOT)"},

		shared:    storage.NewShared(opts.SiloCacheSize, 0),
		openStore: storage.Open,
	}
	e.locks.init()
	defer func() {
		if err != nil { // NB: runDrops may have opened silo stores
			e.closeAllSilos()
			e.shared.Close()
		}
	}()
	if opts.Keys == nil {
		kek := make([]byte, 32)
		_, _ = rand.Read(kek)
		if opts.Keys, err = tenantkey.Open(tenantkey.Options{KEK: kek}); err != nil {
			return nil, err
		}
		e.opts.Keys = opts.Keys
	}
	e.vals = &values{keys: opts.Keys}
	if e.clog, err = openChangeLog(db, opts); err != nil {
		return nil, err
	}
	// NB: before the resolver loads definitions: a restore or a backup
	// the process died in is undone (see restore.go, backup.go).
	if err := e.abortRestores(); err != nil {
		return nil, err
	}
	if err := e.abortBackups(); err != nil {
		return nil, err
	}
	// NB: before any request: a tenant restore the process died in stays
	// fenced until it is run to its end (rewind.go).
	if err := e.loadRewindFences(); err != nil {
		return nil, err
	}
	res, err := resolve.New(context.Background(), defStore{db}, resolve.Options{
		Region:          opts.Region,
		Account:         opts.Account,
		MaxTenantTables: opts.MaxTenantTables,
		Loaded: func(tables []*schema.Table) {
			for _, t := range tables {
				e.resumeBackfills(t)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	e.res = res
	if err = e.repairStreams(); err != nil {
		return nil, err
	}
	if err = e.runDrops(); err != nil {
		return nil, err
	}
	if err = e.loadPlacements(); err != nil {
		return nil, err
	}
	e.startBackground()
	e.resumeMoves()
	e.resumeTierMoves()
	return e, nil
}

// Close stops background work and closes silo stores.
func (e *Engine) Close() error {
	select {
	case <-e.closed:
		return nil
	default:
	}
	close(e.closed)
	e.wg.Wait()
	err := e.closeAllSilos()
	e.shared.Close()
	return err
}

// check rejects scopes that the guard did not issue.
func check(ctx context.Context, s tenancy.Scope) error {
	if !s.Valid() {
		return apierr.New(apierr.AccessDenied, "request is not scoped to a tenant")
	}
	return ctx.Err()
}
