package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// countingGate wraps the real connection gate and counts slots.
type countingGate struct {
	t        *testing.T
	next     ConnGate
	held     atomic.Int64
	acquired atomic.Int64
	reg      *prometheus.Registry // the quota.Manager's metrics
}

// queued returns the number of requests waiting in the connection gate's
// queue (not merely inside AcquireConn: a release before a request is
// queued would hand the slot to another).
func (g *countingGate) queued() int {
	return int(g.metric("tenantdb_admission_queued", `class="conn"`).GetGauge().GetValue())
}

// waits returns the number of requests that had to wait in the
// connection gate for a slot.
func (g *countingGate) waits() uint64 {
	return g.metric("tenantdb_admission_conn_wait_seconds", "").GetHistogram().GetSampleCount()
}

// metric returns the quota.Manager's metric name with the label
// (name="value", or none).
func (g *countingGate) metric(name, label string) *dto.Metric {
	g.t.Helper()
	mfs, err := g.reg.Gather()
	if err != nil {
		g.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" {
				return m
			}
			for _, l := range m.GetLabel() {
				if fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()) == label {
					return m
				}
			}
		}
	}
	g.t.Fatalf("no metric %s{%s}", name, label)
	return nil
}

func (g *countingGate) AcquireConn(ctx context.Context, tenant tenancy.TenantID) (func(), error) {
	rel, err := g.next.AcquireConn(ctx, tenant)
	if err != nil {
		return nil, err
	}
	g.held.Add(1)
	g.acquired.Add(1)
	var done atomic.Bool
	return func() {
		if done.Swap(true) {
			g.t.Errorf("a connection slot of %v was released twice", tenant)
			return
		}
		g.held.Add(-1)
		rel()
	}, nil
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// tenantAuth verifies SigV4 with testSecret for the key ids of keys and
// maps each to its tenant; hook, if set, runs inside Authenticate (the
// pre-admission work the gate covers) before it returns.
type tenantAuth struct {
	keys map[string]tenancy.TenantID
	mu   sync.Mutex
	hook func(tenancy.TenantID)
}

func (a *tenantAuth) Authenticate(ctx context.Context, r *sigv4.Request) (tenancy.Principal, error) {
	parsed, err := sigv4.Parse(r)
	if err != nil {
		return tenancy.Principal{}, err
	}
	tenant, ok := a.keys[parsed.AccessKeyID]
	if !ok {
		tenant = DevTenant
	}
	p := tenancy.Principal{Tenant: tenant, Env: "live", Role: tenancy.RoleAdmin, KeyID: parsed.AccessKeyID}
	d := &DevAuthenticator{AccessKeyID: parsed.AccessKeyID, SecretAccessKey: testSecret, Principal: p}
	p, err = d.Authenticate(ctx, r)
	if err != nil {
		return p, err
	}
	a.mu.Lock()
	hook := a.hook
	a.mu.Unlock()
	if hook != nil {
		hook(tenant)
	}
	return p, nil
}

func (a *tenantAuth) setHook(h func(tenancy.TenantID)) {
	a.mu.Lock()
	a.hook = h
	a.mu.Unlock()
}

var (
	tenantA = tenancy.TenantID{0: 0xa, 15: 1}
	tenantB = tenancy.TenantID{0: 0xb, 15: 1}
	keyA    = "sk_live_0000000000000000000000000000000a_a"
	keyB    = "sk_live_0000000000000000000000000000000b_b"
)

// startGatedServer runs a server whose connection gate is a real
// quota.Manager with o's connection options.
func startGatedServer(t *testing.T, o quota.Options) (*testServer, *countingGate, *tenantAuth) {
	t.Helper()
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg := prometheus.NewRegistry()
	o.DB, o.Logger, o.Registerer = db, slog.New(slog.DiscardHandler), reg
	m, err := quota.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	g := &countingGate{t: t, next: m, reg: reg}
	auth := &tenantAuth{keys: map[string]tenancy.TenantID{keyA: tenantA, keyB: tenantB}}
	ts := startServer(t, func(so *Options) {
		so.ConnGate = g
		so.Auth = auth
	})
	return ts, g, auth
}

// newClient returns an HTTP client with its own keep-alive connection.
//
// NB: one connection at most, so that a request after another reuses the
// first one's connection (and so is gated as a bound connection's). With
// more, a request sent before the transport has put the previous
// response's connection back in its idle pool (its read loop does that
// after the body's EOF, concurrently) dials a new, unbound connection.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// signedGetItem returns a GetItem request signed with key id key.
func signedGetItem(endpoint, key string) (*http.Request, error) {
	body := []byte(`{"TableName":"t","Key":{"pk":{"S":"x"}}}`)
	req, err := http.NewRequest("POST", endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: testSecret},
		req, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now()); err != nil {
		return nil, err
	}
	return req, nil
}

