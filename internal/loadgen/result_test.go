package loadgen

import (
	"math"
	"strings"
	"testing"
)

func TestFormatMicros(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0µs"},
		{850.4, "850µs"},
		{1234, "1.23ms"},
		{12345, "12.3ms"},
		{123456, "123ms"},
		{2_500_000, "2.50s"},
		{math.NaN(), "-"},
		{-1, "-"},
	}
	for _, tt := range tests {
		if got := FormatMicros(tt.in); got != tt.want {
			t.Errorf("FormatMicros(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{math.NaN(), 5}, 5},
		{[]float64{7}, 7},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}

func result(label, workload string, ops, p99, cpu float64) Result {
	r := Result{
		Label: label, Workload: workload, OK: uint64(ops * 10), OpsPerSec: ops,
		Latency:   LatencySummary{Count: uint64(ops * 10), P50: p99 / 4, P99: p99},
		ClientCPU: CPUUsage{MicrosPerOp: 150, Cores: 0.8},
	}
	if cpu > 0 {
		r.ServerCPU = &CPUUsage{MicrosPerOp: cpu, Cores: 0.3}
	}
	r.MachineBusyCores = 1.5
	return r
}

func TestCompareTable(t *testing.T) {
	results := []Result{
		result("noop", "put", 5000, 20000, 60),
		result("dynalite", "put", 1000, 80000, 450),
		result("noop", "put", 5200, 22000, 62),
		result("dynalite", "put", 1100, 90000, 470),
		result("noop", "put", 4800, 18000, 58),
		result("dynalite", "put", 900, 70000, 460),
	}
	unsupported := Result{Label: "dynalite", Workload: "transact", Errors: 100,
		ErrorsByCode: []ErrorStat{{Code: "UnknownOperationException", Count: 100}}}
	results = append(results, result("noop", "transact", 3000, 30000, 70), unsupported)

	sums := Summarize(results)
	if len(sums) != 4 {
		t.Fatalf("Summarize: got %d summaries, want 4: %+v", len(sums), sums)
	}
	if s := sums[0]; s.Label != "noop" || s.Runs != 3 || s.OpsPerSec != 5000 || s.P99 != 20000 || s.ServerCPU != 60 {
		t.Errorf("noop put summary = %+v, want medians ops 5000, p99 20000, cpu 60 over 3 runs", s)
	}
	if s := sums[0]; math.Abs(s.OtherCores-0.4) > 1e-9 {
		t.Errorf("noop put OtherCores = %v, want 1.5-0.8-0.3 = 0.4", s.OtherCores)
	}

	got := CompareTable(sums, []string{"noop", "dynalite"})
	want := strings.Join([]string{
		"| workload | target | runs | ops/s | p50 | p99 | server CPU µs/op | client CPU µs/op | other cores | errors | ops/s vs noop | CPU/op vs noop | ops/s vs dynalite | CPU/op vs dynalite |",
		"|---|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|",
		"| put | noop | 3 | 5000 | 5.00ms | 20.0ms | 60 | 150 | 0.40 | 0 | - | - | 5.00x | 0.13x |",
		"| put | dynalite | 3 | 1000 | 20.0ms | 80.0ms | 460 | 150 | 0.40 | 0 | 0.20x | 7.67x | - | - |",
		"| transact | noop | 1 | 3000 | 7.50ms | 30.0ms | 70 | 150 | 0.40 | 0 | - | - | - | - |",
		"| transact | dynalite | 1 | unsupported | - | - | - | - | - | UnknownOperationException | - | - | - | - |",
		"",
	}, "\n")
	if got != want {
		t.Errorf("CompareTable:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteText(t *testing.T) {
	r := result("noop", "mixed", 1000, 8000, 60)
	r.Mix = "get=50,put=50"
	r.Endpoint = "http://127.0.0.1:1"
	r.Errors, r.Throttled = 3, 2
	r.ErrorsByCode = []ErrorStat{
		{Code: "ThrottlingException", Count: 2, Sample: "slow down", Throttle: true},
		{Code: "ValidationException", Count: 1, Sample: "bad"},
	}
	r.ByOp = []OpResult{{Op: "get", OK: 5000, OpsPerSec: 500}, {Op: "put", OK: 5000, OpsPerSec: 500}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"noop: mixed (get=50,put=50)\n",
		"endpoint http://127.0.0.1:1  concurrency 0  tenants 0  rate unbounded",
		"throughput 1000.0 ops/s  ok 10000  errors 3  throttled 2\n",
		"latency p50 2.00ms",
		"p99 8.00ms",
		"server cpu 60.0 µs/op",
		"client cpu 150.0 µs/op",
		"machine busy 1.50 cores, other processes 0.40 cores",
		"ThrottlingException (throttle)  2",
		"ValidationException",
		"get ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteText output lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteNoisyText(t *testing.T) {
	solo := result("victim", "mixed", 200, 4000, 60)
	ok := result("victim", "mixed", 195, 5000, 60)
	bad := result("victim", "mixed", 150, 9000, 60)
	agg := result("aggressor", "put", 100, 1000, 0)
	agg.Throttled, agg.Errors = 900, 905
	phases := []PhaseResult{
		{Phase: 1, Name: "victim alone", Victim: &solo},
		{Phase: 2, Name: "aggressor at 10x quota", AggressorRate: 1000, Victim: &ok, Aggressor: &agg},
		{Phase: 3, Name: "aggressor within quota, saturating", Victim: &bad, Aggressor: &agg},
	}
	var b strings.Builder
	if err := WriteNoisyText(&b, phases); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want header + 3:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"1", "victim alone", "200.0", "-"},
		{"2", "195.0", "0.97", "1.25x", "1000/s", "900", "5", "ok"},
		{"3", "150.0", "0.75", "2.25x", "unbounded", "MISS throughput+p99"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("phase %d line lacks %q: %s", i+1, w, lines[i+1])
			}
		}
	}
}
