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
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
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
	// benchConfig holds the benchmark-only settings, which exist only in
	// builds with the benchbypass tag (benchbypass.go).
	benchConfig
	// Platform configures platform users' OIDC sign-in (platform.go).
	Platform PlatformConfig
	// ShutdownTimeout bounds the wait for in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration

	// Backend is "" (the embedded engine) or "dynamodb": items live in a
	// remote DynamoDB-API engine (TENANTDB_BACKEND), at BackendEndpoint
	// ("" means AWS DynamoDB in BackendRegion; TENANTDB_BACKEND_ENDPOINT),
	// in the table <BackendTablePrefix>tenantdb
	// (TENANTDB_BACKEND_TABLE_PREFIX). The engine's credentials come from
	// the standard AWS chain.
	Backend, BackendEndpoint, BackendRegion, BackendTablePrefix string
	// StreamRetention is how long DynamoDB Streams records are kept.
	StreamRetention time.Duration
	// StreamRollover is how long each shard of a new stream is open (0:
	// the default, 4h).
	StreamRollover time.Duration
	// ExportRoot is the directory under which DynamoDB's
	// ExportTableToPointInTime and ImportTable find their S3 buckets, one
	// directory tree per tenant (TENANTDB_EXPORT_ROOT); "" turns those
	// operations off. Every gateway of a fleet must be given the same
	// shared directory.
	ExportRoot string
	// AllowPrivateWebhooks lets webhook subscriptions use http:// URLs and
	// endpoints on loopback, private, link-local and metadata addresses
	// (TENANTDB_ALLOW_PRIVATE_WEBHOOKS). For development and tests only.
	AllowPrivateWebhooks bool
	// MaxOpenSilos bounds the tenants' silo stores open at once (idle ones
	// beyond it are closed, least recently used first).
	MaxOpenSilos int
	// RestorePause is how long an in-place tenant restore pauses after
	// each short step, as a multiple of the step's time (up to 8 times
	// more while other requests keep coming); 0 turns the pacing off
	// (TENANTDB_RESTORE_PAUSE).
	RestorePause float64
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
		StreamRetention: 24 * time.Hour,
		MaxOpenSilos:    node.DefaultMaxOpenSilos,
		RestorePause:    node.DefaultRestorePause,
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
	str("TENANTDB_EXPORT_ROOT", &c.ExportRoot)
	str("TENANTDB_LOG_LEVEL", &c.LogLevel)
	str("TENANTDB_LOG_FORMAT", &c.LogFormat)
	str(auth.OperatorKeyEnv, &c.OperatorKey)
	str("TENANTDB_BACKEND", &c.Backend)
	str("TENANTDB_BACKEND_ENDPOINT", &c.BackendEndpoint)
	str("TENANTDB_BACKEND_REGION", &c.BackendRegion)
	str("TENANTDB_BACKEND_TABLE_PREFIX", &c.BackendTablePrefix)
	c.Platform.applyEnv(getenv)
	if v := getenv("TENANTDB_RESTORE_PAUSE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("TENANTDB_RESTORE_PAUSE must be a number, got %q", v)
		}
		c.RestorePause = f
	}
	for name, dst := range map[string]*bool{"TENANTDB_DEFAULT_TENANT": &c.DefaultTenant, "TENANTDB_FAIRNESS": &c.Fairness, "TENANTDB_CONN_GATE": &c.ConnGate,
		"TENANTDB_ALLOW_PRIVATE_WEBHOOKS": &c.AllowPrivateWebhooks} {
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
	if c.Backend != "" && c.Backend != node.BackendDynamoDB {
		return fmt.Errorf("--backend must be %s or empty (the embedded engine), got %q", node.BackendDynamoDB, c.Backend)
	}
	if c.Backend == "" && (c.BackendEndpoint != "" || c.BackendRegion != "" || c.BackendTablePrefix != "") {
		return errors.New("--backend-endpoint, --backend-region and --backend-table-prefix need --backend " + node.BackendDynamoDB)
	}
	if c.StreamRetention < time.Hour {
		return errors.New("--stream-retention must be at least 1h")
	}
	if c.StreamRollover != 0 && c.StreamRollover < time.Second {
		return errors.New("--stream-rollover must be at least 1s")
	}
	if c.MaxOpenSilos < 1 {
		return errors.New("--max-open-silos must be at least 1")
	}
	if !(c.RestorePause >= 0 && c.RestorePause <= 100) {
		return fmt.Errorf("--restore-pause must be from 0 (no pacing) to 100, got %v", c.RestorePause)
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
	cfg.benchConfig.addFlags(fs)
	cfg.Platform.addFlags(fs)
	fs.StringVar(&cfg.Backend, "backend", cfg.Backend, "where items live: empty for the embedded engine, or "+node.BackendDynamoDB+" for a remote DynamoDB-API engine, with credentials from the standard AWS chain (env TENANTDB_BACKEND)")
	fs.StringVar(&cfg.BackendEndpoint, "backend-endpoint", cfg.BackendEndpoint, "URL of the remote engine; empty means AWS DynamoDB in --backend-region (env TENANTDB_BACKEND_ENDPOINT)")
	fs.StringVar(&cfg.BackendRegion, "backend-region", cfg.BackendRegion, "region of the remote engine; empty means the AWS configuration's, else --region (env TENANTDB_BACKEND_REGION)")
	fs.StringVar(&cfg.BackendTablePrefix, "backend-table-prefix", cfg.BackendTablePrefix, "prefix of the remote engine's table name, <prefix>tenantdb (env TENANTDB_BACKEND_TABLE_PREFIX)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long to wait for in-flight requests on shutdown")
	fs.DurationVar(&cfg.StreamRetention, "stream-retention", cfg.StreamRetention, "how long DynamoDB Streams records are kept")
	fs.StringVar(&cfg.ExportRoot, "export-root", cfg.ExportRoot, "directory holding the S3 buckets of ExportTableToPointInTime and ImportTable (each tenant's under <root>/<tenant>/<env>/<bucket>); empty turns those operations off; every gateway of a fleet must be given the same shared directory (env TENANTDB_EXPORT_ROOT)")
	fs.BoolVar(&cfg.AllowPrivateWebhooks, "allow-private-webhooks", cfg.AllowPrivateWebhooks, "let webhook subscriptions use http:// and loopback, private, link-local or metadata addresses; development and tests only (env TENANTDB_ALLOW_PRIVATE_WEBHOOKS)")
	fs.DurationVar(&cfg.StreamRollover, "stream-rollover", cfg.StreamRollover, "how long each shard of a new stream is open before it closes and a child starts (0: 4h)")
	fs.IntVar(&cfg.MaxOpenSilos, "max-open-silos", cfg.MaxOpenSilos, "how many tenants' silo stores may be open at once; idle ones beyond it are closed, least recently used first, and reopen on use")
	fs.Float64Var(&cfg.RestorePause, "restore-pause", cfg.RestorePause, "how long an in-place tenant restore pauses after each short step, as a multiple of the step's time, up to 8 times more while other requests keep coming: higher leaves more to the other tenants and restores slower; 0 = no pacing (env TENANTDB_RESTORE_PAUSE)")
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
// stop accepting, finish in-flight requests, close the node. Progress
// lines for humans (and tests/harness, which waits for "listening on") go
// to out.
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

	n, err := node.Open(ctx, cfg.nodeOptions(l.Addr().String(), os.Getenv(auth.ServerKeyEnv), log))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if b := n.Bootstrap(); b.OperatorFile != "" {
		fmt.Fprintf(out, "tenantdb: operator credential written to %s (profile %s)\n", b.OperatorFile, auth.OperatorProfile)
		if b.DefaultFile != "" {
			fmt.Fprintf(out, "tenantdb: tenant %q with an admin key written to %s (profile default)\n", node.DefaultTenantName, b.DefaultFile)
		}
	}

	errc := make(chan error, 1)
	go func() { errc <- n.Serve(l) }()
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
	_ = n.Shutdown(sctx) // logged; connections closed if it timed out
	return <-errc
}

// nodeOptions maps c onto the assembly's options for a node serving at
// endpoint, with the server key material serverKey (auth.ServerKeyEnv).
func (c Config) nodeOptions(endpoint, serverKey string, log *slog.Logger) node.Options {
	o := node.Options{
		DataDir:       c.DataDir,
		ServerKey:     serverKey,
		OperatorKey:   c.OperatorKey,
		Region:        c.Region,
		Endpoint:      endpoint,
		DefaultTenant: c.DefaultTenant,
		Fairness:      c.Fairness,
		ConnGate:      c.ConnGate,
		Pprof:         c.Pprof,
		UnsafeNoSync:  c.UnsafeNoSync,
		Platform:      node.Platform(c.Platform),
		Logger:        log,
		Backend:       c.Backend,
		Remote:        node.Remote{Endpoint: c.BackendEndpoint, Region: c.BackendRegion, TablePrefix: c.BackendTablePrefix},

		StreamRetention: c.StreamRetention,
		StreamRollover:  c.StreamRollover,
		ExportRoot:      c.ExportRoot,

		AllowPrivateWebhooks: c.AllowPrivateWebhooks,
		MaxOpenSilos:         c.MaxOpenSilos,
		RestorePause:         c.RestorePause,
	}
	if c.RestorePause == 0 {
		o.RestorePause = -1 // NB: the flag's 0 is "no pacing", node's is "the default"
	}
	c.benchConfig.apply(&o)
	return o
}
