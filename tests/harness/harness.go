// Package harness starts a tenantdb server for black-box tests and hands
// out credentials and aws-sdk-go-v2 clients for it.
//
// By default the server runs in-process on 127.0.0.1:0, over in-memory
// storage, assembled by internal/node exactly as `tenantdb serve`
// assembles it. With TENANTDB_BIN set to a built tenantdb
// binary, Start runs that binary instead, on a temporary data directory,
// so that the same suites test the real executable:
//
//	go build -o /tmp/tenantdb ./cmd/tenantdb
//	TENANTDB_BIN=/tmp/tenantdb go test ./tests/...
//
// Tests talk to either only through the network: the DynamoDB API with
// tenant keys, and the admin API (/v1/) with the operator key.
package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/internal/sdkhttp"
)

// BinEnv names the environment variable that selects binary mode.
const BinEnv = "TENANTDB_BIN"

// Region is the region the clients sign for.
const Region = "us-east-1"

// Credential is an API key: the SigV4 pair and the full key.
type Credential struct {
	TenantID        string // 32 hex; "" for the operator
	AccessKeyID     string
	SecretAccessKey string
	Key             string // the full sk_... key (bearer token of the admin API)
}

// Options tune Start.
type Options struct {
	// Fairness enables quota admission control (as `tenantdb serve` does by
	// default). Off by default so that suites are never throttled.
	Fairness bool
	// ConnGate gates each connection's next request per tenant (serve
	// --conn-gate); it needs Fairness.
	ConnGate bool
	// Platform configures platform users' OIDC sign-in (serve --jwks,
	// --jwt-hs256-secret, --jwt-issuer, --jwt-audience); zero means off.
	Platform node.Platform
	// Logger receives the in-process server's logs; nil discards them
	// below Error.
	Logger *slog.Logger
	// Remote runs the server as a gateway over the remote (dynamodb)
	// backend, whose engine is a second in-process tenantdb reached with a
	// tenant credential of its own through the AWS shared-credentials
	// chain. Setting RemoteEnv to 1 does this for every Start.
	Remote bool
	// AllowPrivateWebhooks lets webhook subscriptions reach loopback
	// receivers over http:// (serve --allow-private-webhooks).
	AllowPrivateWebhooks bool
	// RemoteEngine, with Remote, is the URL of an external engine (such
	// as dynalite) to use instead of a second tenantdb; the gateway signs
	// for it with a dummy credential.
	RemoteEngine string
	// RemoteWriteLimit, with Remote, puts a per-partition-key write limit
	// (units per second) in front of the engine, as AWS DynamoDB has (1,000
	// WCU per partition key): for hot-tenant sharding tests and benchmarks
	// only (partlimit.go). 0 means none.
	RemoteWriteLimit float64
	// RemoteAutoShard, with RemoteWriteLimit, lets the gateway raise a
	// hot table's shard count from the throttling it sees (off otherwise,
	// so that a benchmark's shard count stays the one it set).
	RemoteAutoShard bool
	// MaxOpenSilos bounds the silo stores open at once (serve
	// --max-open-silos); 0 means the server's default.
	MaxOpenSilos int

	// CPUs, for a binary server, pins it to those CPUs (`taskset -c
	// CPUs`), for benchmarks that give servers CPU budgets of their own.
	CPUs string

	// ExportRoot is the directory of the DynamoDB API's export and import
	// buckets (serve --export-root); "" turns those operations off.
	ExportRoot string

	// Env is added to a binary server's environment (KEY=value).
	Env []string

	engine bool // the stand-in engine of a Remote server: never itself remote
	// gateways > 1 runs a Remote server as that many gateways over one
	// stand-in engine (gateways.go); 0 takes GatewaysEnv.
	gateways int
	// gateway, if set, is the shared engine of a fleet's gateway
	// (gateways.go), and serverKey the fleet's server key.
	gateway   *node.Remote
	serverKey string
	// dataDir, for a fleet's gateway, is its data directory ("" in
	// memory).
	dataDir string
	// operator is the fleet's operator credential, for a binary gateway
	// that finds the operator already in the engine (and so writes no
	// operator-credentials file).
	operator *Credential
}

// remoteTests holds the names (with a trailing /) of the tests whose
// servers run over the remote backend (RemoteFor).
var remoteTests sync.Map

// RemoteFor makes every in-process Start within test t's subtests a
// gateway over the remote backend (Options.Remote), so that a suite can
// run its own tests once more over it: over a second tenantdb per Start
// when engine is "", else over the engine at that URL (StartDynalite),
// each gateway in a table of its own. t must not call Start itself.
func RemoteFor(t *testing.T, engine string) {
	remoteFor0(t, remoteRun{engine: engine})
}

