// Package node assembles one tenantdb server process: storage, catalog,
// audit log, authentication, the operator and default-tenant bootstrap,
// engine, quotas, the admin API and the HTTP server, opened in that order
// and closed in reverse by one Close.
//
// It is the only place that wires the process (a test in internal/lint
// enforces it): `tenantdb serve` maps its Config onto Options, and the
// black-box suites (tests/harness in-process, tests/bench, tests/noisy)
// open the same Node, so that they test the binary's real wiring.
package node

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/aggregate"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/backup"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/console"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/enginekv"
	"github.com/tenantdb/tenantdb/internal/fleetkey"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/lifecycle"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/rekey"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/rewind"
	"github.com/tenantdb/tenantdb/internal/server"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
	"github.com/tenantdb/tenantdb/internal/transfer"
	"github.com/tenantdb/tenantdb/internal/webhook"
)

// Options configure a Node. Set DataDir or InMemory; the rest may stay
// zero (no fairness, no default tenant, platform sign-in off).
// `tenantdb serve` fills it from its Config.
type Options struct {
	// DataDir holds the store (db/), silo stores (silos/), the server key
	// and the credential files. Open creates it (mode 0700).
	DataDir string
	// InMemory keeps the store and silo stores in memory and writes no
	// files (tests, benchmarks); DataDir is then ignored.
	InMemory bool
	// ServerKey is the server key's material in the format of
	// auth.ServerKeyEnv; "" loads or creates <DataDir>/server.key, or, in
	// memory, uses a random key.
	ServerKey string
	// OperatorKey, if set, is the operator credential (a full sk_op_ key)
	// to install instead of generating one.
	OperatorKey string
	// Region appears in ARNs and generated credential files; "" means
	// "us-east-1".
	Region string
	// Endpoint is the address DescribeEndpoints reports: the listen
	// address Serve will be given.
	Endpoint string
	// DefaultTenant creates, on a fresh store, a tenant named "default"
	// with an admin key (written to <DataDir>/default-credentials unless
	// InMemory).
	DefaultTenant bool
	// Fairness turns on per-tenant admission control (quota.Options.Disabled
	// is its negation). Metering stays on without it.
	Fairness bool
	// ConnGate extends fair admission to reading, authenticating and
	// decoding requests (server.ConnGate). Needs Fairness to have effect.
	ConnGate bool
	// Pprof serves Go's profiler under /debug/pprof/ (unauthenticated).
	Pprof bool
	// UnsafeNoSync acknowledges writes before the WAL is synced
	// (benchmarks only).
	UnsafeNoSync bool
	// Platform configures platform users' OIDC sign-in; zero means off.
	Platform Platform
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger

	// MaxInflight and TenantInflight override quota.Options' admission
	// limits (0: quota's defaults); for benchmarks that explore them.
	MaxInflight, TenantInflight int
	// TTLInterval overrides engine.Options.TTLInterval (0: the engine's
	// default; negative disables the sweeper).
	TTLInterval time.Duration
	// StreamRetention is how long change records (DynamoDB Streams) are
	// kept; 0 means 24h.
	StreamRetention time.Duration
	// StreamRollover is how long each shard of a new stream is open; 0
	// means the change log's default (4h). Tests shorten it to read
	// through rollovers.
	StreamRollover time.Duration
	// MaxOpenSilos bounds the silo stores open at once (0:
	// DefaultMaxOpenSilos).
	MaxOpenSilos int
	// RestorePause paces in-place tenant restores (engine.Options.
	// RewindPause): 0 means the default, negative no pacing.
	RestorePause float64

	// Backend chooses where items live: "" for the embedded engine, or
	// BackendDynamoDB for a remote engine speaking the DynamoDB API
	// (internal/remote), configured by Remote.
	Backend string
	// Remote configures the remote backend (Backend BackendDynamoDB).
	Remote Remote
	// ExportRoot is the directory of the S3 buckets of the DynamoDB API's
	// exports and imports (internal/transfer); "" turns them off.
	ExportRoot string

	// AllowPrivateWebhooks lets webhook subscriptions use http:// and
	// endpoints on loopback, private, link-local and metadata addresses
	// (development and tests only).
	AllowPrivateWebhooks bool
	// Webhooks overrides webhook.Options' delivery settings (retry
	// backoff, timeouts, per-tenant concurrency) for tests; the stores,
	// log, keys and metering are always the node's.
	Webhooks webhook.Options

	benchOptions
}

