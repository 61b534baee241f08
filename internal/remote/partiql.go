package remote

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/partiql"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The PartiQL operations run on this backend's own item operations, as on
// the embedded engine (package partiql translates each statement onto one),
// so their semantics, isolation and capacity are the item API's over the
// engine.

var _ partiql.Items = (*Backend)(nil)

// ExecuteStatement runs one PartiQL statement; see partiql.ExecuteStatement.
func (b *Backend) ExecuteStatement(ctx context.Context, s tenancy.Scope, in *wire.ExecuteStatementInput) (*wire.ExecuteStatementOutput, error) {
	return partiql.ExecuteStatement(ctx, s, b, in)
}

// BatchExecuteStatement runs up to 25 statements; see
// partiql.BatchExecuteStatement.
func (b *Backend) BatchExecuteStatement(ctx context.Context, s tenancy.Scope, in *wire.BatchExecuteStatementInput) (*wire.BatchExecuteStatementOutput, error) {
	return partiql.BatchExecuteStatement(ctx, s, b, in)
}

// ExecuteTransaction runs up to 100 statements as one transaction; see
// partiql.ExecuteTransaction.
func (b *Backend) ExecuteTransaction(ctx context.Context, s tenancy.Scope, in *wire.ExecuteTransactionInput) (*wire.ExecuteTransactionOutput, error) {
	return partiql.ExecuteTransaction(ctx, s, b, in)
}

// KeySchema returns the key attributes of table, or of its index, as s
// sees the table. Errors: ResourceNotFoundException, ValidationException
// (unknown or backfilling index), AccessDeniedException.
func (b *Backend) KeySchema(ctx context.Context, s tenancy.Scope, table, index string) (partiql.Keys, error) {
	tg, err := b.res.Open(ctx, s, table)
	if err != nil {
		return partiql.Keys{}, err
	}
	t := tg.Table
	if index == "" {
		return partiql.Keys{Hash: t.Hash.Name, Range: t.Range.Name}, nil
	}
	ix, err := t.ReadableIndex(index)
	if err != nil {
		return partiql.Keys{}, err
	}
	return partiql.Keys{Hash: ix.Hash.Name, Range: ix.Range.Name}, nil
}
