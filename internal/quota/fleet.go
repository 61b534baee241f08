package quota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Fleet-wide capacity (DESIGN.md, "A fleet of gateways"). With
// Options.Fleet set, every token bucket of a tenant (read, write, control
// plane, and per table) is one bucket kept in the engine that a fleet of
// gateways shares, and each gateway's bucket holds only a lease: a slice
// of capacity taken from the engine with one call, spent locally by
// requests, and renewed when it is used up. So a gateway makes one engine
// call per slice, not per request, and the tenant's capacity is the same
// whether it talks to one gateway or to N.

// Leaser takes capacity from token buckets kept outside the gateway and
// shared by every gateway (internal/remote keeps them in the engine).
// Each bucket, named by key, refills at rate units per second up to size
// units; Lease takes units from it at now, and only if the bucket holds
// at least that many (a bucket never goes into debt in the engine: the
// gateways carry the debt of their requests locally).
//
// granted false means the bucket has less than units; retryAt is then the
// earliest time a Lease of units can succeed, as far as the leaser knows
// (the gateway refuses the tenant's requests locally until then, without
// asking again). now is the gateway's clock: the leaser must not read one
// of its own, so that tests can drive it.
type Leaser interface {
	Lease(ctx context.Context, key string, units, rate, size float64, now time.Time) (granted bool, retryAt time.Time, err error)
}

// DefaultLeaseSlice is Options.LeaseSlice's default.
const DefaultLeaseSlice = 100 * time.Millisecond

// lease is what makes a bucket a gateway's share of a fleet-wide one.
type lease struct {
	key string
	// mu makes one request at a time take a lease for the bucket; the
	// others wait for it and then spend what it took.
	mu sync.Mutex
	// retryAt: the engine refused a lease, and will until then (guarded
	// by tenantState.mu).
	retryAt time.Time
}

// attach makes b, configured for tenant st's bucket named name, leased
// from the fleet's bucket, if the Manager has one. A new leased bucket
// holds nothing: the first request takes a lease. REQUIRES: st.mu.
func (m *Manager) attach(st *tenantState, b *bucket, name string) {
	if m.opts.Fleet == nil || b.lease != nil {
		return
	}
	b.lease = &lease{key: st.tenant.String() + "/" + name}
	b.tokens = 0
}

// sliceOf is the units of one lease of b: LeaseSlice worth of its rate,
// at least one unit and at most the bucket.
func (m *Manager) sliceOf(b *bucket) float64 {
	return min(max(b.rate*m.opts.LeaseSlice.Seconds(), 1), b.size)
}

// renew takes a lease for b, st's empty bucket, unless another request
// did meanwhile or the engine refused one until later. It takes enough to
// repay b's debt and hold one slice; a refusal sets b's retryAt.
func (m *Manager) renew(ctx context.Context, st *tenantState, b *bucket) error {
	l := b.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	st.mu.Lock()
	now := m.now()
	if b.tokens > 0 || now.Before(l.retryAt) || b.rate == 0 {
		st.mu.Unlock()
		return nil
	}
	units := min(m.sliceOf(b)-b.tokens, b.size)
	rate, size := b.rate, b.size
	st.mu.Unlock()

	granted, retryAt, err := m.opts.Fleet.Lease(ctx, l.key, units, rate, size, now)
	if err != nil {
		m.leases.WithLabelValues("error").Inc()
		return apierr.Wrap(apierr.ServiceUnavailable, fmt.Errorf("quota: leasing capacity %s: %w", l.key, err),
			"The tenant's capacity could not be taken from the engine; retry with backoff.")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if granted {
		m.leases.WithLabelValues("granted").Inc()
		// NB: a bucket reconfigured meanwhile keeps the lease: the units
		// were taken from the fleet's bucket and are this gateway's.
		b.tokens += units
		st.debits++
		return nil
	}
	m.leases.WithLabelValues("refused").Inc()
	if !retryAt.After(now) {
		retryAt = now.Add(time.Duration(units / rate * float64(time.Second)))
	}
	l.retryAt = retryAt
	return nil
}

// leaseMetrics counts the leases a gateway took, by result.
func newLeaseMetrics(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tenantdb_quota_leases_total",
		Help: "Capacity leases this gateway asked the engine for (fleet-wide quotas), by result: granted, refused (the tenant's fleet-wide bucket was empty), error.",
	}, []string{"result"})
	return c, reg.Register(c)
}