// controlStore is what the control plane's packages (catalog, audit,
// tenantkey) are given: kv.Local or enginekv.Store.
type controlStore interface {
	catalog.Store
	audit.Store
	tenantkey.Store
	quota.ControlStore
}

var (
	_ controlStore = (*kv.Local)(nil)
	_ controlStore = (*enginekv.Store)(nil)
)

// catalogTiers tells the engine tenants' tiers from the catalog.
type catalogTiers struct{ c *catalog.Catalog }

func (t catalogTiers) SiloTier(ctx context.Context, id tenancy.TenantID) (bool, error) {
	tn, err := t.c.Tenant(ctx, id)
	if errors.Is(err, catalog.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return tn.Tier == catalog.Silo, nil
}

// placement is what reports where tenants' data lives: the embedded
// engine (nil with a remote backend, which keeps it all in the remote
// engine's table).
func placement(n *Node) lifecycle.Placement {
	if n.remote != nil {
		return nil
	}
	return n.engine
}

// DefaultRestorePause is the default pacing of in-place tenant restores.
const DefaultRestorePause = engine.DefaultRewindPause

// DefaultMaxOpenSilos is the default bound on open silo stores.
const DefaultMaxOpenSilos = engine.DefaultMaxOpenSilos

// Bootstrap is what Open created on a fresh store (zero on a store that
// already had an operator).
type Bootstrap struct {
	// Operator is the operator key Open created or installed; OperatorFile
	// is where it was written ("" in memory or when nothing was created).
	Operator     auth.APIKey
	OperatorFile string
	// Default is the default tenant's admin key (Options.DefaultTenant);
	// DefaultFile is where it was written ("" in memory).
	Default     auth.APIKey
	DefaultFile string
}

// Node is an assembled tenantdb server.
type Node struct {
	log       *slog.Logger
	db        *storage.DB
	catalog   *catalog.Catalog
	keys      *tenantkey.Keyring
	rekey     *rekey.Service
	rewind    *rewind.Service
	opts      Options
	skMu      sync.Mutex       // one server key rotation (or backup) at a time
	backups   *backup.Registry // nil in memory
	audit     *audit.Log
	auth      *auth.Authenticator
	engine    *engine.Engine
	remote    *remote.Backend
	quotas    *quota.Manager
	backend   *quota.Limited
	transfers *transfer.Service
	// aggregates maintains aggregates from the change log (embedded
	// engine only).
	aggregates *aggregate.Service
	webhooks   *webhook.Manager
	server     *server.Server
	bootstrap  Bootstrap
	// adminRoutes are the routes the admin API registered.
	adminRoutes []string

	sweeper *deletionSweeper // a gateway's: finishes tenant deletions left unfinished
	// fleetKey follows and drives a gateway fleet's server key rotations.
	fleetKey *fleetkey.Rotator

	closeOnce sync.Once
	closeErr  error
}

// Open opens everything a server needs, bootstraps the operator (and the
// default tenant) on a fresh store and builds the HTTP server, which
// Serve then runs. On error everything opened so far is closed again.
func Open(ctx context.Context, o Options) (_ *Node, err error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{log: log}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()

	dbDir := "memory"
	if !o.InMemory {
		if o.DataDir == "" {
			return nil, errors.New("node: DataDir must be set unless InMemory")
		}
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, err
		}
		dbDir = filepath.Join(o.DataDir, "db")
	}
	if n.db, err = storage.Open(dbDir, storage.Options{InMemory: o.InMemory, NoSync: o.UnsafeNoSync, Logger: log}); err != nil {
		return nil, err
	}
	key, err := serverKey(o)
	if err != nil {
		return nil, err
	}
	// The control plane (catalog, audit, tenants' data keys) lives in the
	// embedded store, or, for a gateway over a remote engine, in that
	// engine, shared with every other gateway (internal/enginekv).
	var ctl controlStore = kv.NewLocal(n.db)
	var stale time.Duration
	var keyStore tenantkey.Store
	if o.Backend == BackendDynamoDB {
		var est *enginekv.Store
		if n.remote, est, err = o.Remote.open(ctx, o, key, log); err != nil {
			return nil, err
		}
		if key, err = checkFleetKey(ctx, est, key, o); err != nil {
			return nil, err
		}
		ctl, stale, keyStore = est, FleetStaleness, est
	} else if o.Backend != "" {
		return nil, errors.New("node: unknown backend " + o.Backend + " (want " + BackendDynamoDB + " or none)")
	}
	var aloneCat func(context.Context) bool
	if n.remote != nil {
		aloneCat = n.remote.Alone // a gateway alone skips a revocation's settle
	}
	n.catalog = catalog.Open(ctl, catalog.Options{MaxStale: stale, Settle: settle(stale), Alone: aloneCat})
	if n.keys, err = openKeys(ctx, o, key, n.catalog, keyStore); err != nil {
		return nil, err
	}
	o.benchOptions.keys(n.keys, log) // nothing unless benchbypass
	n.audit = audit.Open(ctl, audit.Options{Logger: log, Keys: n.keys, Shared: n.remote != nil})
	if n.remote != nil {
		auditRemoteJobs(n.remote, n.audit, log)
	}
	n.auth = auth.New(n.catalog, key, auth.Options{Logger: log, Denied: n.audit.Denied, MaxStale: stale})
	n.opts = o
	if key, err = n.resumeServerKeyRotation(ctx, key); err != nil {
		return nil, err
	}
	if n.remote != nil {
		if err := n.startFleetKey(ctx, o, ctl.(*enginekv.Store), key); err != nil {
			return nil, err
		}
	}
	if err := n.bootstrapStore(ctx, o); err != nil {
		return nil, err
	}

	// NB: the quota manager comes first: the engine writes the usage of
	// item writes into their commit batches through it (engine.Meter),
	// and it reads the engine's storage figures only once serving.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(n.db.Collector())
	var quotaCtl quota.ControlStore // nil: the embedded store, staged with the items
	// NB: a gateway's token buckets are the fleet's, in the engine: a
	// tenant's capacity holds across gateways (quota.Options.Fleet).
	var fleet quota.Leaser
	var storageSrc quota.StorageSource = engineStorage{n}
	var alone func(context.Context) bool // a gateway alone skips the quota change's settle
	if n.remote != nil {
		quotaCtl = ctl
		capacity := n.remote.Capacity()
		// NB: a bucket is created only while its tenant's record exists,
		// so none outlives a deletion (remote.Backend.SweepTenant).
		est := ctl.(*enginekv.Store)
		capacity.Alive = func(tenant string) *types.ConditionCheck {
			id, _ := tenancy.ParseTenantID(tenant)
			return est.Present(keyspace.TenantRecord(id))
		}
		fleet = capacity
		n.remote.SetTenantCheck(capacity.Alive) // storage counters, as buckets
		storageSrc = remoteStorage{n.remote}
		alone = n.remote.Alone
	}
	if n.quotas, err = quota.New(quota.Options{
		DB:             n.db,
		Control:        quotaCtl,
		MaxStale:       stale,
		Settle:         settle(stale),
		Alone:          alone,
		Storage:        storageSrc,
		Logger:         log.With("component", "quota"),
		Registerer:     reg,
		Disabled:       !o.Fairness,
		MaxInflight:    o.MaxInflight,
		TenantInflight: o.TenantInflight,
		Fleet:          fleet,
	}); err != nil {
		return nil, err
	}
	eo := engine.Options{
		Logger:      log.With("component", "engine"),
		Region:      o.Region,
		Endpoint:    o.Endpoint,
		InMemory:    o.InMemory,
		TTLInterval: o.TTLInterval,
		Meter:       n.quotas,
		Expired:     n.quotas.Expired,

		Streams:         true,
		StreamSecret:    key.Derive("tenantdb change log v1"),
		StreamRetention: o.StreamRetention,
		StreamRollover:  o.StreamRollover,
		MaxOpenSilos:    o.MaxOpenSilos,
		RewindPause:     o.RestorePause,
		Tiers:           catalogTiers{n.catalog},
		Keys:            n.keys,
	}
	if !o.InMemory {
		eo.SiloDir = filepath.Join(o.DataDir, "silos")
	}
	if n.engine, err = engine.Open(n.db, eo); err != nil {
		return nil, err
	}
	reg.MustRegister(n.engine.SiloCollector())
	var items dynamo.Backend = n.engine
	if n.remote != nil {
		items = n.remote
	}
	n.backend = n.quotas.Wrap(dynamo.Bind(items))

	guard := &tenancy.Guard{}
	var tenantData lifecycle.Engine = n.engine
	if n.remote != nil {
		tenantData = n.remote // the tenants' items live in the remote engine
	}
	var sweep func(context.Context, tenancy.Scope) error
	if n.remote != nil {
		sweep = n.remote.SweepTenant
	}
	lc := lifecycle.New(lifecycle.Options{Catalog: n.catalog, Audit: n.audit, Quotas: n.quotas, Engine: tenantData,
		SiloTier: n.remote == nil, Placement: placement(n), Keys: n.keys, Compact: n.db.Compact,
		Workers: tenantWorkers{n}, Files: tenantWorkers{n}, Sweep: sweep})
	adminOpts := admin.Options{Catalog: n.catalog, Auth: n.auth, Audit: n.audit, Logger: log, Guard: guard, Lifecycle: lc}
	if n.remote != nil {
		n.sweeper = startDeletionSweeper(lc, o.Remote.DeletionSweep, log) // deletesweep.go
	}
	if adminOpts.JWT, adminOpts.JWKS, err = o.Platform.open(ctx, log); err != nil {
		return nil, err
	}
	adm, err := admin.New(adminOpts)
	if err != nil {
		return nil, err
	}
	adm.ServeQuotas(n.quotas)
	if n.remote == nil {
		// NB: exports read the embedded store's snapshot; imports write
		// through n.backend, so quotas and metering apply (Unlimited skips
		// only the admission of an import that lifts them).
		if n.transfers, err = transfer.New(transfer.Options{Source: transfer.EngineSource(n.engine), Handler: n.backend, Unlimited: dynamo.Bind(items),
			Audit: n.audit, Root: o.ExportRoot, Region: o.Region, Logger: log.With("component", "transfer")}); err != nil {
			return nil, err
		}
		if o.ExportRoot != "" {
			n.engine.SetTransfers(n.transfers)
		}
		adm.ServeTransfers(n.transfers)
		adm.ServeMoves(n.engine)
		if err := n.openWebhooks(o, key, ctl, adm); err != nil { // webhooks.go
			return nil, err
		}
		adm.ServeShards(nil)
		adm.ServeGateways(nil)
	} else {
		adm.ServeShards(n.remote)
		adm.ServeGateways(n.remote)
		adm.ServeMoves(nil)
		if err := n.openGatewayTransfers(o, ctl, adm, log); err != nil { // transfers.go
			return nil, err
		}
		if err := n.openWebhooks(o, key, ctl, adm); err != nil { // webhooks.go
			return nil, err
		}
	}
	if n.remote == nil {
		if n.aggregates, err = aggregate.New(aggregate.Options{DB: n.db, Log: n.engine, Tables: n.engine, Shared: n.engine,
			Scope: aggregate.WorkerScope, Registerer: reg, Logger: log}); err != nil {
			return nil, err
		}
		adm.ServeAggregates(n.aggregates)
		if err := n.aggregates.Start(); err != nil {
			return nil, err
		}
	} else if err := n.openGatewayAggregates(o, ctl, reg, log, adm); err != nil { // aggregates.go
		return nil, err
	}
	var data rekey.Data
	if n.remote == nil {
		data = n.engine
	}
	var rekeyFleet *rekey.Fleet
	if n.remote != nil { // a tenant's key seals its audit log in the engine
		rekeyFleet = &rekey.Fleet{Owner: n.remote.GatewayID(), Settle: FleetSettle, Lease: remote.GatewayLease, Sweep: o.Remote.JobSweep}
	}
	n.rekey = rekey.New(rekey.Options{Keys: n.keys, Data: data, Audit: n.audit, Logger: log.With("component", "rekey"), Fleet: rekeyFleet})
	adm.ServeEncryption(n.rekey, admin.ServerKeyOps{Status: n.serverKeyStatus, Rotate: n.rotateServerKey})
	n.openBackups()
	adm.ServeBackups(nodeBackups{n})
	if err := n.rekey.Resume(rekey.SystemScope); err != nil {
		return nil, err
	}
	rwo := rewind.Options{Engine: n.engine, Audit: n.audit, Logger: log.With("component", "rewind")}
	if n.remote != nil {
		// NB: from the engine's point-in-time recovery; any gateway
		// resumes a restore whose gateway was killed (its lease).
		rwo.Engine, rwo.Poll = n.remote, remote.RewindPoll
	}
	n.rewind = rewind.New(rwo)
	adm.ServeRestores(n.rewind)
	if err := n.rewind.Resume(); err != nil {
		return nil, err
	}
	n.adminRoutes = adm.Routes()

	dataAuth := o.benchOptions.wrap(n.auth, guard, log) // n.auth itself unless benchbypass
	var connGate server.ConnGate
	if o.ConnGate {
		connGate = n.quotas
	}
	// NB: the console acts through the admin API and the server itself,
	// in-process, with each session's own key.
	con, err := console.New(console.Options{Admin: adm, Sessions: ctl, Region: o.Region, Logger: log})
	if err != nil {
		return nil, err
	}
	var served dynamo.Handler = n.backend
	if n.remote != nil {
		served = n.remote.Fence(served) // bounds a write's engine calls (remote/fence.go)
	}
	if n.server, err = server.New(server.Options{
		Backend:   served,
		Auth:      dataAuth,
		Guard:     guard,
		Admin:     adm,
		Console:   con,
		Denied:    n.audit.Denied,
		Registry:  reg,
		Logger:    log,
		Profiling: o.Pprof,
		OpsAuth:   n.auth.AuthenticateOperator,
		ConnGate:  connGate,
	}); err != nil {
		return nil, err
	}
	con.SetServer(n.server)
	return n, nil
}

