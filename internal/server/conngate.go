package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// ConnGate admits the requests of HTTP connections per tenant
// (*quota.Manager implements it). AcquireConn waits until the next request
// of a connection bound to tenant t may be read and served; the zero
// TenantID stands for a connection on which no request has been verified
// yet. release is called exactly once. An error (the request is shed, or
// ctx ended) closes the connection.
type ConnGate interface {
	AcquireConn(ctx context.Context, t tenancy.TenantID) (release func(), err error)
}

// The connection gate (Options.ConnGate) extends fair admission to the
// work the server does before a request reaches the quota decorator:
// reading and parsing the request, SigV4 verification and decoding. On
// 2 cores, a tenant within its quota but with many connections otherwise
// keeps every core busy with exactly that work, and other tenants' requests
// wait in the Go scheduler's run queue (bench/results/noisy.md, phase 3).
//
// Every accepted connection is wrapped (gatedConn). When the first bytes
// of a request arrive, Read takes a slot for the connection's tenant
// before it hands them to net/http, and blocks there while the tenant is
// over its share. The slot is given back when the request reaches the
// Backend (whose own admission gates take over from there, and whose
// writes may wait for a WAL sync that costs no CPU), or otherwise when the
// response has been written (http.StateIdle), or when the connection is
// hijacked or closed.
//
// NB: a connection never holds a slot while idle. Read first waits for
// bytes without a slot (the underlying Read), and only then acquires:
// between requests net/http's next Read (bufio Peek) is a plain wait for
// the client. The read net/http keeps pending during a handler (to notice
// a client going away) never acquires: the connection is not armed until
// net/http reports StateIdle, which it does after aborting that read.
//
// A connection is bound to the tenant of the last request on it that
// passed signature verification; until then it is not gated (see Read).
// Pipelined requests (already in net/http's buffer, so
// no Read) are gated at the start of the handler instead.
//
// Only HTTP/1.x is gated; the server does not serve HTTP/2 (New pins the
// protocols to HTTP/1 when the gate is on).

// gateListener wraps accepted connections in gatedConns.
type gateListener struct {
	net.Listener
	gate ConnGate
}

func (l *gateListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &gatedConn{Conn: c, gate: l.gate, ctx: ctx, cancel: cancel, armed: true}, nil
}

// gatedConn is a connection under the connection gate.
type gatedConn struct {
	net.Conn
	gate   ConnGate
	ctx    context.Context // ends when the connection is closed
	cancel context.CancelFunc

	mu      sync.Mutex
	tenant  tenancy.TenantID // bound tenant; zero until a request was verified
	armed   bool             // the next bytes read start a request
	release func()           // the slot held, if any
	off     bool             // closed or hijacked: no more gating
}

// Read reads from the connection; when the connection is armed (between
// requests), it takes a slot before it returns the first bytes of the
// next request. If no slot can be had, it returns io.EOF, so that net/http
// closes the connection without writing a response (a client retries a
// request on a connection closed before any response).
func (c *gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n == 0 {
		return n, err
	}
	c.mu.Lock()
	if !c.armed || c.off {
		c.mu.Unlock()
		return n, err
	}
	c.armed = false
	t := c.tenant
	c.mu.Unlock()
	if t.IsZero() {
		// NB: a connection not yet bound to a tenant is not gated. Gating
		// it from its first byte would let anyone, with no credential,
		// hold the unverified slots by sending one byte and stalling, and
		// so block every new connection until the read timeouts. Its
		// first request is admitted by the Backend's gates after SigV4.
		return n, err
	}
	if c.acquire(t) != nil {
		return 0, io.EOF
	}
	return n, err
}

// acquire takes a slot for tenant t and holds it.
func (c *gatedConn) acquire(t tenancy.TenantID) error {
	rel, err := c.gate.AcquireConn(c.ctx, t)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.off || c.release != nil {
		// Closed or hijacked while waiting (or, never expected, a slot
		// already held): do not hold a second one.
		c.mu.Unlock()
		rel()
		return nil
	}
	c.release = rel
	c.mu.Unlock()
	return nil
}

// ensure takes a slot at the start of a handler if the request was read
// without one (pipelined: it came from net/http's buffer, not from Read).
func (c *gatedConn) ensure() error {
	c.mu.Lock()
	if c.off || c.release != nil || !c.armed {
		c.mu.Unlock()
		return nil
	}
	c.armed = false
	t := c.tenant
	c.mu.Unlock()
	if t.IsZero() {
		return nil // not gated (see Read)
	}
	return c.acquire(t)
}

// bind makes t the tenant of the connection's next requests.
func (c *gatedConn) bind(t tenancy.TenantID) {
	c.mu.Lock()
	c.tenant = t
	c.mu.Unlock()
}

// handOff gives the request's slot back (the request goes on without it).
func (c *gatedConn) handOff() {
	c.mu.Lock()
	rel := c.release
	c.release = nil
	c.mu.Unlock()
	if rel != nil {
		rel()
	}
}

// idle gives the slot back after a response and arms the connection for
// the next request.
func (c *gatedConn) idle() {
	c.mu.Lock()
	rel := c.release
	c.release, c.armed = nil, true
	c.mu.Unlock()
	if rel != nil {
		rel()
	}
}

// detach gives the slot back and stops gating (hijacked or closed).
func (c *gatedConn) detach() {
	c.mu.Lock()
	rel := c.release
	c.release, c.off = nil, true
	c.mu.Unlock()
	c.cancel()
	if rel != nil {
		rel()
	}
}

// Close closes the connection and gives back its slot.
func (c *gatedConn) Close() error {
	c.detach()
	return c.Conn.Close()
}

// CloseWrite shuts down the writing side, as net/http does on a
// *net.TCPConn before closing a connection it answered with an error.
func (c *gatedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connKey is the context key of a request's *gatedConn.
type connKey struct{}

// gateConnContext is the http.Server's ConnContext when the gate is on.
func gateConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*gatedConn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// gateConnState is the http.Server's ConnState when the gate is on.
func gateConnState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*gatedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateIdle:
		c.idle()
	case http.StateHijacked, http.StateClosed:
		c.detach()
	}
}

// gatedConnOf returns the request's connection if it is gated, else nil.
func gatedConnOf(r *http.Request) *gatedConn {
	c, _ := r.Context().Value(connKey{}).(*gatedConn)
	return c
}