// RemoteGatewaysFor is RemoteFor over n gateways sharing one stand-in
// engine, behind a front that alternates requests between them (as
// GatewaysEnv does for every Start).
func RemoteGatewaysFor(t *testing.T, n int) {
	remoteFor0(t, remoteRun{gateways: n})
}

// remoteRun is how the servers of a RemoteFor test run.
type remoteRun struct {
	engine   string // external engine URL; "" for a stand-in tenantdb
	gateways int    // > 1: that many gateways over one stand-in engine
}

func remoteFor0(t *testing.T, r remoteRun) {
	prefix := t.Name() + "/"
	remoteTests.Store(prefix, r)
	t.Cleanup(func() { remoteTests.Delete(prefix) })
}

// remoteFor reports whether t runs within a RemoteFor test, and how.
func remoteFor(t testing.TB) (remoteRun, bool) {
	var r remoteRun
	found := false
	remoteTests.Range(func(k, v any) bool {
		if strings.HasPrefix(t.Name(), k.(string)) {
			r, found = v.(remoteRun), true
		}
		return !found
	})
	return r, found
}

// gateways numbers the gateways over shared external engines.
var gateways atomic.Int64

// RemoteEnv names the environment variable that runs every in-process
// Start as a gateway over a stand-in engine (Options.Remote).
const RemoteEnv = "TENANTDB_REMOTE"

// Server is a running tenantdb.
type Server struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:43121.
	Endpoint string
	// Operator is the operator credential.
	Operator Credential
	// Default is an admin key of a tenant named "default".
	Default Credential
	// Binary reports whether the server is the TENANTDB_BIN executable.
	Binary bool
	// DataDir is the binary's data directory ("" in-process).
	DataDir string
	// Remote reports whether the server is a gateway over the remote
	// backend (Options.Remote), so that suites can skip what it does not
	// serve yet, saying so.
	Remote bool

	defaultKey auth.APIKey // in-process: the default tenant's key

	cmd *exec.Cmd
}

// Start starts a server for t and stops it when t ends.
func Start(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if bin := os.Getenv(BinEnv); bin != "" {
		return startBinary(t, bin, t.TempDir(), o)
	}
	return startInProcess(t, o)
}

func startInProcess(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	if r, ok := remoteFor(t); ok {
		o.Remote = true
		if o.RemoteEngine == "" {
			o.RemoteEngine = r.engine
		}
		if o.gateways == 0 {
			o.gateways = r.gateways
		}
	}
	s, stop, err := StartInProcess(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return s
}

// StartInProcess starts an in-process server outside a test (in a
// TestMain, for the Example functions of a package); stop shuts it down.
// A nil o.Logger discards the server's logs below Error.
func StartInProcess(o Options) (s *Server, stop func() error, err error) {
	ctx := context.Background()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	no := node.Options{
		InMemory:      true,
		Region:        Region,
		DefaultTenant: true,
		Fairness:      o.Fairness,
		ConnGate:      o.ConnGate,
		Platform:      o.Platform,
		Logger:        log,
		ExportRoot:    o.ExportRoot,

		AllowPrivateWebhooks: o.AllowPrivateWebhooks,
		MaxOpenSilos:         o.MaxOpenSilos,
	}
	var stopEngine func() error // the stand-in engine's, for a Remote server
	if o.gateway != nil {
		no.Remote, no.Backend, no.ServerKey = *o.gateway, node.BackendDynamoDB, o.serverKey
		if o.dataDir != "" {
			no.InMemory, no.DataDir, no.UnsafeNoSync = false, o.dataDir, true
		}
	} else if n := gatewaysWanted(o); n > 1 {
		return startClusterFront(o, n)
	} else if !o.engine && (o.Remote || os.Getenv(RemoteEnv) == "1") {
		if no.Remote, stopEngine, err = remoteEngine(o); err != nil {
			return nil, nil, err
		}
		no.Backend = node.BackendDynamoDB
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, errors.Join(err, stop0(stopEngine))
	}
	no.Endpoint = l.Addr().String()
	n, err := node.Open(ctx, no)
	if err != nil {
		l.Close()
		return nil, nil, errors.Join(err, stop0(stopEngine))
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	stop = func() error {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var errs []error
		if err := n.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("harness: shutdown: %w", err))
		}
		if err := <-served; err != nil {
			errs = append(errs, fmt.Errorf("harness: serve: %w", err))
		}
		if err := n.Close(); err != nil {
			errs = append(errs, fmt.Errorf("harness: close: %w", err))
		}
		errs = append(errs, stop0(stopEngine))
		return errors.Join(errs...)
	}
	b := n.Bootstrap()
	s = &Server{
		Endpoint:   "http://" + l.Addr().String(),
		Remote:     no.Backend != "",
		DataDir:    no.DataDir,
		defaultKey: b.Default,
	}
	if b.Operator.Secret != "" {
		s.Operator = credential(b.Operator)
	}
	if b.Default.Secret != "" {
		s.Default = credential(b.Default)
	}
	return s, stop, nil
}

