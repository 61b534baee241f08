package quota

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Limited is a dynamo.Handler under admission control and metering: every
// operation is admitted by its Manager before it reaches the wrapped
// Handler (a rejected one never does) and charged what it consumed
// afterwards.
type Limited struct {
	next dynamo.Handler
	m    *Manager
}

var _ dynamo.Handler = (*Limited)(nil)

// Wrap returns next under m's admission control and metering.
// DescribeLimits reports the caller's quota (describelimits.go).
func (m *Manager) Wrap(next dynamo.Handler) *Limited {
	return &Limited{next: limitsReporter{next: next, m: m}, m: m}
}

// Handle admits, runs and charges one operation.
func (l *Limited) Handle(ctx context.Context, s tenancy.Scope, op *dynamo.Op, in any) (wire.Output, error) {
	tk, err := l.m.Admit(ctx, s, op, in)
	if err != nil {
		return nil, err
	}
	out, err := l.next.Handle(ctx, s, op, in)
	tk.Done(out, err)
	return out, err
}
