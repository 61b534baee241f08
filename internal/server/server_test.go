package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/sdkhttp"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

const (
	testKeyID  = "sk_live_00000000000000000000000000000001_dev"
	testSecret = "dev-secret/with+odd=chars"
)

// fakeBackend implements a few operations over a map. It exists because
// the server's own cases (panics, untyped errors, a backend without an
// operation) cannot be provoked through the real engine.
type fakeBackend struct {
	dynamo.Backend // nil: Handle calls only the methods below
	bound          dynamo.Handler
	mu             sync.Mutex
	items          map[string]wire.Item
	scope          []tenancy.Scope
}

func newFakeBackend() *fakeBackend {
	f := &fakeBackend{items: map[string]wire.Item{}}
	f.bound = dynamo.Bind(f)
	return f
}

// Handle serves PutItem and GetItem through dynamo.Bind, and answers every
// other operation as a backend lacking it would.
func (f *fakeBackend) Handle(ctx context.Context, s tenancy.Scope, op *dynamo.Op, in any) (wire.Output, error) {
	switch op.Name {
	case "PutItem", "GetItem":
		return f.bound.Handle(ctx, s, op, in)
	}
	return nil, apierr.New(apierr.UnknownOperation, "Unknown operation %s", op.Name)
}

func (f *fakeBackend) PutItem(ctx context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scope = append(f.scope, s)
	pk, ok := in.Item["pk"]
	if !ok {
		return nil, apierr.Validationf("One or more parameter values were invalid: Missing the key pk in the item")
	}
	switch pk.S {
	case "panic":
		panic("fake backend panics")
	case "untyped":
		return nil, errors.New("disk /var/lib/secret-path failed")
	}
	old := f.items[pk.S]
	f.items[pk.S] = in.Item
	if in.ReturnValues == "ALL_OLD" {
		return &wire.PutItemOutput{Attributes: old}, nil
	}
	return &wire.PutItemOutput{}, nil
}

func (f *fakeBackend) GetItem(ctx context.Context, s tenancy.Scope, in *wire.GetItemInput) (*wire.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.TableName != "t" {
		return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found")
	}
	return &wire.GetItemOutput{Item: f.items[in.Key["pk"].S]}, nil
}

type testServer struct {
	*Server
	endpoint string
	fake     *fakeBackend
	reg      *prometheus.Registry
	logs     *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startServer(t *testing.T, edit func(*Options)) *testServer {
	t.Helper()
	fake := newFakeBackend()
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	o := Options{
		Backend: fake,
		Auth: &DevAuthenticator{AccessKeyID: testKeyID, SecretAccessKey: testSecret,
			Principal: DevPrincipal(testKeyID)},
		Guard:    &tenancy.Guard{},
		Registry: reg,
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &testServer{Server: s, endpoint: "http://" + l.Addr().String(), fake: fake, reg: reg, logs: logs}
}

func (ts *testServer) client(secret string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ts.endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: secret}, nil
		}),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.OwnBody(&http.Client{}), // NB: no retries (see sdkhttp)
	})
}

