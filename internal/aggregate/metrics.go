package aggregate

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the aggregator's Prometheus collectors. They carry no
// tenant or aggregate label: /metrics is the operator's, and per-tenant
// series would say which tenants have aggregates.
type metrics struct {
	applyLag prometheus.Histogram
}

func newMetrics(r prometheus.Registerer, s *Service) *metrics {
	m := &metrics{
		applyLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tenantdb_aggregate_apply_lag_seconds",
			Help:    "Time from a change's commit to its being folded into an aggregate.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	if r == nil {
		return m
	}
	r.MustRegister(m.applyLag)
	r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tenantdb_aggregate_lag_seconds",
		Help: "How far the aggregate furthest behind is behind the latest committed write (0 when every aggregate is caught up).",
	}, func() float64 {
		var worst time.Duration
		for _, l := range s.lags(s.o.Now()) {
			worst = max(worst, l)
		}
		return worst.Seconds()
	}))
	r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tenantdb_aggregates",
		Help: "Aggregates being maintained.",
	}, func() float64 { return float64(len(s.lags(s.o.Now()))) }))
	return m
}

func (m *metrics) observe(d time.Duration) { m.applyLag.Observe(max(0, d).Seconds()) }
