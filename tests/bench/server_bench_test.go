package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Concurrency is the number of client connections, as in issue 2's
// targets (bench/compare.sh's default).
const concurrency = 64

// itemSize is the DynamoDB size of every item written (names + values).
const itemSize = 1024

// variants is how many distinct pre-signed requests each workload cycles
// through (distinct keys, so that writers do not all queue on one item).
const variants = 4096

// preload is how many items the read workloads find (preload/20
// collections of 20).
const preload = 4000

const table = "bench"

// target is a running server and the credential to sign for.
type target struct {
	addr         string
	akid, secret string
}

// startTenantDB starts a server assembled like `tenantdb serve`
// (internal/node) on a temp-dir Pebble store (synced WAL), with fairness
// on and the default tenant's quota raised out of the way, creates the
// bench table and preloads it. o may set the benchmark-only options
// (bypass_bench_test.go).
func startTenantDB(b *testing.B, o node.Options) *target {
	b.Helper()
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	o.DataDir = b.TempDir()
	o.Endpoint = l.Addr().String()
	o.DefaultTenant = true
	o.Fairness = true
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	n, err := node.Open(ctx, o)
	if err != nil {
		l.Close()
		b.Fatal(err)
	}
	ik := n.Bootstrap().Default
	units := 1e9
	if _, err := n.Quotas().SetQuota(ctx, tenancy.SystemScope(ik.Tenant, "bench"), "", quota.Update{ReadUnits: &units, WriteUnits: &units}); err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n.Shutdown(sctx)
		<-served
		n.Close()
	})
	t := &target{addr: l.Addr().String(), akid: ik.AccessKeyID(), secret: ik.Secret}
	c := t.dial(b)
	defer c.close()
	c.must(b, t.sign(b, "CreateTable", `{"TableName":"`+table+`","BillingMode":"PAY_PER_REQUEST",`+
		`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`))
	for lo := 0; lo < preload; lo += 25 {
		var reqs []string
		for n := lo; n < lo+25 && n < preload; n++ {
			reqs = append(reqs, `{"PutRequest":{"Item":`+item(n)+`}}`)
		}
		c.must(b, t.sign(b, "BatchWriteItem", `{"RequestItems":{"`+table+`":[`+strings.Join(reqs, ",")+`]}}`))
	}
	return t
}