// do sends a raw request, signed with the test credential unless secret
// is "", and returns the status, headers and body.
func (ts *testServer) do(t *testing.T, method, target string, body []byte, secret string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	if target != "" {
		req.Header.Set("X-Amz-Target", target)
	}
	if secret != "" {
		sum := sha256.Sum256(body)
		err := v4.NewSigner().SignHTTP(context.Background(),
			aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: secret},
			req, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// errorBody decodes a DynamoDB error response.
func errorBody(t *testing.T, b []byte) (typ, msg string) {
	t.Helper()
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", b, err)
	}
	return e.Type, e.Message
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestSDKRoundTrip(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.client(testSecret)
	ctx := context.Background()
	item := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "a"},
		"n":  &types.AttributeValueMemberN{Value: "12345678901234567890.123456789"},
		"b":  &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if got := out.Item["n"].(*types.AttributeValueMemberN).Value; got != "12345678901234567890.123456789" {
		t.Errorf("n = %s", got)
	}
	if got := out.Item["b"].(*types.AttributeValueMemberB).Value; !bytes.Equal(got, []byte{0, 1, 2}) {
		t.Errorf("b = %v", got)
	}
	// The engine saw the guard's scope for the built-in tenant.
	s := ts.fake.scope[0]
	if !s.Valid() || s.Tenant() != DevTenant || s.Action() != "PutItem" {
		t.Errorf("scope = valid %v tenant %v action %q", s.Valid(), s.Tenant(), s.Action())
	}

	_, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("missing"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
	var rnf *types.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Errorf("GetItem on a missing table: %v, want ResourceNotFoundException", err)
	}

	// An operation the backend lacks.
	_, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t")})
	if code := apiCode(err); code != "UnknownOperationException" {
		t.Errorf("Scan on a backend without it: %v, want UnknownOperationException", err)
	}
}

func TestResponseHeaders(t *testing.T) {
	ts := startServer(t, nil)
	status, h, body := ts.do(t, "POST", "DynamoDB_20120810.GetItem", []byte(`{"TableName":"t","Key":{"pk":{"S":"x"}}}`), testSecret)
	if status != 200 || string(body) != "{}" {
		t.Fatalf("got %d %s", status, body)
	}
	if id := h.Get("x-amzn-RequestId"); len(id) != 26 {
		t.Errorf("request id %q", id)
	}
	if got := h.Get("x-amz-crc32"); got != "2745614147" { // crc32("{}")
		t.Errorf("x-amz-crc32 = %q", got)
	}
	if got := h.Get("Content-Type"); got != "application/x-amz-json-1.0" {
		t.Errorf("content-type %q", got)
	}
	_, h2, _ := ts.do(t, "POST", "DynamoDB_20120810.GetItem", []byte(`{"TableName":"t","Key":{"pk":{"S":"x"}}}`), testSecret)
	if h.Get("x-amzn-RequestId") == h2.Get("x-amzn-RequestId") {
		t.Error("two requests got the same request id")
	}
}

func TestBadRequests(t *testing.T) {
	ts := startServer(t, nil)
	for _, c := range []struct {
		name     string
		target   string
		body     string
		secret   string
		wantCode int
		wantType string
	}{
		{"missing target", "", `{}`, testSecret, 400, "UnknownOperationException"},
		{"unknown op", "DynamoDB_20120810.CreateGlobalTable", `{}`, testSecret, 400, "UnknownOperationException"},
		{"other service", "DynamoDBStreams_20120810.PutItem", `{}`, testSecret, 400, "UnknownOperationException"},
		{"malformed json", "DynamoDB_20120810.GetItem", `{"TableName":`, testSecret, 400, "SerializationException"},
		{"not an object", "DynamoDB_20120810.GetItem", `[1,2]`, testSecret, 400, "SerializationException"},
		{"empty body", "DynamoDB_20120810.GetItem", ``, testSecret, 400, "SerializationException"},
		{"wrong type", "DynamoDB_20120810.GetItem", `{"TableName":5}`, testSecret, 400, "SerializationException"},
		{"bad attribute value", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"SS":[]}}}`, testSecret, 400, "ValidationException"},
		{"validation from backend", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"x":{"S":"a"}}}`, testSecret, 400, "ValidationException"},
		{"unsigned", "DynamoDB_20120810.GetItem", `{}`, "", 400, "MissingAuthenticationTokenException"},
		{"wrong secret", "DynamoDB_20120810.GetItem", `{}`, "not-the-secret", 400, "InvalidSignatureException"},
		{"untyped backend error", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":"untyped"}}}`, testSecret, 500, "InternalServerError"},
		{"backend panic", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":"panic"}}}`, testSecret, 500, "InternalServerError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := ts.do(t, "POST", c.target, []byte(c.body), c.secret)
			typ, msg := errorBody(t, body)
			if status != c.wantCode || !strings.HasSuffix(typ, "#"+c.wantType) {
				t.Errorf("got %d %s (%s), want %d %s", status, typ, msg, c.wantCode, c.wantType)
			}
			if status == 500 && msg != "Internal server error" {
				t.Errorf("500 message %q leaks detail", msg)
			}
		})
	}
	// The server survived the panic.
	if status, _, _ := ts.do(t, "POST", "DynamoDB_20120810.GetItem", []byte(`{"TableName":"t","Key":{}}`), testSecret); status != 200 {
		t.Errorf("after the panic: %d", status)
	}
	// Server errors are logged with their cause; client errors without
	// their message.
	logs := ts.logs.String()
	if !strings.Contains(logs, "fake backend panics") || !strings.Contains(logs, "secret-path") {
		t.Errorf("500s not logged with their cause:\n%s", logs)
	}
	if strings.Contains(logs, "Missing the key pk") {
		t.Errorf("a client error's message was logged:\n%s", logs)
	}
	if strings.Contains(logs, testSecret) {
		t.Errorf("the secret was logged")
	}
}

