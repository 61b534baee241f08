package quota

import (
	"context"
	"math"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DeliveryOp is the name webhook deliveries are metered under, beside the
// DynamoDB operations: a usage report's by_operation["WebhookDelivery"]
// counts a tenant's delivery attempts and the read units they consumed.
const DeliveryOp = "WebhookDelivery"

// deliveryUnit is how many bytes of delivered records one read unit
// pays for (a strongly consistent read's 4 KB).
const deliveryUnit = 4096

// MeterDelivery records one webhook delivery attempt of s's tenant:
// records records in a body of bytes bytes, acknowledged (ok) or not,
// answered after latency. Each attempt consumes ceil(bytes/4 KB) read
// units, charged to the tenant's read capacity and usage like its reads
// of the change log, and is counted in the tenantdb_tenant_webhook_*
// metrics.
func (m *Manager) MeterDelivery(ctx context.Context, s tenancy.Scope, records int, bytes int64, ok bool, latency time.Duration) {
	t := s.Tenant()
	if t.IsZero() {
		return
	}
	st, err := m.state(t)
	if err != nil {
		return
	}
	now := m.now()
	u := wire.Usage{ReadUnits: math.Ceil(float64(bytes) / deliveryUnit)}
	if !m.opts.Disabled {
		st.mu.Lock()
		st.debit(u, now)
		st.mu.Unlock()
	}
	st.recent.Add(1)
	m.meter.record(t, now, DeliveryOp, u, false)
	tm := m.metrics.of(st)
	if ok {
		tm.whOK.Inc()
		tm.whRecords.Add(float64(records))
	} else {
		tm.whFailed.Inc()
	}
	tm.whBytes.Add(float64(bytes))
	tm.whLatency.Observe(latency.Seconds())
}

// DeliveryDelay returns how long s's tenant's next webhook delivery should
// wait for its read capacity: 0 unless admission control is on and the
// tenant's read bucket is empty, then the time it takes to refill one
// unit (at most a second).
func (m *Manager) DeliveryDelay(ctx context.Context, s tenancy.Scope) time.Duration {
	t := s.Tenant()
	if m.opts.Disabled || t.IsZero() {
		return 0
	}
	st, err := m.state(t)
	if err != nil {
		return 0
	}
	now := m.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.read.allow(now) {
		return 0
	}
	return time.Second
}