// startNoop starts a net/http server answering every request with a fixed
// DynamoDB-shaped body after reading it, as `tdbload noop` does.
func startNoop(b *testing.B) *target {
	b.Helper()
	payload := strings.Repeat("x", itemSize-19)
	one := `{"pk":{"S":"p00000000"},"sk":{"S":"s00"},"data":{"S":"` + payload + `"}}`
	many := strings.TrimSuffix(strings.Repeat(one+",", 20), ",")
	bodies := map[string][]byte{
		"GetItem": []byte(`{"Item":` + one + `}`),
		"Query":   []byte(`{"Count":20,"Items":[` + many + `],"ScannedCount":20}`),
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		body, ok := bodies[op]
		if !ok {
			body = []byte(`{}`)
		}
		h := w.Header()
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
		w.Write(body)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(l)
	b.Cleanup(func() { srv.Close() })
	return &target{addr: l.Addr().String(), akid: "sk_live_00000000000000000000000000000000_noop", secret: "x"}
}

// item returns item n as DynamoDB JSON: pk p<n/20>, sk s<n%20>, and a data
// string padding it to itemSize bytes.
func item(n int) string {
	pk, sk := fmt.Sprintf("p%08d", n/20), fmt.Sprintf("s%02d", n%20)
	pad := itemSize - (len("pk") + len(pk) + len("sk") + len(sk) + len("data"))
	return `{"pk":{"S":"` + pk + `"},"sk":{"S":"` + sk + `"},"data":{"S":"` + strings.Repeat("x", pad) + `"}}`
}

func key(n int) string {
	return fmt.Sprintf(`{"pk":{"S":"p%08d"},"sk":{"S":"s%02d"}}`, n/20, n%20)
}

// workloads build the body of variant i of each workload. Writes spread
// over a keyspace larger than the preload; reads hit preloaded items.
var workloads = []struct {
	name, op string
	body     func(i int) string
}{
	{"PutItem", "PutItem", func(i int) string {
		return `{"TableName":"` + table + `","Item":` + item(spread(i, 100000)) + `}`
	}},
	{"GetItem", "GetItem", func(i int) string {
		return `{"TableName":"` + table + `","Key":` + key(spread(i, preload)) + `}`
	}},
	{"Query20", "Query", func(i int) string {
		return `{"TableName":"` + table + `","KeyConditionExpression":"pk = :p",` +
			`"ExpressionAttributeValues":{":p":{"S":"` + fmt.Sprintf("p%08d", spread(i, preload/20)) + `"}}}`
	}},
	{"BatchWrite25", "BatchWriteItem", func(i int) string {
		var reqs []string
		for j := range 25 {
			reqs = append(reqs, `{"PutRequest":{"Item":`+item(spread(i*25+j, 100000))+`}}`)
		}
		return `{"RequestItems":{"` + table + `":[` + strings.Join(reqs, ",") + `]}}`
	}},
	{"Transact4", "TransactWriteItems", func(i int) string {
		var items []string
		for j := range 4 {
			items = append(items, `{"Put":{"TableName":"`+table+`","Item":`+item(spread(i*4+j, 100000))+`}}`)
		}
		return `{"TransactItems":[` + strings.Join(items, ",") + `]}`
	}},
}

// spread maps i to a pseudo-random number in [0, n), distinct for
// distinct i below n (a multiplicative hash is a bijection mod 2^64, then
// reduced; collisions past that are harmless).
func spread(i, n int) int {
	hi, _ := bits.Mul64(uint64(i+1)*0x9E3779B97F4A7C15, uint64(n))
	return int(hi)
}

// sign returns the complete HTTP/1.1 request for op with body, signed with
// aws-sdk-go-v2's signer as the SDK would. The signature stays valid for
// the 15 minutes of allowed clock skew, longer than any benchmark.
func (t *target) sign(tb testing.TB, op, body string) []byte {
	tb.Helper()
	return t.signTarget(tb, "DynamoDB_20120810."+op, body)
}

// signTarget is sign for any X-Amz-Target (DynamoDB Streams' too).
func (t *target) signTarget(tb testing.TB, target, body string) []byte {
	tb.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://"+t.addr+"/", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", target)
	r.Header.Set("Accept-Encoding", "identity")
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: t.akid, SecretAccessKey: t.secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now()); err != nil {
		tb.Fatal(err)
	}
	var w bytes.Buffer
	fmt.Fprintf(&w, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", t.addr, len(body))
	for name, vs := range r.Header {
		for _, v := range vs {
			fmt.Fprintf(&w, "%s: %s\r\n", name, v)
		}
	}
	w.WriteString("\r\n")
	w.WriteString(body)
	return w.Bytes()
}

// conn is a keep-alive HTTP/1.1 client connection that sends pre-built
// requests and reads responses with Content-Length bodies.
type conn struct {
	c    net.Conn
	r    *bufio.Reader
	body []byte
}

func (t *target) dial(tb testing.TB) *conn {
	tb.Helper()
	c, err := net.Dial("tcp", t.addr)
	if err != nil {
		tb.Fatal(err)
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

func (c *conn) close() { c.c.Close() }

// do sends req and returns the response status and body (valid until the
// next call).
func (c *conn) do(req []byte) (int, []byte, error) {
	if _, err := c.c.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	n := -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && strings.EqualFold(string(line[:15]), "content-length:") {
			n, err = strconv.Atoi(string(bytes.TrimSpace(line[15:])))
			if err != nil {
				return 0, nil, fmt.Errorf("bad %q", line)
			}
		}
	}
	if n < 0 {
		return 0, nil, fmt.Errorf("response without Content-Length")
	}
	if cap(c.body) < n {
		c.body = make([]byte, n)
	}
	c.body = c.body[:n]
	_, err = io.ReadFull(c.r, c.body)
	return status, c.body, err
}

func (c *conn) must(tb testing.TB, req []byte) []byte {
	tb.Helper()
	status, body, err := c.do(req)
	if err != nil {
		tb.Fatal(err)
	}
	if status != http.StatusOK {
		tb.Fatalf("status %d: %s", status, body)
	}
	return body
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run drives t with workload w's requests from concurrency connections and
// reports, besides ns/op (wall time per request at that concurrency, the
// inverse of throughput), cpu-µs/op: the process's CPU time per request
// (server and the thin client together).
func run(b *testing.B, t *target, name, op string, body func(int) string) {
	reqs := make([][]byte, variants)
	for i := range reqs {
		reqs[i] = t.sign(b, op, body(i))
	}
	conns := make(chan *conn, concurrency)
	for range concurrency {
		conns <- t.dial(b)
	}
	b.Cleanup(func() {
		close(conns)
		for c := range conns {
			c.close()
		}
	})
	// Warm up every connection (and caches) outside the timer.
	for range concurrency {
		c := <-conns
		c.must(b, reqs[0])
		conns <- c
	}
	var next atomic.Int64
	var failed atomic.Pointer[string]
	b.SetParallelism((concurrency + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := <-conns
		defer func() { conns <- c }()
		for pb.Next() {
			i := int(next.Add(1))
			status, body, err := c.do(reqs[i%variants])
			if err != nil || status != http.StatusOK {
				msg := fmt.Sprintf("%s: status %d, err %v: %.300s", name, status, err, body)
				failed.CompareAndSwap(nil, &msg)
				return
			}
		}
	})
	b.StopTimer()
	if msg := failed.Load(); msg != nil {
		b.Fatal(*msg)
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkServer runs each workload against tenantdb as `serve` runs it.
func BenchmarkServer(b *testing.B) {
	t := startTenantDB(b, node.Options{})
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) { run(b, t, w.name, w.op, w.body) })
	}
}

// BenchmarkNoop runs them against the fixed-answer net/http server: the
// baseline the others are divided by.
func BenchmarkNoop(b *testing.B) {
	t := startNoop(b)
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) { run(b, t, w.name, w.op, w.body) })
	}
}