func serverKey(o Options) (*auth.ServerKey, error) {
	if !o.InMemory {
		key, _, err := auth.LoadServerKey(o.DataDir, o.ServerKey)
		return key, err
	}
	if o.ServerKey != "" {
		key, _, err := auth.LoadServerKey("", o.ServerKey)
		return key, err
	}
	var master [32]byte
	rand.Read(master[:])
	return auth.NewServerKey(master[:])
}

// bootstrapStore installs the operator and, when it was created, the
// default tenant.
func (n *Node) bootstrapStore(ctx context.Context, o Options) error {
	op, created, err := n.auth.EnsureOperator(ctx, o.OperatorKey)
	if err != nil || !created {
		return err
	}
	n.bootstrap.Operator = op
	if !o.InMemory {
		path := filepath.Join(o.DataDir, auth.OperatorCredentialsFile)
		if err := auth.WriteCredentialsFile(path, auth.OperatorProfile, op, o.Region, clientEndpoint(o.Endpoint)); err != nil {
			return err
		}
		n.bootstrap.OperatorFile = path
	}
	if !o.DefaultTenant {
		return nil
	}
	dir := o.DataDir
	if o.InMemory {
		dir = ""
	}
	n.bootstrap.Default, n.bootstrap.DefaultFile, err = createDefaultTenant(ctx, n.catalog, n.auth, dir, o.Region, clientEndpoint(o.Endpoint))
	if err != nil {
		return err
	}
	return n.keys.Create(n.bootstrap.Default.Tenant) // its data key, as for every new tenant
}

