package quota

import "github.com/tenantdb/tenantdb/internal/tenancy"

// sampleScope is the scope SampleStorage reads tenant t's storage with
// for the hourly samples: the server's own work for t, not a request of
// it, so that no request's scope (its key, its role, a temporary
// credential's policy) is kept past the request.
//
// NB: the one place of this package where no guard decided. It is only
// built for a tenant whose activity this server recorded in the hour
// sampled — a request the guard admitted, a webhook delivery of its
// subscription, or TTL expiry of its items — and it only reads the
// storage counters under that tenant's range (StorageSource).
func sampleScope(t tenancy.TenantID) tenancy.Scope {
	return tenancy.SystemScope(t, "quota.storage")
}
