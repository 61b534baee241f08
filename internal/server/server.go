// Package server is tenantdb's HTTP front end: one listener that serves
// DynamoDB's JSON 1.0 protocol (POST / with X-Amz-Target), the admin REST
// API under /v1/, health checks and Prometheus /metrics.
//
// A DynamoDB request flows one way: read the body (bounded) →
// authenticate (SigV4, through the Authenticator) → find the operation in
// package dynamo's table by its X-Amz-Target → tenancy.Guard.Admit (which
// alone issues the tenant Scope) → decode → the dynamo.Handler → encode.
// Handlers stay thin; policies that apply to every operation (quotas,
// metering) wrap the Handler as decorators.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/semaphore"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Authenticator turns a signed request into the principal that signed it.
// It returns an *apierr.Error of an authentication kind
// (MissingAuthenticationToken, IncompleteSignature, InvalidSignature,
// UnrecognizedClient, ExpiredToken, TenantSuspended, ...) when it cannot.
// r.Body is the complete request body; r and its fields must not be
// retained after Authenticate returns.
type Authenticator interface {
	Authenticate(ctx context.Context, r *sigv4.Request) (tenancy.Principal, error)
}

// MaxRequestBytes is DynamoDB's limit on the size of a request body.
const MaxRequestBytes = 16 << 20

// Options configure a Server. Backend, Auth and Guard are required.
type Options struct {
	// Backend runs the operations: the engine, bound with dynamo.Bind,
	// under its decorators (quotas, metering).
	Backend dynamo.Handler
	// Auth authenticates every DynamoDB request.
	Auth Authenticator
	// Guard admits a principal to an operation and issues its Scope.
	Guard *tenancy.Guard
	// Admin, if set, serves everything under /v1/.
	Admin http.Handler
	// Console, if set, serves the web console under /console/.
	Console http.Handler
	// Denied, if set, is told of every request refused with
	// AccessDeniedException, by the guard or the backend, after
	// authentication succeeded (authentication failures are the
	// Authenticator's to report), and of every statement a successful
	// BatchExecuteStatement refused so. action is "dynamodb:<Operation>". It is
	// the audit hook; the request's context carries the client address
	// (audit.Source).
	Denied func(ctx context.Context, p tenancy.Principal, action, reason string)
	// Registry, if set, receives the server's metrics and is served at
	// /metrics to callers that OpsAuth accepts.
	Registry *prometheus.Registry
	// Profiling serves net/http/pprof under /debug/pprof/ to callers that
	// OpsAuth accepts.
	Profiling bool
	// OpsAuth guards /metrics and /debug/pprof/: it gets the request's
	// bearer token ("" if none) and returns nil only for the operator.
	// NB: metrics carry per-tenant series, so they are never served
	// without it; nil OpsAuth answers every such request with 401.
	OpsAuth func(ctx context.Context, bearer string) error
	// Logger receives one line per request (Debug for successes, Info for
	// client errors, Error for server errors); nil means slog.Default().
	Logger *slog.Logger

	// ConnGate, if set, gates every connection's requests per tenant from
	// their first byte (conngate.go): reading, authentication and decoding
	// run under the tenant's share of the server, not only the Backend.
	ConnGate ConnGate

	// MaxBodyBytes bounds request bodies; 0 means MaxRequestBytes.
	MaxBodyBytes int64
	// Timeouts of the HTTP server; zero values take the defaults below.
	ReadHeaderTimeout time.Duration // default 10s
	ReadTimeout       time.Duration // whole request including body; default 60s
	WriteTimeout      time.Duration // from the end of the headers to the end of the response; default 120s
	IdleTimeout       time.Duration // keep-alive connections; default 120s
}

// Server serves tenantdb's HTTP API. It is an http.Handler; Serve runs it
// on a listener with the configured timeouts.
type Server struct {
	backend dynamo.Handler
	auth    Authenticator
	guard   *tenancy.Guard
	admin   http.Handler
	console http.Handler
	denied  func(ctx context.Context, p tenancy.Principal, action, reason string)
	opsAuth func(ctx context.Context, bearer string) error
	metrics http.Handler
	pprof   http.Handler
	log     *slog.Logger
	// clientErrLog samples the Info lines of client errors (logsample.go).
	clientErrLog logSampler
	maxBody      int64
	// bigBodies bounds the bytes of large requests being decoded and run.
	bigBodies *semaphore.Weighted
	m         *metrics
	ids       idGen
	gate      ConnGate // nil: connections are not gated
	http      *http.Server
}

