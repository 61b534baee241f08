package quota

import (
	"context"
	"math"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// limitsReporter is the Handler a Limited wraps: next, with DescribeLimits
// answered from the quota the operator set instead of next's numbers.
type limitsReporter struct {
	next dynamo.Handler
	m    *Manager
}

// Handle runs op on next; a DescribeLimits answer then reports the calling
// tenant's effective quota (its record, else the server's default quota):
// a table can use at most the tenant's read and write units per second,
// and so can all its tables together, so the table and the account maxima
// are the same numbers. For the operator, who has no quota, it reports the
// server's default quota. Fractional units are rounded down. next answers
// first, so it checks the scope as for any other operation.
func (r limitsReporter) Handle(ctx context.Context, s tenancy.Scope, op *dynamo.Op, in any) (wire.Output, error) {
	out, err := r.next.Handle(ctx, s, op, in)
	l, ok := out.(*wire.DescribeLimitsOutput)
	if err != nil || !ok {
		return out, err
	}
	read, write, err := r.m.limitsOf(s.Tenant())
	if err != nil {
		return nil, err
	}
	l.AccountMaxReadCapacityUnits, l.TableMaxReadCapacityUnits = read, read
	l.AccountMaxWriteCapacityUnits, l.TableMaxWriteCapacityUnits = write, write
	return l, nil
}

// limitsOf returns tenant t's effective read and write units per second
// (t zero: the server's defaults).
func (m *Manager) limitsOf(t tenancy.TenantID) (read, write int64, err error) {
	eff := m.defaults
	if !t.IsZero() {
		st, err := m.state(t)
		if err != nil {
			return 0, 0, apierr.Wrap(apierr.Internal, err, "reading the tenant's quota")
		}
		st.mu.Lock()
		eff = st.eff
		st.mu.Unlock()
	}
	return int64(math.Floor(eff.ReadUnits)), int64(math.Floor(eff.WriteUnits)), nil
}
