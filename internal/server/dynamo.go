package server

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Header names in canonical form, so that handlers can index the header
// map directly.
const (
	hdrTarget      = "X-Amz-Target"
	hdrRequestID   = "X-Amzn-Requestid"
	hdrCRC32       = "X-Amz-Crc32"
	hdrContentType = "Content-Type"
	hdrContentLen  = "Content-Length"
)

var contentTypeJSON10 = []string{"application/x-amz-json-1.0"}

// buffer is a pooled byte slice for request and response bodies.
type buffer struct{ b []byte }

var buffers = sync.Pool{New: func() any { return &buffer{b: make([]byte, 0, 8<<10)} }}

// maxPooled is the largest buffer returned to the pool; bigger ones (a
// 16 MB batch) are left to the garbage collector.
const maxPooled = 1 << 20

// maxPrealloc bounds the buffer allocated from Content-Length before any
// body byte has arrived; larger bodies grow as their bytes arrive.
const maxPrealloc = 64 << 10

// largeBody is the size from which a request counts against the server's
// budget for large requests in flight (Server.bigBodies).
const largeBody = 64 << 10

func getBuffer() *buffer { return buffers.Get().(*buffer) }

func putBuffer(b *buffer) {
	if cap(b.b) <= maxPooled {
		b.b = b.b[:0]
		buffers.Put(b)
	}
}

// exchange is the state of one DynamoDB request, for the response and the
// request log.
type exchange struct {
	start     time.Time
	id        string
	op        string // "" until the target is known to be valid
	principal tenancy.Principal
	authed    bool
	bytesIn   int
	finished  bool // the response has been (or is being) written
}

// serveDynamo handles one DynamoDB JSON 1.0 request.
func (s *Server) serveDynamo(w http.ResponseWriter, r *http.Request) {
	x := exchange{start: time.Now(), id: s.ids.next()}
	w.Header()[hdrRequestID] = []string{x.id}
	s.m.inFlight.Inc()
	defer s.m.inFlight.Dec()

	in := getBuffer()
	defer putBuffer(in)
	out := getBuffer()
	defer putBuffer(out)

	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			err := fmt.Errorf("server: panic in %s: %v\n%s", x.op, v, debug.Stack())
			if x.finished {
				s.log.Error("panic while writing a response", "request_id", x.id, "error", err)
				return
			}
			s.finish(w, r, &x, out, nil, err)
		}
	}()

	output, err := s.handle(r, &x, in)
	s.finish(w, r, &x, out, output, err)
}

// handle runs the request through auth, the guard, decoding and the
// backend.
func (s *Server) handle(r *http.Request, x *exchange, in *buffer) (wire.Output, error) {
	body, err := s.readBody(r, in)
	if err != nil {
		return nil, err
	}
	x.bytesIn = len(body)

	ctx := audit.WithSource(r.Context(), r.RemoteAddr)
	p, err := s.auth.Authenticate(ctx, &sigv4.Request{
		Method:   r.Method,
		Path:     r.URL.EscapedPath(),
		RawQuery: r.URL.RawQuery,
		Host:     r.Host,
		Header:   r.Header,
		Body:     body,
	})
	if err != nil {
		return nil, err
	}
	x.principal, x.authed = p, true
	var gc *gatedConn
	if s.gate != nil {
		if gc = gatedConnOf(r); gc != nil {
			gc.bind(p.Tenant)
		}
	}

	target := r.Header[hdrTarget]
	if len(target) == 0 || target[0] == "" {
		return nil, apierr.New(apierr.UnknownOperation, "The request has no X-Amz-Target header naming an operation")
	}
	op, ok := dynamo.FromTarget(target[0])
	if !ok {
		return nil, apierr.New(apierr.UnknownOperation, "Unknown operation %s", apierr.Clip(target[0]))
	}
	x.op = op.Name

	scope, err := s.guard.Admit(p, op.Action)
	if err != nil {
		s.reportDenied(ctx, p, op.Name, err)
		return nil, err
	}
	// NB: a decoded request can take tens of times its wire size in
	// memory; large bodies therefore share a server-wide budget while they
	// are decoded and executed, so a few huge requests cannot exhaust
	// memory. Small bodies (the hot path) skip it.
	if n := int64(len(body)); n >= largeBody {
		n = min(n, s.maxBody)
		if err := s.bigBodies.Acquire(ctx, n); err != nil {
			return nil, apierr.Wrap(apierr.Throttling, err, "The server is busy with large requests; retry")
		}
		defer s.bigBodies.Release(n)
	}
	req, err := op.Decode(body)
	if err != nil {
		return nil, err
	}
	if gc != nil {
		// The Backend's own admission takes over from here.
		gc.handOff()
	}
	out, err := s.backend.Handle(ctx, scope, op, req)
	if err != nil {
		s.reportDenied(ctx, p, op.Name, err)
	} else if d, ok := out.(partlyDenied); ok && s.denied != nil {
		for _, reason := range d.Denials() {
			s.denied(ctx, p, "dynamodb:"+op.Name, reason)
		}
	}
	return out, err
}