func stop0(stop func() error) error {
	if stop == nil {
		return nil
	}
	return stop()
}

// remoteEngine returns the remote backend's settings for a gateway of o:
// over o.RemoteEngine (each gateway in a table of its own, signing with
// a dummy credential), or over a stand-in tenantdb it starts, reached
// with that tenantdb's default tenant key through a shared-credentials
// file (the AWS chain); stop stops the stand-in and removes the file.
func remoteEngine(o Options) (r node.Remote, stop func() error, err error) {
	dir, err := os.MkdirTemp("", "tenantdb-engine-")
	if err != nil {
		return r, nil, err
	}
	creds := filepath.Join(dir, "engine-credentials")
	r = node.Remote{Endpoint: o.RemoteEngine, Region: Region, TablePrefix: "gw-", CredentialsFile: creds, Profile: "engine"}
	if r.Endpoint != "" {
		// A shared external engine: each gateway keeps to a table of its own.
		r.TablePrefix = fmt.Sprintf("gw%d-", gateways.Add(1))
		err := os.WriteFile(creds, []byte("[engine]\naws_access_key_id = dummy\naws_secret_access_key = dummy\n"), 0o600)
		return r, func() error { return os.RemoveAll(dir) }, err
	}
	engine, stopEngine, err := StartInProcess(Options{Logger: o.Logger, engine: true})
	if err != nil {
		os.RemoveAll(dir)
		return r, nil, err
	}
	stop = func() error { return errors.Join(stopEngine(), os.RemoveAll(dir)) }
	r.Endpoint = engine.Endpoint
	if err := auth.WriteCredentialsFile(creds, "engine", engine.defaultKey, Region, engine.Endpoint); err != nil {
		return r, nil, errors.Join(err, stop())
	}
	if o.RemoteWriteLimit > 0 {
		// NB: the engine table's partition key attribute (internal/remote).
		limited, stopLimit, err := startPartLimit(engine.Endpoint, "tenantdb:pk", o.RemoteWriteLimit)
		if err != nil {
			return r, nil, errors.Join(err, stop())
		}
		r.Endpoint = limited
		if !o.RemoteAutoShard {
			r.AutoShardMax = -1
		}
		stop0 := stop
		stop = func() error { stopLimit(); return stop0() }
	}
	return r, stop, nil
}

