package loadgen

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one Run measured. Its JSON form is tdbload's --json output
// and the input of CompareTable; keep field names stable.
type Result struct {
	Label       string  `json:"label,omitempty"`
	Endpoint    string  `json:"endpoint,omitempty"`
	Workload    string  `json:"workload"`
	Mix         string  `json:"mix,omitempty"`
	Concurrency int     `json:"concurrency"`
	Tenants     int     `json:"tenants"`
	Rate        float64 `json:"rate,omitempty"`
	ItemSize    int     `json:"item_size"`
	Interrupted bool    `json:"interrupted,omitempty"`
	ElapsedSec  float64 `json:"elapsed_s"`

	// OK counts successful requests; OpsPerSec is OK per second. A batch
	// or transaction is one request.
	OK          uint64  `json:"ok"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	Errors      uint64  `json:"errors"`
	Throttled   uint64  `json:"throttled"`
	Unprocessed uint64  `json:"unprocessed_items,omitempty"`
	// Latency covers successful requests from send to response.
	Latency LatencySummary `json:"latency"`
	// SchedLatency (rate-limited runs only) measures from each request's
	// scheduled start, so it includes time spent waiting for a free worker.
	SchedLatency *LatencySummary `json:"sched_latency,omitempty"`
	ByOp         []OpResult      `json:"by_op"`
	ErrorsByCode []ErrorStat     `json:"errors_by_code,omitempty"`
	// CPU per op divides by all requests, failed ones included.
	ServerCPU      *CPUUsage `json:"server_cpu,omitempty"`
	ServerCPUError string    `json:"server_cpu_error,omitempty"`
	ClientCPU      CPUUsage  `json:"client_cpu"`
	// MachineBusyCores is the whole machine's busy CPU over the window, in
	// cores: what it has beyond server and client is other load (noise).
	MachineBusyCores float64 `json:"machine_busy_cores"`
}

// OtherCores returns the machine's busy cores not used by the client or the
// server: other processes competing for the CPU during the run.
func (r *Result) OtherCores() float64 {
	other := r.MachineBusyCores - r.ClientCPU.Cores
	if r.ServerCPU != nil {
		other -= r.ServerCPU.Cores
	}
	return math.Max(other, 0)
}

// OpResult is the part of a Result for one operation.
type OpResult struct {
	Op          string         `json:"op"`
	OK          uint64         `json:"ok"`
	OpsPerSec   float64        `json:"ops_per_sec"`
	Errors      uint64         `json:"errors"`
	Throttled   uint64         `json:"throttled"`
	Unprocessed uint64         `json:"unprocessed_items,omitempty"`
	Latency     LatencySummary `json:"latency"`
}

// LatencySummary holds latency quantiles in microseconds.
type LatencySummary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p999_us"`
	Max   float64 `json:"max_us"`
}