// New returns a Server. It fails if a required option is missing or the
// metrics cannot be registered.
func New(o Options) (*Server, error) {
	if o.Backend == nil || o.Auth == nil || o.Guard == nil {
		return nil, errors.New("server: Backend, Auth and Guard are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = MaxRequestBytes
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.ReadTimeout, 60*time.Second)
	def(&o.WriteTimeout, 120*time.Second)
	def(&o.IdleTimeout, 120*time.Second)

	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry() // metrics kept but not served
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		backend:      o.Backend,
		auth:         o.Auth,
		guard:        o.Guard,
		admin:        o.Admin,
		console:      o.Console,
		denied:       o.Denied,
		opsAuth:      o.OpsAuth,
		log:          o.Logger,
		clientErrLog: logSampler{n: clientErrorBurst},
		maxBody:      o.MaxBodyBytes,
		// NB: at least one maximal request fits; four maximal requests (or
		// many mid-sized ones) may be in flight at once.
		bigBodies: semaphore.NewWeighted(4 * o.MaxBodyBytes),
		m:         m,
		gate:      o.ConnGate,
	}
	s.ids.init()
	if o.Registry != nil {
		s.metrics = promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{})
	}
	if o.Profiling {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		s.pprof = mux
	}
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	if s.gate != nil {
		s.http.ConnContext = gateConnContext
		s.http.ConnState = gateConnState
		// NB: the gate follows HTTP/1.x's one request at a time per
		// connection; keep HTTP/2 (which would multiplex) off.
		s.http.Protocols = new(http.Protocols)
		s.http.Protocols.SetHTTP1(true)
	}
	return s, nil
}

// Serve accepts connections on l until Shutdown or Close, and then returns
// nil; otherwise it returns the listener's error.
func (s *Server) Serve(l net.Listener) error {
	// NB: innermost, so that the gate's connection is the one net/http
	// sees (gatedConnOf).
	l = headLimitListener{l}
	if s.gate != nil {
		l = &gateListener{Listener: l, gate: s.gate}
	}
	if err := s.http.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections and waits, until ctx ends, for
// in-flight requests to finish.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close closes the listeners and all connections at once.
func (s *Server) Close() error { return s.http.Close() }

// ServeHTTP routes a request: DynamoDB on POST /, the admin API under
// /v1/, the web console under /console/, health on GET /, metrics on GET
// /metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	dynamo := path == "/" && r.Method == http.MethodPost
	if s.gate != nil {
		if c := gatedConnOf(r); c != nil {
			if err := c.ensure(); err != nil {
				w.Header().Set("Connection", "close")
				s.writePlainError(w, apierr.Wrap(apierr.ServiceUnavailable, err, "The server is busy; retry"))
				return
			}
			if !dynamo {
				// Only DynamoDB requests are gated past their headers.
				c.handOff()
			}
		}
	}
	switch {
	case dynamo:
		s.serveDynamo(w, r)
	case path == "/v1" || strings.HasPrefix(path, "/v1/"):
		if s.admin == nil {
			s.writePlainError(w, apierr.New(apierr.NotFound, "The admin API is not enabled on this server"))
			return
		}
		s.admin.ServeHTTP(w, r)
	case s.console != nil && (path == "/console" || strings.HasPrefix(path, "/console/")):
		s.console.ServeHTTP(w, r)
	case (path == "/" || path == "/healthz") && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("healthy: tenantdb\n"))
		}
	case path == "/metrics" && s.metrics != nil && r.Method == http.MethodGet:
		if s.authorizeOps(w, r) {
			s.metrics.ServeHTTP(w, r)
		}
	case s.pprof != nil && strings.HasPrefix(path, "/debug/pprof/"):
		if s.authorizeOps(w, r) {
			s.pprof.ServeHTTP(w, r)
		}
	case path == "/" || path == "/healthz":
		s.writePlainError(w, apierr.New(apierr.MethodNotAllowed, "Method %s is not allowed on %s", r.Method, path))
	default:
		s.writePlainError(w, apierr.New(apierr.NotFound, "No such resource: %s", apierr.Clip(path)))
	}
}

// authorizeOps admits only the operator (a bearer key) to the operational
// endpoints, and answers everyone else with 401.
func (s *Server) authorizeOps(w http.ResponseWriter, r *http.Request) bool {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if s.opsAuth != nil && tok != "" {
		if err := s.opsAuth(r.Context(), strings.TrimSpace(tok)); err == nil {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="tenantdb"`)
	s.writePlainError(w, apierr.New(apierr.Unauthorized, "This endpoint requires the operator key as a bearer token"))
	return false
}

// writePlainError answers a non-DynamoDB request with the wire error shape.
func (s *Server) writePlainError(w http.ResponseWriter, err error) {
	body, status := wire.AppendError(nil, err)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
