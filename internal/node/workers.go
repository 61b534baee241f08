package node

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/lifecycle"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// tenantWorkers are the node's workers that write into tenants' ranges
// or files (webhook delivery, aggregates, the DynamoDB API's exports and
// imports), as the lifecycle retires them from a deleted tenant, and the
// files the deletion removes (the tenant's export tree). They are built
// after the lifecycle, so it reaches them through the node.
type tenantWorkers struct{ n *Node }

var (
	_ lifecycle.Workers = tenantWorkers{}
	_ lifecycle.Files   = tenantWorkers{}
)

func (w tenantWorkers) RetireTenant(t tenancy.TenantID) {
	if w.n.webhooks != nil {
		w.n.webhooks.RetireTenant(t)
	}
	if w.n.aggregates != nil {
		w.n.aggregates.RetireTenant(t)
	}
	if w.n.transfers != nil {
		w.n.transfers.RetireTenant(t)
	}
}

func (w tenantWorkers) UnretireTenant(t tenancy.TenantID) {
	if w.n.webhooks != nil {
		w.n.webhooks.UnretireTenant(t)
	}
	if w.n.aggregates != nil {
		w.n.aggregates.UnretireTenant(t)
	}
	if w.n.transfers != nil {
		w.n.transfers.UnretireTenant(t)
	}
}

// RemoveTenant removes the tenant's tree of the export root.
func (w tenantWorkers) RemoveTenant(ctx context.Context, s tenancy.Scope) error {
	if w.n.transfers == nil {
		return nil
	}
	return w.n.transfers.RemoveTenant(ctx, s)
}