// CPUUsage is the CPU time a process used over the measured window.
type CPUUsage struct {
	PID         int     `json:"pid,omitempty"`
	Seconds     float64 `json:"seconds"`
	Cores       float64 `json:"cores"`
	MicrosPerOp float64 `json:"us_per_op"`
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func summarize(h *Histogram) LatencySummary {
	return LatencySummary{
		Count: h.Count(),
		Mean:  us(h.Mean()),
		P50:   us(h.Quantile(0.50)),
		P90:   us(h.Quantile(0.90)),
		P99:   us(h.Quantile(0.99)),
		P999:  us(h.Quantile(0.999)),
		Max:   us(h.Max()),
	}
}

// FormatMicros renders a duration given in microseconds with 3 significant
// digits and a unit: "850µs", "1.23ms", "2.50s".
func FormatMicros(v float64) string {
	switch {
	case math.IsNaN(v) || v < 0:
		return "-"
	case v < 1000:
		return fmt.Sprintf("%.0fµs", v)
	case v < 10_000:
		return fmt.Sprintf("%.2fms", v/1e3)
	case v < 100_000:
		return fmt.Sprintf("%.1fms", v/1e3)
	case v < 1_000_000:
		return fmt.Sprintf("%.0fms", v/1e3)
	default:
		return fmt.Sprintf("%.2fs", v/1e6)
	}
}

// WriteText prints r for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	title := r.Workload
	if r.Mix != "" {
		title += " (" + r.Mix + ")"
	}
	if r.Label != "" {
		title = r.Label + ": " + title
	}
	fmt.Fprintf(&b, "%s\n", title)
	target := r.Endpoint
	if target == "" {
		target = "-"
	}
	rate := "unbounded"
	if r.Rate > 0 {
		rate = fmt.Sprintf("%g/s", r.Rate)
	}
	fmt.Fprintf(&b, "  endpoint %s  concurrency %d  tenants %d  rate %s  item %d B  window %.2fs%s\n",
		target, r.Concurrency, r.Tenants, rate, r.ItemSize, r.ElapsedSec, map[bool]string{true: "  (interrupted)"}[r.Interrupted])
	fmt.Fprintf(&b, "  throughput %.1f ops/s  ok %d  errors %d  throttled %d", r.OpsPerSec, r.OK, r.Errors, r.Throttled)
	if r.Unprocessed > 0 {
		fmt.Fprintf(&b, "  unprocessed items %d", r.Unprocessed)
	}
	b.WriteString("\n")
	writeLatency(&b, "latency", r.Latency)
	if r.SchedLatency != nil {
		writeLatency(&b, "from schedule", *r.SchedLatency)
	}
	if r.ServerCPU != nil {
		fmt.Fprintf(&b, "  server cpu %.1f µs/op  (%.2f cores, pid %d)\n", r.ServerCPU.MicrosPerOp, r.ServerCPU.Cores, r.ServerCPU.PID)
	} else if r.ServerCPUError != "" {
		fmt.Fprintf(&b, "  server cpu unknown: %s\n", r.ServerCPUError)
	}
	fmt.Fprintf(&b, "  client cpu %.1f µs/op  (%.2f cores)\n", r.ClientCPU.MicrosPerOp, r.ClientCPU.Cores)
	fmt.Fprintf(&b, "  machine busy %.2f cores, other processes %.2f cores\n", r.MachineBusyCores, r.OtherCores())
	if len(r.ByOp) > 1 {
		b.WriteString("  by operation:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "    op\tops/s\tok\terrors\tthrottled\tp50\tp99\tmax\n")
		for _, o := range r.ByOp {
			fmt.Fprintf(tw, "    %s\t%.1f\t%d\t%d\t%d\t%s\t%s\t%s\n", o.Op, o.OpsPerSec, o.OK, o.Errors, o.Throttled,
				FormatMicros(o.Latency.P50), FormatMicros(o.Latency.P99), FormatMicros(o.Latency.Max))
		}
		tw.Flush()
	}
	if len(r.ErrorsByCode) > 0 {
		b.WriteString("  errors by code:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, e := range r.ErrorsByCode {
			kind := ""
			if e.Throttle {
				kind = " (throttle)"
			}
			fmt.Fprintf(tw, "    %s%s\t%d\t%s\n", e.Code, kind, e.Count, e.Sample)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeLatency(b *strings.Builder, name string, l LatencySummary) {
	fmt.Fprintf(b, "  %s p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n", name,
		FormatMicros(l.P50), FormatMicros(l.P90), FormatMicros(l.P99), FormatMicros(l.P999), FormatMicros(l.Max), FormatMicros(l.Mean))
}

// median returns the median of xs (the mean of the middle two for an even
// count), ignoring NaNs; NaN when none is left.
func median(xs []float64) float64 {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Summary is the median over repeated runs of one workload on one target.
type Summary struct {
	Workload  string
	Label     string
	Runs      int
	OpsPerSec float64
	P50, P99  float64 // µs
	ServerCPU float64 // µs per op, NaN when unknown
	ClientCPU float64 // µs per op
	// OtherCores is the CPU other processes used during the runs (noise).
	OtherCores float64
	// ErrorRate is the median fraction of failed requests; Errors names
	// the codes seen in any run.
	ErrorRate float64
	Errors    []string
}

// Summarize groups results by workload and label (in order of first
// appearance) and takes the median of each metric over the runs.
func Summarize(results []Result) []Summary {
	type key struct{ workload, label string }
	var order []key
	groups := map[key][]Result{}
	for _, r := range results {
		k := key{r.Workload, r.Label}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Summary
	for _, k := range order {
		rs := groups[k]
		var ops, p50, p99, scpu, ccpu, erate, other []float64
		codes := map[string]bool{}
		for _, r := range rs {
			ops = append(ops, r.OpsPerSec)
			p50 = append(p50, nanIfZero(r.Latency.Count, r.Latency.P50))
			p99 = append(p99, nanIfZero(r.Latency.Count, r.Latency.P99))
			if r.ServerCPU != nil {
				scpu = append(scpu, r.ServerCPU.MicrosPerOp)
			}
			ccpu = append(ccpu, r.ClientCPU.MicrosPerOp)
			other = append(other, r.OtherCores())
			if n := r.OK + r.Errors; n > 0 {
				erate = append(erate, float64(r.Errors)/float64(n))
			}
			for _, e := range r.ErrorsByCode {
				codes[e.Code] = true
			}
		}
		s := Summary{
			Workload: k.workload, Label: k.label, Runs: len(rs),
			OpsPerSec: median(ops), P50: median(p50), P99: median(p99),
			ServerCPU: median(scpu), ClientCPU: median(ccpu), ErrorRate: median(erate), OtherCores: median(other),
		}
		if math.IsNaN(s.ErrorRate) {
			s.ErrorRate = 0
		}
		for c := range codes {
			s.Errors = append(s.Errors, c)
		}
		sort.Strings(s.Errors)
		out = append(out, s)
	}
	return out
}

func nanIfZero(n uint64, v float64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return v
}

// CompareTable renders summaries as a markdown table, one row per workload
// and target, with throughput and server CPU ratios against each baseline
// label (e.g. "noop", "dynalite") of the same workload. A target whose
// every request failed is shown as unsupported with its error codes.
func CompareTable(sums []Summary, baselines []string) string {
	byKey := map[[2]string]Summary{}
	for _, s := range sums {
		byKey[[2]string{s.Workload, s.Label}] = s
	}
	var b strings.Builder
	b.WriteString("| workload | target | runs | ops/s | p50 | p99 | server CPU µs/op | client CPU µs/op | other cores | errors |")
	for _, bl := range baselines {
		fmt.Fprintf(&b, " ops/s vs %s | CPU/op vs %s |", bl, bl)
	}
	b.WriteString("\n|---|---|--:|--:|--:|--:|--:|--:|--:|---|")
	for range baselines {
		b.WriteString("--:|--:|")
	}
	b.WriteString("\n")
	for _, s := range sums {
		unsupported := s.OpsPerSec == 0 && s.ErrorRate > 0
		errs := "0"
		if s.ErrorRate > 0 || len(s.Errors) > 0 {
			errs = fmt.Sprintf("%.2g%% %s", s.ErrorRate*100, strings.Join(s.Errors, ","))
		}
		if unsupported {
			fmt.Fprintf(&b, "| %s | %s | %d | unsupported | - | - | - | - | - | %s |", s.Workload, s.Label, s.Runs, strings.Join(s.Errors, ","))
			for range baselines {
				b.WriteString(" - | - |")
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %s | %s | %s | %s | %.2f | %s |", s.Workload, s.Label, s.Runs, s.OpsPerSec,
			FormatMicros(s.P50), FormatMicros(s.P99), fmtNum(s.ServerCPU), fmtNum(s.ClientCPU), s.OtherCores, errs)
		for _, bl := range baselines {
			base, ok := byKey[[2]string{s.Workload, bl}]
			if !ok || bl == s.Label || base.OpsPerSec == 0 {
				b.WriteString(" - | - |")
				continue
			}
			fmt.Fprintf(&b, " %s | %s |", fmtRatio(s.OpsPerSec/base.OpsPerSec), fmtRatio(s.ServerCPU/base.ServerCPU))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func fmtNum(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}
