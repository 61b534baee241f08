package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// benchBackend answers at once, so the benchmarks measure the server's own
// work: body, SigV4, guard, decode, encode, headers, metrics.
type benchBackend struct {
	dynamo.Backend // nil: the benchmarks call only the methods below
	item           wire.Item
}

func (b *benchBackend) PutItem(context.Context, tenancy.Scope, *wire.PutItemInput) (*wire.PutItemOutput, error) {
	return &wire.PutItemOutput{}, nil
}

func (b *benchBackend) GetItem(context.Context, tenancy.Scope, *wire.GetItemInput) (*wire.GetItemOutput, error) {
	return &wire.GetItemOutput{Item: b.item}, nil
}

// discard is a minimal http.ResponseWriter that keeps the status.
type discard struct {
	h      http.Header
	status int
	body   []byte
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) Write(p []byte) (int, error) {
	if d.body == nil {
		d.body = append([]byte(nil), p...)
	}
	return len(p), nil
}
func (d *discard) WriteHeader(s int) { d.status = s }

// benchItem is a 1 KB item of ten attributes, as the load generator writes.
func benchItem() (wire.Item, string) {
	it := wire.Item{"pk": attr.Str("tenant#1|user#42"), "sk": attr.Num(attr.MustNumber("17"))}
	var js strings.Builder
	js.WriteString(`{"pk":{"S":"tenant#1|user#42"},"sk":{"N":"17"}`)
	for i := 0; i < 8; i++ {
		v := strings.Repeat(string(rune('a'+i)), 110)
		it[fmt.Sprintf("attr%d", i)] = attr.Str(v)
		fmt.Fprintf(&js, `,"attr%d":{"S":"%s"}`, i, v)
	}
	js.WriteString("}")
	return it, js.String()
}

func benchServer(b *testing.B) (*Server, *benchBackend) {
	it, _ := benchItem()
	be := &benchBackend{item: it}
	s, err := New(Options{
		Backend: dynamo.Bind(be),
		Auth:    &DevAuthenticator{AccessKeyID: testKeyID, SecretAccessKey: testSecret, Principal: DevPrincipal(testKeyID)},
		Guard:   &tenancy.Guard{},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		b.Fatal(err)
	}
	return s, be
}

// signed returns a signed request's headers and body for op.
func signed(b *testing.B, op, body string) http.Header {
	req, _ := http.NewRequest("POST", "http://127.0.0.1:8000/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	sum := sha256.Sum256([]byte(body))
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret},
		req, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	// A server sees Content-Length among the headers; the client request
	// keeps it in a field.
	req.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return req.Header
}

func runBench(b *testing.B, s http.Handler, op, body string) {
	h := signed(b, op, body)
	bodyBytes := []byte(body)
	w := &discard{h: http.Header{}}
	r, _ := http.NewRequest("POST", "http://127.0.0.1:8000/", bytes.NewReader(bodyBytes))
	r.Header = h
	s.ServeHTTP(w, r)
	if w.status != 0 && w.status != 200 {
		b.Fatalf("status %d: %s", w.status, w.body)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, _ := http.NewRequest("POST", "http://127.0.0.1:8000/", bytes.NewReader(bodyBytes))
		r.Header = h
		r.ContentLength = int64(len(bodyBytes))
		clear(w.h)
		s.ServeHTTP(w, r)
	}
}

// BenchmarkPutItem1KB is the server's cost of a 1 KB PutItem beyond the
// engine: compare with BenchmarkNoop.
func BenchmarkPutItem1KB(b *testing.B) {
	s, _ := benchServer(b)
	_, js := benchItem()
	runBench(b, s, "PutItem", `{"TableName":"bench","Item":`+js+`}`)
}

// BenchmarkGetItem1KB encodes a 1 KB item.
func BenchmarkGetItem1KB(b *testing.B) {
	s, _ := benchServer(b)
	runBench(b, s, "GetItem", `{"TableName":"bench","Key":{"pk":{"S":"tenant#1|user#42"},"sk":{"N":"17"}}}`)
}

// BenchmarkNoop is the floor: read the body, write a fixed answer.
func BenchmarkNoop(b *testing.B) {
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte("{}"))
	})
	_, js := benchItem()
	runBench(b, noop, "PutItem", `{"TableName":"bench","Item":`+js+`}`)
}
