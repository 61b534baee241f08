package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/loadgen"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// TestMain lets the test binary act as tdbload itself, for the aggressor
// child process that `tdbload noisy` starts from os.Executable().
func TestMain(m *testing.M) {
	if os.Getenv("TDBLOAD_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startNoop serves the no-op server on 127.0.0.1:0 for the test's lifetime.
func startNoop(t *testing.T) string {
	t.Helper()
	return startNoopHandler(t, newNoopHandler(1024))
}

// startNoopHandler serves h on 127.0.0.1:0 for the test's lifetime.
func startNoopHandler(t *testing.T, h *noopHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveNoop(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("noop server: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func runTdbload(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("tdbload %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestLoadAgainstNoop drives every workload through the real SDK and HTTP
// stack against the no-op server and checks that every request succeeded.
func TestLoadAgainstNoop(t *testing.T) {
	endpoint := startNoop(t)
	pid := strconv.Itoa(os.Getpid()) // the no-op server runs in this process
	var lines []string
	for _, w := range loadgen.Workloads {
		dur := "150ms"
		if w == "mixed" {
			dur = "1s"
		}
		out := runTdbload(t, "run", "--endpoint", endpoint, "--workload", w, "--duration", dur, "--warmup", "50ms",
			"--concurrency", "4", "--create-table", "--preload", "40", "--server-pid", pid, "--json", "--label", "noop")
		var r loadgen.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: --json output is not a Result: %v\n%s", w, err, out)
		}
		if r.OK == 0 || r.Errors != 0 || r.Workload != w {
			t.Errorf("%s: ok %d, errors %d %+v, workload %q; want ok > 0 and no errors", w, r.OK, r.Errors, r.ErrorsByCode, r.Workload)
		}
		if r.ServerCPU == nil || r.Latency.P99 <= 0 || r.Latency.Count != r.OK {
			t.Errorf("%s: server cpu %v, latency %+v: want server CPU and latencies of every ok request", w, r.ServerCPU, r.Latency)
		}
		if w == "mixed" && len(r.ByOp) != 5 {
			t.Errorf("mixed: by_op has %d operations, want 5", len(r.ByOp))
		}
		lines = append(lines, out)
	}

	// Text output, a request-bounded run and many tenants.
	out := runTdbload(t, "--endpoint", endpoint, "--workload", "get", "--preloaded", "40", "--duration", "0",
		"--requests", "100", "--warmup", "0", "--concurrency", "8", "--credentials", "a:x,b:y,c:z", "--rate", "2000")
	for _, want := range []string{"get\n", "tenants 3", "rate 2000/s", "ok 100 ", "from schedule p50"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}

	// The comparison table over the JSON results.
	file := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	table := runTdbload(t, "table", "--baseline", "noop", file)
	if n := strings.Count(table, "\n"); n != 2+len(loadgen.Workloads) {
		t.Errorf("table has %d lines, want %d:\n%s", n, 2+len(loadgen.Workloads), table)
	}
}

func TestNoisyAgainstNoop(t *testing.T) {
	endpoint := startNoop(t)
	t.Setenv("TDBLOAD_TEST_AS_MAIN", "1") // the aggressor runs in a child process
	out := runTdbload(t, "noisy", "--endpoint", endpoint, "--preload", "40", "--victim-rate", "200", "--victim-concurrency", "2",
		"--aggressor-concurrency", "4", "--aggressor-quota", "50", "--phase-duration", "200ms", "--warmup", "0", "--pause", "10ms",
		"--victim", "v:secret", "--aggressor", "a:secret", "--json")
	var phases []loadgen.PhaseResult
	if err := json.Unmarshal([]byte(out), &phases); err != nil {
		t.Fatalf("noisy --json output: %v\n%s", err, out)
	}
	if len(phases) != 3 {
		t.Fatalf("got %d phases, want 3", len(phases))
	}
	for _, p := range phases {
		if p.Victim == nil || p.Victim.OK == 0 || p.Victim.Errors != 0 {
			t.Errorf("phase %d: victim %+v, want successful requests", p.Phase, p.Victim)
		}
		if (p.Phase == 1) != (p.Aggressor == nil) {
			t.Errorf("phase %d: aggressor present = %v", p.Phase, p.Aggressor != nil)
		}
	}
	if got, want := phases[1].AggressorRate, 500.0; got != want {
		t.Errorf("phase 2 aggressor rate = %v, want 10 x quota = %v", got, want)
	}
	if a := phases[1].Aggressor; a.OK == 0 || a.Rate != 500 || a.Concurrency != 4 {
		t.Errorf("phase 2 aggressor (child process): ok %d rate %v concurrency %d, want requests at 500/s on 4 workers", a.OK, a.Rate, a.Concurrency)
	}

	// In-process aggressor.
	out = runTdbload(t, "noisy", "--endpoint", endpoint, "--preloaded", "40", "--preload", "0", "--victim-rate", "100",
		"--victim-concurrency", "2", "--aggressor-concurrency", "2", "--phase-duration", "100ms", "--warmup", "0",
		"--pause", "0s", "--phases", "2", "--aggressor-process=false")
	if !strings.Contains(out, "aggressor at 10x quota") {
		t.Errorf("noisy text output lacks phase 2:\n%s", out)
	}
}

func TestNoopUnknownOperation(t *testing.T) {
	endpoint := startNoop(t)
	cf := clientFlags{endpoint: endpoint, region: "us-east-1", timeout: 5 * time.Second}
	c := newClient(&cf, newHTTPClient(1), loadgen.DefaultCredential)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: new(string)})
	if got, want := loadgen.ErrorCode(err), "UnknownOperationException"; got != want {
		t.Errorf("DeleteTable on the no-op server: error code %q (%v), want %q", got, err, want)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"frobnicate"},
		{"run", "--workload", "scan", "--endpoint", "http://127.0.0.1:1"},
		{"run", "--concurrency", "0"},
		{"noisy", "--phases", "4"},
		{"table"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("tdbload %v: got nil error", args)
		}
	}
}

// TestNoopStorageFloor checks that the no-op's storage floor really stores
// what the SDK puts, durably, under the item's key: the floor is only a
// fair baseline if it does the write.
func TestNoopStorageFloor(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := newNoopHandler(1024)
	h.db = db
	endpoint := startNoopHandler(t, h)
	out := runTdbload(t, "run", "--endpoint", endpoint, "--workload", "put", "--duration", "0", "--requests", "50",
		"--warmup", "0", "--concurrency", "4", "--keyspace", "10", "--batch-size", "5", "--json")
	var r loadgen.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json output is not a Result: %v\n%s", err, out)
	}
	if r.OK != 50 || r.Errors != 0 {
		t.Fatalf("ok %d, errors %d %+v; want 50 ok", r.OK, r.Errors, r.ErrorsByCode)
	}
	// Every put addressed one of 10 items; count what the floor stored.
	found := 0
	for i := range 10 {
		pk := fmt.Sprintf("p%08d", i)
		for j := range 20 {
			key := []byte("tdbload\x00" + pk + "\x00" + fmt.Sprintf("s%02d", j))
			v, err := db.Get(key)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(v, []byte(`"Item":`)) {
				t.Errorf("%q holds %.60q, want a PutItem body", key, v)
			}
			found++
		}
	}
	if found == 0 {
		t.Fatal("the storage floor stored nothing under the items' keys")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