// getItem sends a signed GetItem with key id key and returns the status.
func getItem(c *http.Client, endpoint, key string) (int, error) {
	req, err := signedGetItem(endpoint, key)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

func mustGetItem(t *testing.T, c *http.Client, endpoint, key string) {
	t.Helper()
	status, err := getItem(c, endpoint, key)
	if err != nil || status != 200 {
		t.Fatalf("GetItem as %s: status %d, error %v", key, status, err)
	}
}

// TestConnGateIdleConnectionsHoldNoSlot: with a single slot server-wide,
// a tenant's many idle keep-alive connections do not block another
// tenant's requests, nor its own.
func TestConnGateIdleConnectionsHoldNoSlot(t *testing.T) {
	ts, g, _ := startGatedServer(t, quota.Options{ConnInflight: 1, ConnQueueTimeout: 2 * time.Second})
	var clients []*http.Client
	for i := 0; i < 8; i++ {
		c := newClient(t)
		mustGetItem(t, c, ts.endpoint, keyA) // one keep-alive connection each, now idle
		clients = append(clients, c)
	}
	waitFor(t, "no slot is held", func() bool { return g.held.Load() == 0 })
	b := newClient(t)
	for i := 0; i < 3; i++ {
		mustGetItem(t, b, ts.endpoint, keyB)
	}
	if n := g.waits(); n != 0 {
		t.Errorf("%d of tenant b's requests waited for a slot with tenant a's connections idle", n)
	}
	for _, c := range clients {
		mustGetItem(t, c, ts.endpoint, keyA) // the idle connections are reused
	}
	waitFor(t, "no slot is held", func() bool { return g.held.Load() == 0 })
	// A connection's first request is not gated (it is not bound to a
	// tenant yet): 2 of b's requests and the 8 on a's reused connections.
	if got := g.acquired.Load(); got != 2+8 {
		t.Errorf("slots acquired = %d, want one per request on a bound connection (10)", got)
	}
}

// TestConnGateTenantShare: a tenant holding every slot with slow requests
// (slow pre-admission work: here, authentication) gets no further slot
// while another tenant waits; the freed slot goes to the other tenant.
func TestConnGateTenantShare(t *testing.T) {
	ts, g, auth := startGatedServer(t, quota.Options{ConnInflight: 2, ConnTenantInflight: 1})
	a := []*http.Client{newClient(t), newClient(t), newClient(t)}
	b := newClient(t)
	// Bind one connection each to its tenant (a connection's first request
	// is not gated).
	for _, c := range a {
		mustGetItem(t, c, ts.endpoint, keyA)
	}
	mustGetItem(t, b, ts.endpoint, keyB)
	waitFor(t, "no slot is held", func() bool { return g.held.Load() == 0 })

	entered := make(chan tenancy.TenantID, 10)
	unblockA := make(chan struct{})
	var unblockOnce sync.Once
	releaseA := func() { unblockOnce.Do(func() { close(unblockA) }) }
	t.Cleanup(releaseA) // a failed test still lets the server shut down
	auth.setHook(func(tenant tenancy.TenantID) {
		entered <- tenant
		if tenant == tenantA {
			<-unblockA
		}
	})
	errs := make(chan error, 4)
	send := func(c *http.Client, key string) {
		status, err := getItem(c, ts.endpoint, key)
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d", status)
		}
		errs <- err
	}
	next := func(what string) tenancy.TenantID {
		t.Helper()
		select {
		case tn := <-entered:
			return tn
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
			return tenancy.TenantID{}
		}
	}
	// Tenant a, alone, takes both slots.
	go send(a[0], keyA)
	go send(a[1], keyA)
	for i := 0; i < 2; i++ {
		if tn := next("tenant a's first requests"); tn != tenantA {
			t.Fatalf("entered %v, want tenant a", tn)
		}
	}
	// Its third request waits for a slot, and then so does tenant b's.
	go send(a[2], keyA)
	waitFor(t, "tenant a's third request waits", func() bool { return g.queued() == 1 })
	go send(b, keyB)
	waitFor(t, "tenant b's request waits", func() bool { return g.queued() == 2 })

	unblockA <- struct{}{} // one of a's requests finishes
	if tn := next("the freed slot's request"); tn != tenantB {
		t.Fatalf("the freed slot went to %v, want tenant b (a is over its share)", tn)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil { // b's
		t.Fatal(err)
	}
	select {
	case tn := <-entered:
		t.Fatalf("%v entered while tenant a was at its share", tn)
	case <-time.After(50 * time.Millisecond):
	}
	releaseA()
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "no slot is held", func() bool { return g.held.Load() == 0 })
}