func TestGuardDenies(t *testing.T) {
	var denied []string
	ts := startServer(t, func(o *Options) {
		p := DevPrincipal(testKeyID)
		p.Role = tenancy.RoleRead
		o.Auth.(*DevAuthenticator).Principal = p
		o.Denied = func(ctx context.Context, p tenancy.Principal, action, reason string) {
			denied = append(denied, fmt.Sprintf("%s %s %s from %v", p.KeyID, action, reason, audit.Source(ctx) != ""))
		}
	})
	status, _, body := ts.do(t, "POST", "DynamoDB_20120810.PutItem", []byte(`{"TableName":"t","Item":{"pk":{"S":"a"}}}`), testSecret)
	if typ, _ := errorBody(t, body); status != 400 || !strings.HasSuffix(typ, "#AccessDeniedException") {
		t.Errorf("read-only PutItem: %d %s", status, body)
	}
	if len(ts.fake.scope) != 0 {
		t.Error("the backend ran a denied request")
	}
	want := testKeyID + " dynamodb:PutItem User: " + testKeyID + " is not authorized to perform: dynamodb:PutItem from true"
	if len(denied) != 1 || denied[0] != want {
		t.Errorf("Denied hook got %q, want [%q]", denied, want)
	}
}

func TestOversizedBody(t *testing.T) {
	ts := startServer(t, func(o *Options) { o.MaxBodyBytes = 1 << 10 })
	big := []byte(`{"TableName":"t","Item":{"pk":{"S":"` + strings.Repeat("x", 2000) + `"}}}`)

	// Announced by Content-Length: refused before reading.
	status, _, body := ts.do(t, "POST", "DynamoDB_20120810.PutItem", big, testSecret)
	if typ, _ := errorBody(t, body); status != 413 || !strings.HasSuffix(typ, "#RequestEntityTooLarge") {
		t.Errorf("oversized: %d %s", status, body)
	}

	// Chunked, without Content-Length: refused once it passes the limit.
	req, _ := http.NewRequest("POST", ts.endpoint+"/", io.MultiReader(bytes.NewReader(big), bytes.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked oversized: %d %s", resp.StatusCode, b)
	}
}

// TestDefaultBodyLimit checks the real 16 MB limit without sending 16 MB.
func TestDefaultBodyLimit(t *testing.T) {
	ts := startServer(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.PutItem\r\nContent-Length: %d\r\n\r\n", MaxRequestBytes+1)
	resp, err := http.ReadResponse(bufioReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 413 {
		t.Errorf("16 MB + 1: status %d", resp.StatusCode)
	}
}

// TestSlowBodyDoesNotHang checks that a client that stops sending mid-body
// is cut off by ReadTimeout and does not block other requests.
func TestSlowBodyDoesNotHang(t *testing.T) {
	ts := startServer(t, func(o *Options) {
		o.ReadTimeout = 300 * time.Millisecond
		o.ReadHeaderTimeout = 300 * time.Millisecond
	})
	addr := strings.TrimPrefix(ts.endpoint, "http://")
	var conns []net.Conn
	for i := 0; i < 20; i++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		if i%2 == 0 {
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.PutItem\r\nContent-Length: 1000\r\n\r\n{\"Tab")
		} else {
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\n") // headers never end
		}
	}
	// Others are served meanwhile.
	if status, _, body := ts.do(t, "POST", "DynamoDB_20120810.GetItem", []byte(`{"TableName":"t","Key":{}}`), testSecret); status != 200 {
		t.Errorf("while slow clients wait: %d %s", status, body)
	}
	// Every slow connection is closed by the server.
	for _, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(conn); err != nil {
			t.Errorf("slow connection not closed by the server: %v", err)
		}
		conn.Close()
	}
}

func TestRoutes(t *testing.T) {
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "admin %s %s", r.Method, r.URL.Path)
	})
	ts := startServer(t, func(o *Options) {
		o.Admin = admin
		o.OpsAuth = func(_ context.Context, tok string) error {
			if tok != "ops-secret" {
				return apierr.New(apierr.AccessDenied, "not the operator")
			}
			return nil
		}
	})
	bearer := ""
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", ts.endpoint+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("/"); status != 200 || !strings.HasPrefix(body, "healthy") {
		t.Errorf("GET / = %d %q", status, body)
	}
	if status, body := get("/v1/tenants"); status != 200 || body != "admin GET /v1/tenants" {
		t.Errorf("GET /v1/tenants = %d %q", status, body)
	}
	if status, _ := get("/nope"); status != 404 {
		t.Errorf("GET /nope = %d", status)
	}
	ts.do(t, "POST", "DynamoDB_20120810.GetItem", []byte(`{"TableName":"t","Key":{}}`), testSecret)
	ts.do(t, "POST", "DynamoDB_20120810.Nope", []byte(`{}`), testSecret)
	for _, tok := range []string{"", "wrong"} {
		bearer = tok
		if status, body := get("/metrics"); status != 401 || strings.Contains(body, "tenantdb_requests_total") {
			t.Errorf("GET /metrics with bearer %q = %d, want 401 without metrics", tok, status)
		}
	}
	bearer = "ops-secret"
	status, body := get("/metrics")
	for _, want := range []string{
		`tenantdb_requests_total{code="OK",op="GetItem"} 1`,
		`tenantdb_requests_total{code="UnknownOperationException",op="unknown"} 1`,
		`tenantdb_request_duration_seconds_count{op="GetItem"} 1`,
	} {
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}

	noAdmin := startServer(t, nil)
	resp, err := http.Get(noAdmin.endpoint + "/v1/tenants")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("/v1/ without admin: %d", resp.StatusCode)
	}
}

