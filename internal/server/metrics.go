package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// metrics are the server's Prometheus collectors. Label values are bounded:
// op is one of dynamo.Names or "unknown", code one of the error codes or
// "OK". Per-tenant figures belong to the quota package, which caps their
// cardinality.
type metrics struct {
	requests *prometheus.CounterVec   // op, code
	latency  *prometheus.HistogramVec // op
	inFlight prometheus.Gauge

	// Per operation, resolved once so that the hot path does no label
	// lookups on success.
	ok   map[string]prometheus.Counter
	hist map[string]prometheus.Observer
}

const unknownOpLabel = "unknown"

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tenantdb", Name: "requests_total",
			Help: "DynamoDB API requests by operation and result code (OK or the error code).",
		}, []string{"op", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tenantdb", Name: "request_duration_seconds",
			Help:    "Time from the start of a DynamoDB API request to the end of its response, by operation.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tenantdb", Name: "requests_in_flight",
			Help: "DynamoDB API requests being served.",
		}),
		ok:   map[string]prometheus.Counter{},
		hist: map[string]prometheus.Observer{},
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, op := range append(dynamo.Names(), unknownOpLabel) {
		m.ok[op] = m.requests.WithLabelValues(op, "OK")
		m.hist[op] = m.latency.WithLabelValues(op)
	}
	return m, nil
}

// observe records one finished request.
func (m *metrics) observe(op string, ok bool, kind apierr.Kind, elapsed time.Duration) {
	if op == "" {
		op = unknownOpLabel
	}
	m.hist[op].Observe(elapsed.Seconds())
	if ok {
		m.ok[op].Inc()
		return
	}
	m.requests.WithLabelValues(op, wire.ErrorCode(kind)).Inc()
}
