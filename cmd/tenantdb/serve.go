package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/server"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

var _ = register(&command{
	name:    "serve",
	summary: "run the tenantdb server",
	run:     runServe,
})

// Config is the server's configuration. Defaults come from DefaultConfig,
// then the TENANTDB_* environment variables, then flags.
type Config struct {
	// Addr is the listen address (TENANTDB_ADDR).
	Addr string
	// DataDir holds the store, the server key and the credential files
	// (TENANTDB_DATA_DIR).
	DataDir string
	// LogLevel is debug, info, warn or error (TENANTDB_LOG_LEVEL). At
	// debug every request is logged.
	LogLevel string
	// LogFormat is text or json (TENANTDB_LOG_FORMAT).
	LogFormat string
	// OperatorKey, if set, is the operator credential (a full sk_op_ key)
	// to install instead of generating one (TENANTDB_OPERATOR_KEY).
	OperatorKey string
	// Region is written into generated credential files.
	Region string
	// DefaultTenant creates, on a fresh data directory, a tenant named
	// "default" with an admin key in <data-dir>/default-credentials
	// (TENANTDB_DEFAULT_TENANT=false disables it).
	DefaultTenant bool
	// Fairness turns on per-tenant admission control: capacity quotas,
	// fair queueing and load shedding (TENANTDB_FAIRNESS). Metering stays
	// on without it. Off only to show, in benchmarks, what it prevents.
	Fairness bool
	// ConnGate extends fair admission to reading, authenticating and
	// decoding requests: a connection's next request is read only once
	// its tenant may run one (TENANTDB_CONN_GATE; server.ConnGate). Off by
	// default (bench/results/noisy-conn-gate). Needs Fairness.
	ConnGate bool
	// Pprof serves Go's profiler under /debug/pprof/ (no authentication;
	// for benchmarking on a private listener).
	Pprof bool
	// UnsafeNoSync acknowledges writes before the WAL is synced. For
	// benchmarks only: acknowledged writes can be lost in a machine crash.
	UnsafeNoSync bool
	// BenchBypassTenancy skips signature verification after a
	// credential's first request and the guard's checks, to measure what
	// they cost (benchbypass.go). For benchmarks only: it lets anyone who
	// knows an access key id use it.
	BenchBypassTenancy bool
	// Platform configures platform users' OIDC sign-in (platform.go).
	Platform PlatformConfig
	// ShutdownTimeout bounds the wait for in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Addr:            "127.0.0.1:8000",
		DataDir:         "./tenantdb-data",
		LogLevel:        "info",
		LogFormat:       "text",
		Region:          "us-east-1",
		DefaultTenant:   true,
		Fairness:        true,
		ShutdownTimeout: 10 * time.Second,
	}
}

// applyEnv overrides c with the TENANTDB_* variables that getenv returns.
func (c *Config) applyEnv(getenv func(string) string) error {
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	str("TENANTDB_ADDR", &c.Addr)
	str("TENANTDB_DATA_DIR", &c.DataDir)
	str("TENANTDB_LOG_LEVEL", &c.LogLevel)
	str("TENANTDB_LOG_FORMAT", &c.LogFormat)
	str(auth.OperatorKeyEnv, &c.OperatorKey)
	c.Platform.applyEnv(getenv)
	for name, dst := range map[string]*bool{"TENANTDB_DEFAULT_TENANT": &c.DefaultTenant, "TENANTDB_FAIRNESS": &c.Fairness, "TENANTDB_CONN_GATE": &c.ConnGate} {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s must be true or false, got %q", name, v)
			}
			*dst = b
		}
	}
	return nil
}

// Validate checks c.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q must be host:port: %w", c.Addr, err)
	}
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if _, err := c.level(); err != nil {
		return err
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format must be text or json, got %q", c.LogFormat)
	}
	if c.Region == "" {
		return errors.New("--region must not be empty")
	}
	if c.ShutdownTimeout <= 0 {
		return errors.New("--shutdown-timeout must be positive")
	}
	return nil
}

func (c Config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return 0, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return l, nil
}