// recorder is a Handler that records what reaches it.
type recorder struct {
	mu  sync.Mutex
	got []recorded
}

type recorded struct {
	op     *dynamo.Op
	action string
	in     any
}

func (r *recorder) Handle(_ context.Context, s tenancy.Scope, op *dynamo.Op, in any) (wire.Output, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, recorded{op, s.Action(), in})
	return nil, nil
}

// TestDispatchFollowsTable: every operation of dynamo's table is routed by
// its X-Amz-Target, admitted by the guard as itself, decoded into its own
// input type and handed to the backend, with a metric series of its own;
// nothing in the server lists operations.
func TestDispatchFollowsTable(t *testing.T) {
	rec := &recorder{}
	ts := startServer(t, func(o *Options) { o.Backend = rec })
	ops := dynamo.Ops()
	for _, op := range ops {
		if status, _, body := ts.do(t, "POST", op.Target, []byte(`{}`), testSecret); status != 200 {
			t.Errorf("%s: status %d: %s", op.Target, status, body)
		}
	}
	if len(rec.got) != len(ops) {
		t.Fatalf("%d of %d operations reached the backend", len(rec.got), len(ops))
	}
	for i, op := range ops {
		g := rec.got[i]
		if g.op != op || g.action != op.Name || reflect.TypeOf(g.in) != reflect.TypeOf(op.New()) {
			t.Errorf("%s reached the backend as %s (scope for %s) with a %T", op.Name, g.op.Name, g.action, g.in)
		}
	}
	mfs, err := ts.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "tenantdb_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["code"] == "OK" {
				ok[labels["op"]] = m.GetCounter().GetValue()
			}
		}
	}
	for _, op := range ops {
		if ok[op.Name] != 1 {
			t.Errorf("tenantdb_requests_total{code=\"OK\",op=%q} = %v, want 1", op.Name, ok[op.Name])
		}
	}
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }
