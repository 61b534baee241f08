package console

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The health page reads the server's own /metrics, in-process, with the
// session's key as bearer token: the server serves it to the operator only,
// so a tenant admin gets the server's refusal.

type opHealth struct {
	Op            string
	Requests      float64
	Errors        float64
	P50, P90, P99 string
	Rate          string // requests per second since the last look, if any
}

type healthData struct {
	Uptime     string
	InFlight   float64
	Requests   float64
	Errors     float64
	Rate       string
	Since      string // what Rate is measured over
	Goroutines float64
	RSSMiB     float64
	OpenFDs    float64
	Ops        []opHealth
	// The store: WAL fsync latency (one fsync per group commit) and disk.
	WALSyncs          float64
	WALP50, WALP99    string
	WALMean           string
	DiskUsedMiB       float64
	DiskAvailMiB      float64 // NaN where the file system does not say
	DiskTotalMiB      float64
	DiskFreePercent   string
	CompactionDebtMiB float64
	WALWrittenMiB     float64
	// The silo stores (one per tenant with silo data), all together.
	Silo siloHealth
}

// siloHealth sums up the silo stores; Present is false where the server
// reports none of their metrics.
type siloHealth struct {
	Present                  bool
	Open, InUse              float64
	Opens, Closes, Evictions float64
	OpenDiskMiB, DiskMiB     float64
	DiskKnown                bool // false with silo stores in memory
	WALSyncs                 float64
	WALP50, WALP99, WALMean  string
}

// healthSample is the previous look at the counters, for rates.
type healthSample struct {
	at  time.Time
	ops map[string]float64
}