// parseServeConfig builds the Config from defaults, environment and args.
func parseServeConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	cfg := DefaultConfig()
	if err := cfg.applyEnv(getenv); err != nil {
		return cfg, err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tenantdb serve [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs the DynamoDB-compatible API, the admin API (/v1/) and /metrics on one port.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address (env TENANTDB_ADDR)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data directory (env TENANTDB_DATA_DIR)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error; debug logs every request (env TENANTDB_LOG_LEVEL)")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "text or json (env TENANTDB_LOG_FORMAT)")
	fs.StringVar(&cfg.OperatorKey, "operator-key", cfg.OperatorKey, "install this operator key instead of generating one (env "+auth.OperatorKeyEnv+")")
	fs.StringVar(&cfg.Region, "region", cfg.Region, "region written into generated credential files")
	fs.BoolVar(&cfg.DefaultTenant, "default-tenant", cfg.DefaultTenant, "on a fresh data directory, create tenant \"default\" with an admin key in <data-dir>/default-credentials (env TENANTDB_DEFAULT_TENANT)")
	fs.BoolVar(&cfg.Fairness, "fairness", cfg.Fairness, "per-tenant capacity quotas, fair queueing and load shedding (env TENANTDB_FAIRNESS)")
	fs.BoolVar(&cfg.ConnGate, "conn-gate", cfg.ConnGate, "gate each connection's next request per tenant from its first byte, so that reading, SigV4 and decoding are fairly shared too (env TENANTDB_CONN_GATE)")
	fs.BoolVar(&cfg.Pprof, "pprof", cfg.Pprof, "serve Go's profiler under /debug/pprof/ (unauthenticated: private listeners only)")
	fs.BoolVar(&cfg.UnsafeNoSync, "unsafe-no-sync", cfg.UnsafeNoSync, "acknowledge writes before the WAL is synced (benchmarks only)")
	fs.BoolVar(&cfg.BenchBypassTenancy, "bench-bypass-tenancy", cfg.BenchBypassTenancy, "INSECURE, benchmarks only: trust access key ids after their first signed request and skip the guard's checks, to measure their cost")
	cfg.Platform.addFlags(fs)
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long to wait for in-flight requests on shutdown")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return cfg, cfg.Validate()
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeConfig(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" && serverGCPercent != 100 {
		debug.SetGCPercent(serverGCPercent)
	}
	return serve(ctx, cfg, stderr)
}

// serve runs the server until ctx is done, then shuts down gracefully:
// stop accepting, finish in-flight requests, close the engine, then the
// store. Progress lines for humans (and tests/harness, which waits for
// "listening on") go to out.
func serve(ctx context.Context, cfg Config, out io.Writer) (err error) {
	level, _ := cfg.level()
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, hopts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(os.Stderr, hopts)
	}
	log := slog.New(h)

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	defer l.Close()

	db, err := storage.Open(filepath.Join(cfg.DataDir, "db"), storage.Options{
		NoSync: cfg.UnsafeNoSync,
		Logger: log,
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	key, _, err := auth.LoadServerKey(cfg.DataDir, os.Getenv(auth.ServerKeyEnv))
	if err != nil {
		return err
	}
	cat := catalog.Open(db, catalog.Options{})
	auditLog := audit.Open(db, audit.Options{Logger: log})
	defer auditLog.Close() // pending summaries of coalesced denials, before db.Close
	authn := auth.New(cat, key, auth.Options{
		Logger: log,
		Denied: auditLog.Denied,
	})
	defer authn.Close()
	credPath, err := authn.BootstrapOperator(ctx, cfg.DataDir, cfg.OperatorKey, cfg.Region)
	if err != nil {
		return err
	}
	if credPath != "" {
		fmt.Fprintf(out, "tenantdb: operator credential written to %s (profile %s)\n", credPath, auth.OperatorProfile)
		if cfg.DefaultTenant {
			p, err := createDefaultTenant(ctx, cat, authn, cfg.DataDir, cfg.Region)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "tenantdb: tenant %q with an admin key written to %s (profile default)\n", defaultTenantName, p)
		}
	}

	eng, err := engine.Open(db, engine.Options{
		Logger:   log.With("component", "engine"),
		Region:   cfg.Region,
		SiloDir:  filepath.Join(cfg.DataDir, "silos"),
		Endpoint: l.Addr().String(),
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := eng.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	quotas, err := quota.New(quota.Options{
		DB:         db,
		Storage:    quota.CounterStorage{DB: db, Silos: eng.SiloStores},
		Logger:     log.With("component", "quota"),
		Registerer: reg,
		Disabled:   !cfg.Fairness,
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := quotas.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	adminOpts := admin.Options{Catalog: cat, Auth: authn, Audit: auditLog, Logger: log}
	if adminOpts.JWT, adminOpts.JWKS, err = cfg.Platform.open(ctx, log); err != nil {
		return err
	}
	if d, ok := any(eng).(admin.TenantDropper); ok {
		adminOpts.Dropper = d
	}
	adm, err := admin.New(adminOpts)
	if err != nil {
		return err
	}
	adm.ServeQuotas(quotas)
	var dataAuth server.Authenticator = authn
	guard := &tenancy.Guard{}
	if cfg.BenchBypassTenancy {
		log.Warn("--bench-bypass-tenancy: signatures are not verified after a key's first request and tenancy checks are off; benchmarks only")
		dataAuth, guard.BypassChecks = &bypassAuth{next: authn}, true
	}
	var connGate server.ConnGate
	if cfg.ConnGate {
		connGate = quotas
	}
	srv, err := server.New(server.Options{
		Backend:   quotas.Wrap(eng),
		Auth:      dataAuth,
		Guard:     guard,
		Admin:     adm,
		Denied:    auditLog.Denied,
		Registry:  reg,
		Logger:    log,
		Profiling: cfg.Pprof,
		OpsAuth:   authn.AuthenticateOperator,
		ConnGate:  connGate,
	})
	if err != nil {
		return err
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	fmt.Fprintf(out, "tenantdb: listening on http://%s, data in %s\n", l.Addr(), cfg.DataDir)
	log.Info("tenantdb started", "addr", l.Addr().String(), "data_dir", cfg.DataDir)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown did not finish in time; closing connections", "err", err)
		srv.Close()
	}
	return <-errc
}

// The engine is the server's backend; the quota decorator stands between.
var (
	_ server.Backend  = (*engine.Engine)(nil)
	_ quota.Backend   = (*engine.Engine)(nil)
	_ server.Backend  = (*quota.Limited)(nil)
	_ server.ConnGate = (*quota.Manager)(nil)
)
