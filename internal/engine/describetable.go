package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DescribeTable describes a table visible to s. ItemCount, TableSizeBytes
// and the indexes' counts are the calling tenant's own (the operator sees
// zeros). Errors: ResourceNotFoundException.
func (e *Engine) DescribeTable(ctx context.Context, s tenancy.Scope, in *wire.DescribeTableInput) (*wire.DescribeTableOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	tg, err := e.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	st, err := e.statsFor(ctx, tg)
	if err != nil {
		return nil, err
	}
	return &wire.DescribeTableOutput{Table: e.describe(tg.Table, st)}, nil
}
