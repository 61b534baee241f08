package node

import (
	"github.com/tenantdb/tenantdb/internal/lifecycle"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// tenantWorkers are the node's workers that write into tenants' ranges
// (webhook delivery, aggregates), as the lifecycle retires them from a
// deleted tenant. They are built after the lifecycle, so it reaches them
// through the node.
type tenantWorkers struct{ n *Node }

var _ lifecycle.Workers = tenantWorkers{}

func (w tenantWorkers) RetireTenant(t tenancy.TenantID) {
	if w.n.webhooks != nil {
		w.n.webhooks.RetireTenant(t)
	}
	if w.n.aggregates != nil {
		w.n.aggregates.RetireTenant(t)
	}
}

func (w tenantWorkers) UnretireTenant(t tenancy.TenantID) {
	if w.n.webhooks != nil {
		w.n.webhooks.UnretireTenant(t)
	}
	if w.n.aggregates != nil {
		w.n.aggregates.UnretireTenant(t)
	}
}
