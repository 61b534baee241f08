package node

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/aggregate"
)

// FleetAggregateLease is how long a gateway works an aggregate without
// renewing its lease: another gateway takes it over within this plus a
// third of it after the holder died (aggregate.Options.Lease).
const FleetAggregateLease = 10 * time.Second

// openGatewayAggregates serves aggregates on a gateway: kept in the
// engine through the control plane's store, followed from the engine
// table's stream (remote.AggregateFeed), worked by the gateway holding
// each one's lease (aggregate/DESIGN.md, "On a gateway").
func (n *Node) openGatewayAggregates(o Options, ctl controlStore, reg prometheus.Registerer, log *slog.Logger, adm *admin.Handler) error {
	lease := FleetAggregateLease
	if o.Remote.WebhookLease > 0 {
		lease = o.Remote.WebhookLease // NB: one knob for the fleet's delivery leases
	}
	var err error
	if n.aggregates, err = aggregate.New(aggregate.Options{KV: ctl, Feed: n.remote.AggregateFeed(0), Items: n.remote,
		Tables: n.remote, Holder: n.remote.GatewayID(), Lease: lease, Scope: aggregate.WorkerScope,
		Registerer: reg, Logger: log}); err != nil {
		return err
	}
	adm.ServeAggregates(n.aggregates)
	return n.aggregates.Start()
}
