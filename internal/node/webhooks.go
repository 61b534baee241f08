package node

import (
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/fleetkey"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/webhook"
)

// FleetWebhookLease is how long a gateway holds a webhook subscription it
// delivers without renewing it: another gateway takes it over within
// this plus a third of it after the holder died (webhook.Options.Lease).
const FleetWebhookLease = 10 * time.Second

// openWebhooks starts webhook delivery and serves the subscriptions'
// admin routes. Embedded, subscriptions live in the store and follow the
// engine's change log; on a gateway they live in the engine (ctl) and
// follow the engine table's DynamoDB stream (remote.Follower), delivered
// by the gateway holding each one's lease.
func (n *Node) openWebhooks(o Options, key *auth.ServerKey, ctl controlStore, adm *admin.Handler) error {
	wo := o.Webhooks
	wo.DB, wo.Log, wo.Meter = n.db, n.engine, n.quotas
	if n.remote != nil {
		wo.KV, wo.Feed = ctl, n.remote.Follower(0)
		if wo.Lease <= 0 {
			wo.Lease = o.Remote.WebhookLease
		}
		if wo.Lease <= 0 {
			wo.Lease = FleetWebhookLease
		}
		// NB: a delivery's body is bounded as embedded (6 MB): a dead
		// letter larger than an engine item is stored in parts.
	}
	// NB: kept sealed under the server key in the control store and
	// re-sealed by its rotations: derived from the key at each start, it
	// would change with a rotation, and the signing secrets sealed before
	// would no longer open (fleetkey.WebhookSecret).
	var err error
	if wo.SecretKey, err = fleetkey.WebhookSecret(context.Background(), ctl, n.auth, key.Derive("tenantdb webhook secrets v1")); err != nil {
		return err
	}
	wo.AllowPrivate = o.AllowPrivateWebhooks
	wo.Region, wo.Logger = o.Region, n.log
	wo.TenantActive = func(ctx context.Context, t tenancy.TenantID) bool {
		tn, err := n.catalog.Tenant(ctx, t)
		return err == nil && tn.Status == catalog.Active
	}
	if n.webhooks, err = webhook.New(wo); err != nil {
		return err
	}
	if err := n.webhooks.Start(); err != nil {
		return err
	}
	adm.ServeSubscriptions(n.webhooks)
	return nil
}

var _ webhook.Feed = (*remote.Follower)(nil)
