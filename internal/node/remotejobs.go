package node

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// auditRemoteJobs records the remote backend's background jobs — TTL
// syncs and index backfills — in the audit log of the table's owner (the
// platform's for a shared table): their start, their resumption by a
// gateway that found one left, and their end, as a tenant move's steps
// are recorded (admin/moves.go).
func auditRemoteJobs(r *remote.Backend, log *audit.Log, logger *slog.Logger) {
	r.SetJobHook(func(ev remote.JobEvent) {
		// NB: no request: the job runs (or resumed) in the background.
		s := tenancy.SystemScope(ev.Tenant, "table."+ev.Kind)
		target := fmt.Sprintf("table=%s %s", ev.Table, ev.Detail)
		if ev.By != "" {
			target += " by=" + ev.By
		}
		e := audit.Event{Actor: "system:" + ev.Kind, Role: "operator", Action: "table." + ev.Kind + "." + ev.Phase, Target: target}
		if _, err := log.Append(context.Background(), s, e); err != nil {
			logger.Error("audit append failed", "action", e.Action, "tenant", ev.Tenant.String(), "err", err)
		}
	})
}

// auditPlatform records a step of the fleet's server key rotation, which
// runs (or resumed) in the background, in the platform's audit log.
func auditPlatform(log *audit.Log, logger *slog.Logger) func(ctx context.Context, action, target string) {
	return func(ctx context.Context, action, target string) {
		// NB: no request: a step of a rotation another gateway may have begun.
		s := tenancy.SystemScope(tenancy.TenantID{}, action)
		e := audit.Event{Actor: "system:server-key", Role: "operator", Action: action, Target: target}
		if _, err := log.Append(ctx, s, e); err != nil {
			logger.Error("audit append failed", "action", action, "err", err)
		}
	}
}
