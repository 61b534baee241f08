package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// ListTables lists, in name order, the tables s can use: the shared
// tables and (for a tenant) its own; see resolve.Resolver.ListTables.
func (e *Engine) ListTables(ctx context.Context, s tenancy.Scope, in *wire.ListTablesInput) (*wire.ListTablesOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return e.res.ListTables(ctx, s, in)
}