// scrape fetches and parses /metrics with the session's key.
func (h *Handler) scrape(ctx context.Context, key string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+dynamoHost+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/plain")
	resp, err := inProc{h.o.Server}.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// NB: the server decided (401 for any key but the operator's); the
		// session is still valid, so it is shown as a refusal.
		return nil, &dynamoError{Status: http.StatusForbidden, Type: "AccessDenied",
			Message: "the server's health is shown to the operator only"}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

func (h *Handler) health(q *req) {
	if h.o.Server == nil {
		h.badRequest(q, "This server has no metrics.")
		return
	}
	fams, err := h.scrape(q.ctx, q.s.key)
	if err != nil {
		h.fail(q, err)
		return
	}
	now := h.o.Now()
	d := healthData{}
	gauge := func(name string) float64 {
		if f := fams[name]; f != nil && len(f.Metric) > 0 {
			m := f.Metric[0]
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
		}
		return math.NaN()
	}
	if st := gauge("process_start_time_seconds"); !math.IsNaN(st) {
		d.Uptime = now.Sub(time.Unix(int64(st), 0)).Round(time.Second).String()
	}
	d.InFlight = gauge("tenantdb_requests_in_flight")
	d.Goroutines = gauge("go_goroutines")
	d.RSSMiB = gauge("process_resident_memory_bytes") / (1 << 20)
	d.OpenFDs = gauge("process_open_fds")

	if f := fams["tenantdb_storage_wal_sync_seconds"]; f != nil && len(f.Metric) > 0 {
		hg := f.Metric[0].GetHistogram()
		if d.WALSyncs = float64(hg.GetSampleCount()); d.WALSyncs > 0 {
			d.WALP50, d.WALP99 = quantile(hg, .5), quantile(hg, .99)
			d.WALMean = dur(hg.GetSampleSum() / d.WALSyncs)
		}
	}
	const mib = 1 << 20
	d.DiskUsedMiB = gauge("tenantdb_storage_disk_usage_bytes") / mib
	d.DiskAvailMiB = gauge("tenantdb_storage_disk_available_bytes") / mib
	d.DiskTotalMiB = gauge("tenantdb_storage_disk_total_bytes") / mib
	if d.DiskTotalMiB > 0 {
		d.DiskFreePercent = fmt.Sprintf("%.0f%%", 100*d.DiskAvailMiB/d.DiskTotalMiB)
	}
	d.CompactionDebtMiB = gauge("tenantdb_storage_compaction_debt_bytes") / mib
	d.WALWrittenMiB = gauge("tenantdb_storage_wal_bytes_written_total") / mib

	if _, ok := fams["tenantdb_silo_stores_open"]; ok {
		d.Silo = siloHealth{Present: true, Open: gauge("tenantdb_silo_stores_open"), InUse: gauge("tenantdb_silo_stores_in_use"),
			Opens: gauge("tenantdb_silo_store_opens_total"), Closes: gauge("tenantdb_silo_store_closes_total"),
			Evictions:   gauge("tenantdb_silo_store_evictions_total"),
			OpenDiskMiB: gauge("tenantdb_silo_open_stores_disk_usage_bytes") / mib, DiskMiB: gauge("tenantdb_silo_disk_usage_bytes") / mib}
		d.Silo.DiskKnown = !math.IsNaN(d.Silo.DiskMiB)
		if f := fams["tenantdb_silo_wal_sync_seconds"]; f != nil && len(f.Metric) > 0 {
			hg := f.Metric[0].GetHistogram()
			if d.Silo.WALSyncs = float64(hg.GetSampleCount()); d.Silo.WALSyncs > 0 {
				d.Silo.WALP50, d.Silo.WALP99 = quantile(hg, .5), quantile(hg, .99)
				d.Silo.WALMean = dur(hg.GetSampleSum() / d.Silo.WALSyncs)
			}
		}
	}

	ops := map[string]*opHealth{}
	op := func(name string) *opHealth {
		if ops[name] == nil {
			ops[name] = &opHealth{Op: name}
		}
		return ops[name]
	}
	if f := fams["tenantdb_requests_total"]; f != nil {
		for _, m := range f.Metric {
			o := op(label(m, "op"))
			v := m.GetCounter().GetValue()
			o.Requests += v
			d.Requests += v
			if label(m, "code") != "OK" {
				o.Errors += v
				d.Errors += v
			}
		}
	}
	if f := fams["tenantdb_request_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			hg := m.GetHistogram()
			if hg.GetSampleCount() == 0 {
				continue
			}
			o := op(label(m, "op"))
			o.P50, o.P90, o.P99 = quantile(hg, .5), quantile(hg, .9), quantile(hg, .99)
		}
	}
	cur := healthSample{at: now, ops: map[string]float64{}}
	for name, o := range ops {
		cur.ops[name] = o.Requests
	}
	h.healthMu.Lock()
	prev := h.lastHealth
	h.lastHealth = cur
	h.healthMu.Unlock()
	if secs := now.Sub(prev.at).Seconds(); prev.ops != nil && secs > 0 {
		var total float64
		for name, o := range ops {
			r := (o.Requests - prev.ops[name]) / secs
			total += r
			o.Rate = fmt.Sprintf("%.1f", r)
		}
		d.Rate = fmt.Sprintf("%.1f", total)
		d.Since = "since the previous look " + now.Sub(prev.at).Round(time.Second).String() + " ago"
	}
	for _, o := range ops {
		if o.Requests > 0 {
			d.Ops = append(d.Ops, *o)
		}
	}
	slices.SortFunc(d.Ops, func(a, b opHealth) int {
		if a.Requests != b.Requests {
			if a.Requests > b.Requests {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Op, b.Op)
	})
	h.show(q, "health", q.page("Server health", d))
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// quantile estimates the q-quantile of a histogram by linear
// interpolation inside its bucket, as Prometheus' histogram_quantile does.
func quantile(hg *dto.Histogram, q float64) string {
	bs := slices.Clone(hg.Bucket)
	sort.Slice(bs, func(i, j int) bool { return bs[i].GetUpperBound() < bs[j].GetUpperBound() })
	total := float64(hg.GetSampleCount())
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range bs {
		n := float64(b.GetCumulativeCount())
		if n >= rank {
			up := b.GetUpperBound()
			if math.IsInf(up, 1) {
				return fmt.Sprintf("> %s", dur(lower))
			}
			if n == below {
				return dur(up)
			}
			return dur(lower + (up-lower)*(rank-below)/(n-below))
		}
		lower, below = b.GetUpperBound(), n
	}
	return fmt.Sprintf("> %s", dur(lower))
}

func dur(secs float64) string {
	return time.Duration(secs * float64(time.Second)).Round(time.Microsecond).String()
}

// healthState is the Handler's memory of the previous look.
type healthState struct {
	healthMu   sync.Mutex
	lastHealth healthSample
}
