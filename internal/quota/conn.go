package quota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Defaults of the connection gate (see DESIGN.md, "Connections").
const (
	DefaultConnInflightPerCPU = 4
	DefaultConnQueueTimeout   = 10 * time.Second
)

// connQueueLimit bounds the connections waiting in the connection gate,
// per tenant and in total. A waiting connection costs no more than an
// idle one (a parked goroutine), so the bound is only a backstop.
const connQueueLimit = 1 << 16

// ErrConnShed is returned by AcquireConn (wrapped) when a connection's
// request could not be admitted: its tenant's or the server's queue of
// connections is full, or it waited longer than ConnQueueTimeout.
var ErrConnShed = errors.New("quota: connection not admitted")

// AcquireConn waits until the next request of a connection bound to
// tenant t may be read and served (connections not bound to a tenant are
// not gated: see internal/server/conngate.go). The caller calls release exactly once, when the request no longer needs the
// slot (internal/server: when it reaches the Backend, whose own gates take
// over, or when its response is written) or the connection is gone.
//
// It returns at once with a no-op release when admission control is off
// (Options.Disabled). Errors: ctx's error when ctx ends while waiting (the
// connection was closed), ErrConnShed (wrapped) when the request is shed,
// an error reading the tenant's quota, or an error for the zero tenant.
func (m *Manager) AcquireConn(ctx context.Context, t tenancy.TenantID) (release func(), err error) {
	if m.opts.Disabled {
		return func() {}, nil
	}
	if t.IsZero() {
		return nil, errors.New("quota: AcquireConn needs a tenant")
	}
	st, err := m.state(t)
	if err != nil {
		return nil, fmt.Errorf("quota: reading the tenant's quota: %w", err)
	}
	st.mu.Lock()
	weight := st.eff.Weight
	st.mu.Unlock()
	f, g := st.connFlow, m.conns
	now := m.now()
	waited, err := g.acquire(ctx, f, weight, 0, now)
	if waited {
		m.metrics.connWait.Observe(m.now().Sub(now).Seconds())
	}
	switch {
	case err == nil:
		return func() { g.release(f, 0) }, nil
	case errors.Is(err, errTenantQueueFull), errors.Is(err, errOverloaded), errors.Is(err, errQueueTimeout):
		m.metrics.connShed.Inc()
		return nil, fmt.Errorf("%w: %w", ErrConnShed, err)
	default:
		return nil, err
	}
}
