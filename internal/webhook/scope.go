package webhook

import "github.com/tenantdb/tenantdb/internal/tenancy"

// workerScope is the scope a subscription's worker reads its tenant
// environment's change log with.
//
// NB: the one place of this package where no guard decided. It is only
// ever built from a subscription record stored under its tenant's range,
// which an admitted admin request of that tenant created.
func workerScope(t tenancy.TenantID, env string) tenancy.Scope {
	return tenancy.SystemScopeIn(t, env, "webhook")
}