// partlyDenied is an output of an operation that succeeded while refusing
// some of its parts with AccessDenied (BatchExecuteStatement's
// statements); the refusals are reported like a refused request's.
type partlyDenied interface {
	Denials() []string
}

// reportDenied tells the Denied hook about an AccessDenied error, or an
// error marked as the answer to a cross-tenant attempt (apierr.Error.Denial).
func (s *Server) reportDenied(ctx context.Context, p tenancy.Principal, op string, err error) {
	var e *apierr.Error
	if s.denied == nil || !errors.As(err, &e) || e.Kind != apierr.AccessDenied && !e.Denial {
		return
	}
	s.denied(ctx, p, "dynamodb:"+op, e.Message)
}

// errTooLarge is the answer to a body over the limit.
func (s *Server) errTooLarge() error {
	return apierr.New(apierr.RequestTooLarge, "Request body exceeds the maximum size of %d bytes", s.maxBody)
}

// readBody reads the whole request body into buf, refusing bodies over the
// limit before reading them when Content-Length announces them and as soon
// as they pass it otherwise. The server's ReadTimeout bounds slow bodies.
func (s *Server) readBody(r *http.Request, buf *buffer) ([]byte, error) {
	if r.ContentLength > s.maxBody {
		return nil, s.errTooLarge()
	}
	b := buf.b[:0]
	// NB: never trust Content-Length for more than a small up-front
	// allocation: a client announcing large bodies and sending nothing
	// would otherwise pin memory per connection before authentication.
	if n := int(r.ContentLength); n > cap(b) && n <= maxPrealloc {
		b = make([]byte, 0, n+1) // +1: room to see EOF without growing
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > s.maxBody {
			buf.b = b
			return nil, s.errTooLarge()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			buf.b = b
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, s.errTooLarge()
			}
			return nil, apierr.Wrap(apierr.Serialization, err, "Could not read the request body")
		}
	}
	buf.b = b
	return b, nil
}

// finish encodes the output or error, writes the response, and records
// metrics and the request log line.
func (s *Server) finish(w http.ResponseWriter, r *http.Request, x *exchange, buf *buffer, output wire.Output, err error) {
	x.finished = true
	status := http.StatusOK
	var body []byte
	if err == nil {
		body, err = wire.AppendOutput(buf.b[:0], output)
		if err != nil {
			err = fmt.Errorf("server: encoding %s output: %w", x.op, err)
		}
	}
	if err != nil {
		body, status = wire.AppendError(buf.b[:0], err)
	}
	buf.b = body

	h := w.Header()
	h[hdrContentType] = contentTypeJSON10
	h[hdrContentLen] = []string{strconv.Itoa(len(body))}
	h[hdrCRC32] = []string{strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)}
	w.WriteHeader(status)
	_, _ = w.Write(body)

	elapsed := time.Since(x.start)
	kind := apierr.Internal
	if err != nil {
		kind = apierr.KindOf(err)
	}
	s.m.observe(x.op, err == nil, kind, elapsed)
	s.logRequest(r.Context(), x, status, len(body), elapsed, err)
}

// logRequest writes the request's log line. It never logs a secret or an
// item value: client errors are logged by code only, server errors with
// their cause chain (which comes from our own code, not from items).
func (s *Server) logRequest(ctx context.Context, x *exchange, status, bytesOut int, elapsed time.Duration, err error) {
	level := slog.LevelDebug
	var kind apierr.Kind
	if err != nil {
		kind = apierr.KindOf(err)
	}
	switch {
	case err == nil || quietKind(kind):
	case status >= 500:
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	var suppressed int64
	if level == slog.LevelInfo {
		ok, n := s.clientErrLog.allow(time.Now())
		if !ok {
			return
		}
		suppressed = n
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("request_id", x.id),
		slog.String("op", x.op),
		slog.Int("status", status),
		slog.Duration("latency", elapsed),
		slog.Int("bytes_in", x.bytesIn),
		slog.Int("bytes_out", bytesOut),
	)
	if x.authed {
		if !x.principal.Tenant.IsZero() {
			attrs = append(attrs, slog.String("tenant", x.principal.Tenant.String()))
		}
		attrs = append(attrs, slog.String("role", x.principal.Role.String()), slog.String("key_id", x.principal.KeyID))
	}
	if err != nil {
		attrs = append(attrs, slog.String("code", wire.ErrorCode(kind)))
		if status >= 500 {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed_before", suppressed))
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}
