package quota

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Throttle reasons, the "reason" label of throttled_requests_total.
const (
	reasonCapacity     = iota // the tenant's read or write capacity is used up
	reasonControl             // too many control-plane requests
	reasonQueueFull           // the tenant's admission queue is full
	reasonQueueTimeout        // waited too long for a slot
	reasonOverloaded          // the server's admission queue is full
	reasonCount
)

var reasonNames = [reasonCount]string{"capacity", "control_plane", "queue_full", "queue_timeout", "overloaded"}

// otherLabel is the tenant label of every tenant without its own.
const otherLabel = "other"

// tenantRule is how the per-tenant metrics choose their tenant label, for
// a cap of %d tenants; their HELP texts end with it and README.md says the
// same.
const tenantRule = ` The tenant label is the tenant's id for at most %d tenants, "other" for the rest: a tenant gets its own label at its first request while one is free, so with fewer tenants all of a tenant's counts are in its own series; once all are taken, every 10 s the busiest tenants of the last 10 s get labels, an unlabelled tenant displacing a labelled one only if it made at least twice as many requests. A tenant's requests before it got a label and after it lost it count under "other", and its series is deleted when it loses the label.`

// metrics are quota's Prometheus collectors. Per-tenant series exist only
// for at most cap tenants and the rest share the tenant label "other", so
// a million tenants cost cap+1 series per metric. While labels are free a
// tenant takes one at its first request (of), so that its counts are never
// split between "other" and its own series; once they are all taken, the
// busiest tenants are re-chosen every rebalance. A tenant that loses its
// label has its series deleted (later traffic counts under "other"); every
// series stays monotonic. tenantRule states this for users.
type metrics struct {
	cap       int
	free      atomic.Int64             // cap - len(labelled), for of's fast path
	requests  *prometheus.CounterVec   // tenant
	readUnits *prometheus.CounterVec   // tenant
	writeUnit *prometheus.CounterVec   // tenant
	throttled *prometheus.CounterVec   // tenant, reason
	latency   *prometheus.HistogramVec // tenant
	queueWait prometheus.Histogram
	connWait  prometheus.Histogram
	connShed  prometheus.Counter
	other     *tenantMetrics

	// Webhook deliveries (delivery.go).
	whAttempts *prometheus.CounterVec   // tenant, outcome
	whRecords  *prometheus.CounterVec   // tenant
	whBytes    *prometheus.CounterVec   // tenant
	whLatency  *prometheus.HistogramVec // tenant

	mu       sync.Mutex
	labelled map[*tenantState]struct{}
}

// tenantMetrics are one label value's resolved series.
type tenantMetrics struct {
	label     string
	requests  prometheus.Counter
	readUnits prometheus.Counter
	writeUnit prometheus.Counter
	latency   prometheus.Observer
	throttled [reasonCount]prometheus.Counter

	whOK, whFailed prometheus.Counter
	whRecords      prometheus.Counter
	whBytes        prometheus.Counter
	whLatency      prometheus.Observer
}

func newMetrics(reg prometheus.Registerer, cap int, gates []*gate) (*metrics, error) {
	rule := fmt.Sprintf(tenantRule, cap)
	m := &metrics{
		cap: cap,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "requests_total",
			Help: "DynamoDB requests by tenant." + rule,
		}, []string{"tenant"}),
		readUnits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "consumed_read_units_total",
			Help: "Read capacity units consumed, by tenant." + rule,
		}, []string{"tenant"}),
		writeUnit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "consumed_write_units_total",
			Help: "Write capacity units consumed, by tenant." + rule,
		}, []string{"tenant"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "throttled_requests_total",
			Help: "Requests rejected by admission control, by tenant and reason (capacity, control_plane, queue_full, queue_timeout, overloaded)." + rule,
		}, []string{"tenant", "reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "request_duration_seconds",
			Help:    "Time from admission to the end of the operation (queue wait and the engine; not HTTP, authentication or encoding), by tenant." + rule,
			Buckets: prometheus.ExponentialBuckets(.000125, 2, 14), // 125 µs .. 1 s
		}, []string{"tenant"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tenantdb", Subsystem: "admission", Name: "queue_wait_seconds",
			Help:    "Time requests waited in the fair admission queue (requests admitted at once are not observed).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		connWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tenantdb", Subsystem: "admission", Name: "conn_wait_seconds",
			Help:    "Time connections waited in the connection gate before their next request was read (requests admitted at once are not observed).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		connShed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "admission", Name: "conn_shed_total",
			Help: "Connections closed because their request could not be admitted by the connection gate (queue full or wait timed out).",
		}),
		whAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "webhook_deliveries_total",
			Help: "Webhook delivery attempts by tenant and outcome (ok: a 2xx answer; failed: any other answer or none)." + rule,
		}, []string{"tenant", "outcome"}),
		whRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "webhook_records_total",
			Help: "Change records delivered to webhooks (acknowledged with a 2xx), by tenant." + rule,
		}, []string{"tenant"}),
		whBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "webhook_bytes_total",
			Help: "Bytes of webhook request bodies sent (every attempt), by tenant." + rule,
		}, []string{"tenant"}),
		whLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tenantdb", Subsystem: "tenant", Name: "webhook_delivery_duration_seconds",
			Help:    "Time from sending a webhook delivery to its answer (or failure), by tenant." + rule,
			Buckets: prometheus.ExponentialBuckets(.001, 2, 15), // 1 ms .. 16 s
		}, []string{"tenant"}),
		labelled: map[*tenantState]struct{}{},
	}
	cs := []prometheus.Collector{m.requests, m.readUnits, m.writeUnit, m.throttled, m.latency, m.queueWait, m.connWait, m.connShed,
		m.whAttempts, m.whRecords, m.whBytes, m.whLatency}
	for c, g := range gates {
		labels := prometheus.Labels{"class": [...]string{"read", "write", "conn"}[c]}
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: "tenantdb", Subsystem: "admission", Name: "inflight", ConstLabels: labels,
				Help: "Requests running under admission control, by class (read: reads and control plane; write: writes and DDL; conn: requests of connections admitted by the connection gate).",
			}, func() float64 { i, _ := g.stats(); return float64(i) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: "tenantdb", Subsystem: "admission", Name: "queued", ConstLabels: labels,
				Help: "Requests waiting in the fair admission queue, by class.",
			}, func() float64 { _, q := g.stats(); return float64(q) }),
		)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.other = m.series(otherLabel)
	m.free.Store(int64(cap))
	return m, nil
}