// Bootstrap returns what Open created on a fresh store.
func (n *Node) Bootstrap() Bootstrap { return n.bootstrap }

// AdminRoutes returns the pattern ("METHOD /v1/path") of every route the
// node's admin API serves.
func (n *Node) AdminRoutes() []string { return slices.Clone(n.adminRoutes) }

// Quotas returns the node's quota manager.
func (n *Node) Quotas() *quota.Manager { return n.quotas }

// Backend returns the engine behind the quota decorator: what the server
// calls for every data-plane request (benchmarks drive it directly).
func (n *Node) Backend() *quota.Limited { return n.backend }

// Engine returns the embedded engine (benchmarks read its snapshots).
func (n *Node) Engine() *engine.Engine { return n.engine }

// Serve accepts connections on l until Shutdown or Close and then returns
// nil; otherwise it returns the listener's error.
func (n *Node) Serve(l net.Listener) error { return n.server.Serve(l) }

// Shutdown stops accepting connections and waits, until ctx ends, for
// in-flight requests to finish; if they do not, it closes their
// connections and returns ctx's error.
func (n *Node) Shutdown(ctx context.Context) error {
	err := n.server.Shutdown(ctx)
	if err != nil {
		n.log.Warn("shutdown did not finish in time; closing connections", "err", err)
		n.server.Close()
	}
	return err
}

