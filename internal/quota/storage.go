package quota

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TableStorage is what one table holds for one tenant environment.
type TableStorage = schema.TableStorage

// StorageSource reports a tenant's storage per table, as the backend that
// stores the tables counts it (the embedded engine's TenantStorage reads
// its statistics counters). Usage reports call it; quota never reads a
// backend's records itself.
type StorageSource interface {
	TenantStorage(ctx context.Context, t tenancy.TenantID) ([]TableStorage, error)
}
