package aggregate

import "github.com/tenantdb/tenantdb/internal/tenancy"

// WorkerScope is the scope an aggregate's worker follows its tenant
// environment's change log and writes its materialised items with (the
// Scope of Options).
//
// NB: the one place of this package where no guard decided. It is only
// ever built for an aggregate stored under its tenant environment's
// range, which an admitted admin request of that tenant (or the
// operator) created.
func WorkerScope(t tenancy.TenantID, env string) tenancy.Scope {
	return tenancy.SystemScopeIn(t, env, "aggregate")
}

// systemScope is the operator's scope for the server's own work on
// shared tables (finding the tenants of one).
func systemScope() tenancy.Scope { return tenancy.SystemScope(tenancy.TenantID{}, "aggregate") }