// credential returns k as a Credential.
func credential(k auth.APIKey) Credential {
	c := Credential{AccessKeyID: k.AccessKeyID(), SecretAccessKey: k.Secret, Key: k.String()}
	if !k.IsOperator() {
		c.TenantID = k.Tenant.String()
	}
	return c
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+),`)

// StartBinary runs the tenantdb executable bin on dataDir (which may hold
// data from an earlier run) and returns when it accepts requests. Stop or
// Kill it, or let t's cleanup stop it.
func StartBinary(t testing.TB, bin, dataDir string, extraArgs ...string) *Server {
	t.Helper()
	return startBinary(t, bin, dataDir, Options{Fairness: true}, extraArgs...)
}

func startBinary(t testing.TB, bin, dataDir string, o Options, extraArgs ...string) *Server {
	t.Helper()
	args := []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "warn",
		fmt.Sprintf("--fairness=%v", o.Fairness)}
	if o.ConnGate {
		args = append(args, "--conn-gate")
	}
	if o.ExportRoot != "" {
		args = append(args, "--export-root", o.ExportRoot)
	}
	if o.AllowPrivateWebhooks {
		args = append(args, "--allow-private-webhooks")
	}
	if o.MaxOpenSilos > 0 {
		args = append(args, fmt.Sprintf("--max-open-silos=%d", o.MaxOpenSilos))
	}
	for flag, v := range map[string]string{"--jwks": o.Platform.JWKS, "--jwt-hs256-secret": o.Platform.HS256Secret,
		"--jwt-issuer": o.Platform.Issuer, "--jwt-audience": o.Platform.Audience} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	args = append(args, extraArgs...)
	cmd := exec.Command(bin, args...)
	if o.CPUs != "" {
		cmd = exec.Command("taskset", append([]string{"-c", o.CPUs, bin}, args...)...)
	}
	cmd.Env = append(append(os.Environ(), "TENANTDB_ADDR=", "TENANTDB_DATA_DIR="), o.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: starting %s: %v", bin, err)
	}
	s := &Server{Binary: true, DataDir: dataDir, cmd: cmd}
	t.Cleanup(func() { s.Stop(t) })

	// Read stderr until the listening line; keep draining it afterwards
	// (into the test log) so that the process never blocks on a full pipe.
	found := make(chan string, 1)
	var tail tailBuffer
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			tail.add(line)
			if m := listeningRE.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case ep, ok := <-found:
		if !ok {
			t.Fatalf("harness: %s exited before listening:\n%s", bin, tail.String())
		}
		s.Endpoint = ep
	case <-time.After(60 * time.Second):
		t.Fatalf("harness: %s did not start within 60s:\n%s", bin, tail.String())
	}

	op, err := auth.ReadCredentialsFile(filepath.Join(dataDir, auth.OperatorCredentialsFile), auth.OperatorProfile)
	switch {
	case err == nil:
		s.Operator = credential(op)
	case o.operator != nil && errors.Is(err, os.ErrNotExist):
		s.Operator = *o.operator // a later gateway of a fleet
	default:
		t.Fatal(err)
	}
	if d, err := auth.ReadCredentialsFile(filepath.Join(dataDir, node.DefaultCredentialsFile), "default"); err == nil {
		s.Default = credential(d)
	} else {
		s.Default = s.NewTenant(t, "default", "admin")
	}
	return s
}

// Stop stops a binary server with SIGTERM and waits for it to exit; it
// does nothing in-process or if the process is gone.
func (s *Server) Stop(t testing.TB) {
	if s.cmd == nil || s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("harness: tenantdb exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		t.Errorf("harness: tenantdb did not exit within 30s of SIGTERM")
	}
}

// Kill kills a binary server with SIGKILL (kill -9) and waits for it.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("harness: Kill needs a binary server")
	}
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Pid is the process id of a binary server (0 in-process).
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Admin returns an admin API client with the operator key.
func (s *Server) Admin() *client.Client {
	return &client.Client{Endpoint: s.Endpoint, Key: s.Operator.Key}
}

// NewTenant creates a tenant named name and a key for it with role
// ("app", "read" or "admin") through the admin API.
func (s *Server) NewTenant(t testing.TB, name, role string) Credential {
	t.Helper()
	ctx := context.Background()
	c := s.Admin()
	tn, err := c.CreateTenant(ctx, client.CreateTenantRequest{Name: name, Slug: uniqueSlug(name)})
	if err != nil {
		t.Fatalf("harness: create tenant %q: %v", name, err)
	}
	return s.NewKey(t, tn.ID, role)
}

// NewKey creates another key with role for tenant id.
func (s *Server) NewKey(t testing.TB, tenantID, role string) Credential {
	t.Helper()
	k, err := s.Admin().CreateKey(context.Background(), tenantID, client.CreateKeyRequest{Role: role})
	if err != nil {
		t.Fatalf("harness: create key for %s: %v", tenantID, err)
	}
	return Credential{TenantID: tenantID, AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, Key: k.Key}
}

var slugs struct {
	sync.Mutex
	n int
}

// uniqueSlug keeps tenant names reusable across one server's tests.
func uniqueSlug(name string) string {
	slugs.Lock()
	defer slugs.Unlock()
	slugs.n++
	base := catalog.Slugify(name)
	if base == "" {
		base = "t"
	}
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("%s-%d", base, slugs.n)
}

// Client returns a DynamoDB client for c that does not retry, so that
// tests see every error.
func (s *Server) Client(c Credential) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
		RetryMaxAttempts: 1,
		HTTPClient:       httpClient,
	})
}

// httpClient is shared by all clients, with enough idle connections for
// concurrent tests. NB: OwnBody, because the clients do not retry (see
// sdkhttp.OwnBody: without it about one request in a thousand fails with
// "use of closed network connection" on the client side).
var httpClient = sdkhttp.OwnBody(&http.Client{Transport: &http.Transport{
	MaxIdleConns:        256,
	MaxIdleConnsPerHost: 256,
	IdleConnTimeout:     30 * time.Second,
}})

// Env returns environment variables that point the AWS CLI or boto3 at s
// with credential c (and nothing from the user's own AWS configuration).
func (s *Server) Env(c Credential) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"AWS_ACCESS_KEY_ID="+c.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+c.SecretAccessKey,
		"AWS_DEFAULT_REGION="+Region,
		"AWS_REGION="+Region,
		"AWS_ENDPOINT_URL="+s.Endpoint,
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_PAGER=",
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// testWriter sends log output to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// tailBuffer keeps the last lines of a process's output for failure
// messages.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *tailBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if len(b.lines) > 50 {
		b.lines = b.lines[1:]
	}
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

var _ io.Writer = testWriter{}