func (m *metrics) series(label string) *tenantMetrics {
	tm := &tenantMetrics{
		label:     label,
		requests:  m.requests.WithLabelValues(label),
		readUnits: m.readUnits.WithLabelValues(label),
		writeUnit: m.writeUnit.WithLabelValues(label),
		latency:   m.latency.WithLabelValues(label),
		whOK:      m.whAttempts.WithLabelValues(label, "ok"),
		whFailed:  m.whAttempts.WithLabelValues(label, "failed"),
		whRecords: m.whRecords.WithLabelValues(label),
		whBytes:   m.whBytes.WithLabelValues(label),
		whLatency: m.whLatency.WithLabelValues(label),
	}
	for r := range tm.throttled {
		tm.throttled[r] = m.throttled.WithLabelValues(label, reasonNames[r])
	}
	return tm
}

// of returns the series st counts under, giving st a label of its own if
// one is free.
func (m *metrics) of(st *tenantState) *tenantMetrics {
	if tm := st.metrics.Load(); tm != nil {
		return tm
	}
	if m.free.Load() > 0 {
		m.mu.Lock()
		defer m.mu.Unlock()
		if tm := st.metrics.Load(); tm != nil {
			return tm
		}
		if len(m.labelled) < m.cap {
			m.label(st)
			return st.metrics.Load()
		}
	}
	return m.other
}

// label gives st its own series. REQUIRES: m.mu, a free label.
func (m *metrics) label(st *tenantState) {
	st.metrics.Store(m.series(st.tenant.String()))
	m.labelled[st] = struct{}{}
	m.free.Store(int64(m.cap - len(m.labelled)))
}

func (m *metrics) unlabel(st *tenantState) {
	tm := st.metrics.Swap(nil)
	if tm == nil {
		return
	}
	delete(m.labelled, st)
	m.free.Store(int64(m.cap - len(m.labelled)))
	m.requests.DeleteLabelValues(tm.label)
	m.readUnits.DeleteLabelValues(tm.label)
	m.writeUnit.DeleteLabelValues(tm.label)
	m.latency.DeleteLabelValues(tm.label)
	m.whAttempts.DeleteLabelValues(tm.label, "ok")
	m.whAttempts.DeleteLabelValues(tm.label, "failed")
	m.whRecords.DeleteLabelValues(tm.label)
	m.whBytes.DeleteLabelValues(tm.label)
	m.whLatency.DeleteLabelValues(tm.label)
	for _, r := range reasonNames {
		m.throttled.DeleteLabelValues(tm.label, r)
	}
}

// rebalance gives labels to the busiest tenants since the last rebalance.
// A free label goes to the busiest unlabelled tenant; a labelled tenant
// loses its label only to one at least twice as busy (hysteresis, so that
// series do not churn). states lists every tenant with traffic since the
// last call (with its count in recent); rebalance resets the counts.
func (m *metrics) rebalance(states []*tenantState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type cand struct {
		st *tenantState
		n  int64
	}
	var lab, unl []cand
	for st := range m.labelled {
		lab = append(lab, cand{st, st.recent.Swap(0)})
	}
	for _, st := range states {
		if st.metrics.Load() != nil {
			continue
		}
		if n := st.recent.Swap(0); n > 0 {
			unl = append(unl, cand{st, n})
		}
	}
	sort.Slice(lab, func(i, j int) bool { return lab[i].n < lab[j].n })
	sort.Slice(unl, func(i, j int) bool { return unl[i].n > unl[j].n })
	for _, u := range unl {
		if len(m.labelled) >= m.cap {
			if len(lab) == 0 || u.n <= 2*lab[0].n {
				break
			}
			m.unlabel(lab[0].st)
			lab = lab[1:]
		}
		m.label(u.st)
	}
}

// forget drops st's series (st is being evicted).
func (m *metrics) forget(st *tenantState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unlabel(st)
}
