package quota

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TableStorage is what one table holds for one tenant environment.
type TableStorage = schema.TableStorage

// StorageSource reports the storage per table of scope s's tenant (every
// environment), as the backend that stores the tables counts it: the
// embedded engine's TenantStorage reads its statistics counters, a
// gateway's the engine's storage counters (internal/remote, storage.go).
// Usage reports call it with the scope the guard admitted; the hourly
// samples (Manager.SampleStorage) with the server's own scope for the
// tenant (sampleScope), which has the operator's role and no environment.
// Quota never reads a backend's records itself.
type StorageSource interface {
	TenantStorage(ctx context.Context, s tenancy.Scope) ([]TableStorage, error)
}