// Close closes the quota manager, engine, authenticator, audit log and
// store, in that order (after Shutdown, or on a node that never served),
// and returns the first error. Only the first call does anything.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.aggregates != nil {
			errs = append(errs, n.aggregates.Close())
		}
		if n.transfers != nil {
			n.transfers.Close()
		}
		if n.webhooks != nil {
			errs = append(errs, n.webhooks.Close())
		}
		if n.rekey != nil {
			n.rekey.Close() // unfinished rotations resume at the next start
		}
		if n.rewind != nil {
			n.rewind.Close() // unfinished restores resume at the next start
		}
		if n.sweeper != nil {
			n.sweeper.Close()
		}
		if n.fleetKey != nil {
			n.fleetKey.Close() // a rotation it drives is taken over by another gateway
		}
		if n.quotas != nil {
			errs = append(errs, n.quotas.Close())
		}
		if n.remote != nil {
			errs = append(errs, n.remote.Close())
		}
		if n.engine != nil {
			errs = append(errs, n.engine.Close())
		}
		if n.auth != nil {
			n.auth.Close()
		}
		if n.audit != nil {
			n.audit.Close() // pending summaries of coalesced denials, before the store
		}
		if n.db != nil {
			errs = append(errs, n.db.Close())
		}
		n.closeErr = firstErr(errs)
	})
	return n.closeErr
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// engineStorage reports storage through the node's engine, which is
// opened after the quota manager that asks for it.
type engineStorage struct{ n *Node }

func (s engineStorage) TenantStorage(ctx context.Context, sc tenancy.Scope) ([]quota.TableStorage, error) {
	return s.n.engine.TenantStorage(ctx, sc.Tenant())
}

// The engine is the server's backend; the quota decorator stands between.
var (
	_ engine.Meter        = (*quota.Manager)(nil)
	_ quota.StorageSource = engineStorage{}
	_ dynamo.Backend      = (*engine.Engine)(nil)
	_ dynamo.Backend      = (*remote.Backend)(nil)
	_ rewind.Claimer      = (*remote.Backend)(nil)
	_ rewind.Engine       = (*remote.Backend)(nil)
	_ quota.Leaser        = (*remote.Capacity)(nil)
	_ dynamo.Handler      = (*quota.Limited)(nil)
	_ server.ConnGate     = (*quota.Manager)(nil)
	_ webhook.Log         = (*engine.Engine)(nil)
	_ webhook.Meter       = (*quota.Manager)(nil)
)