// TestConnGateReleaseOnDisconnect: a client that goes away mid-request
// (in the headers, in the body, or while its handler runs) leaves no slot
// behind; with one slot server-wide, later requests still run.
func TestConnGateReleaseOnDisconnect(t *testing.T) {
	ts, g, auth := startGatedServer(t, quota.Options{ConnInflight: 1, ConnQueueTimeout: 2 * time.Second})
	addr := strings.TrimPrefix(ts.endpoint, "http://")
	// dial returns a connection bound to tenant a by one complete request.
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		req, err := signedGetItem(ts.endpoint, keyA)
		if err != nil {
			t.Fatal(err)
		}
		if err := req.Write(c); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("binding request: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		waitFor(t, "the bound connection is idle", func() bool { return g.held.Load() == 0 })
		return c
	}
	check := func(what string) {
		t.Helper()
		waitFor(t, what+": no slot is held", func() bool { return g.held.Load() == 0 })
		mustGetItem(t, newClient(t), ts.endpoint, keyB)
	}

	// In the headers.
	c := dial()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\n")
	waitFor(t, "the partial request holds a slot", func() bool { return g.held.Load() == 1 })
	c.Close()
	check("gone in the headers")

	// In the body.
	c = dial()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nX-Amz-Target: DynamoDB_20120810.GetItem\r\n\r\n{\"Ta")
	waitFor(t, "the partial request holds a slot", func() bool { return g.held.Load() == 1 })
	c.Close()
	check("gone in the body")

	// While the handler runs (in authentication, before the Backend).
	inAuth, unblock := make(chan struct{}), make(chan struct{})
	auth.setHook(func(tenant tenancy.TenantID) {
		if tenant == tenantA {
			close(inAuth)
			<-unblock
		}
	})
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		body := []byte(`{"TableName":"t","Key":{"pk":{"S":"x"}}}`)
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.endpoint+"/", bytes.NewReader(body))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
		sum := sha256.Sum256(body)
		_ = v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: keyA, SecretAccessKey: testSecret},
			req, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now())
		_, err := newClient(t).Do(req)
		errc <- err
	}()
	<-inAuth
	cancel() // the client closes the connection
	if err := <-errc; err == nil {
		t.Fatal("the cancelled request succeeded")
	}
	close(unblock)
	auth.setHook(nil)
	check("gone while the handler ran")
}

// TestConnGatePipelined: requests that arrive together (read from
// net/http's buffer without a Read) are gated in the handler; each takes
// and gives back its slot. The first, which binds the connection to its
// tenant, is not gated.
func TestConnGatePipelined(t *testing.T) {
	ts, g, _ := startGatedServer(t, quota.Options{ConnInflight: 1})
	var buf bytes.Buffer
	first, err := signedGetItem(ts.endpoint, keyA)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		req, err := http.NewRequest("GET", ts.endpoint+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := req.Write(&buf); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("response %d: status %d", i, resp.StatusCode)
		}
	}
	waitFor(t, "no slot is held", func() bool { return g.held.Load() == 0 })
	if got := g.acquired.Load(); got != 2 {
		t.Errorf("slots acquired = %d, want 2 (one per request after the first)", got)
	}
}

// TestConnGateUnboundConnectionsAreNotGated: a client with no credential
// that sends one byte and stalls holds no slot, so it cannot block other
// tenants' new connections (with one slot server-wide).
func TestConnGateUnboundConnectionsAreNotGated(t *testing.T) {
	ts, g, _ := startGatedServer(t, quota.Options{ConnInflight: 1, ConnQueueTimeout: 2 * time.Second})
	var stalled []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", strings.TrimPrefix(ts.endpoint, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("P")); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	time.Sleep(50 * time.Millisecond) // let the server read the bytes
	if n := g.held.Load(); n != 0 {
		t.Fatalf("%d slots held by stalled unauthenticated connections", n)
	}
	for _, key := range []string{keyA, keyB} {
		mustGetItem(t, newClient(t), ts.endpoint, key)
	}
	if n := g.waits(); n != 0 || g.held.Load() != 0 {
		t.Errorf("%d requests waited for a slot, %d slots held, with %d stalled connections", n, g.held.Load(), len(stalled))
	}
}
