package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/transfer"
)

// FleetTransferLease is how long a gateway running an export or import
// of the DynamoDB API may go without renewing its lease on the job's
// record before another gateway takes the job over (transfer.Options.Lease).
const FleetTransferLease = 10 * time.Second

// openGatewayTransfers serves exports and imports on a gateway: imports
// write through the server's handler (fenced, as every request's writes
// are), exports read the caller's collections from the remote backend,
// and the API's job records live in the control plane's store shared by
// the fleet (ctl). The export root must be the same shared directory on
// every gateway.
func (n *Node) openGatewayTransfers(o Options, ctl controlStore, adm *admin.Handler, log *slog.Logger) error {
	var err error
	if n.transfers, err = transfer.New(transfer.Options{Source: remoteSource{n.remote},
		Handler: n.remote.Fence(n.backend), Unlimited: n.remote.Fence(dynamo.Bind(n.remote)),
		Audit: n.audit, Root: o.ExportRoot, Region: o.Region, Logger: log.With("component", "transfer"),
		Control: ctl, Owner: n.remote.GatewayID(), Lease: FleetTransferLease, Sweep: o.Remote.JobSweep}); err != nil {
		return err
	}
	if o.ExportRoot != "" {
		n.remote.SetTransfers(n.transfers)
	}
	adm.ServeTransfers(n.transfers)
	return nil
}

// remoteSource is the remote backend as what exports read.
type remoteSource struct{ *remote.Backend }

func (r remoteSource) View(ctx context.Context, sc tenancy.Scope, tables []string) (transfer.View, error) {
	return r.ExportView(ctx, sc, tables)
}

func (r remoteSource) PastTime(ctx context.Context, sc tenancy.Scope, table string, at time.Time) error {
	return r.PastExport(ctx, sc, table, at)
}
