package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/partiql"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The PartiQL operations run on the engine's own item operations (package
// partiql translates each statement onto one), so their semantics,
// isolation and capacity are the item API's.

var _ partiql.Items = (*Engine)(nil)

// ExecuteStatement runs one PartiQL statement; see partiql.ExecuteStatement.
func (e *Engine) ExecuteStatement(ctx context.Context, s tenancy.Scope, in *wire.ExecuteStatementInput) (*wire.ExecuteStatementOutput, error) {
	return partiql.ExecuteStatement(ctx, s, e, in)
}

// BatchExecuteStatement runs up to 25 statements; see
// partiql.BatchExecuteStatement.
func (e *Engine) BatchExecuteStatement(ctx context.Context, s tenancy.Scope, in *wire.BatchExecuteStatementInput) (*wire.BatchExecuteStatementOutput, error) {
	return partiql.BatchExecuteStatement(ctx, s, e, in)
}

// ExecuteTransaction runs up to 100 statements as one transaction; see
// partiql.ExecuteTransaction.
func (e *Engine) ExecuteTransaction(ctx context.Context, s tenancy.Scope, in *wire.ExecuteTransactionInput) (*wire.ExecuteTransactionOutput, error) {
	return partiql.ExecuteTransaction(ctx, s, e, in)
}

// KeySchema returns the key attributes of table, or of its index, as s
// sees the table. Errors: ResourceNotFoundException, ValidationException
// (unknown or backfilling index), AccessDeniedException.
func (e *Engine) KeySchema(ctx context.Context, s tenancy.Scope, table, index string) (partiql.Keys, error) {
	if err := check(ctx, s); err != nil {
		return partiql.Keys{}, err
	}
	tg, err := e.res.Open(ctx, s, table)
	if err != nil {
		return partiql.Keys{}, err
	}
	t := tg.Table
	if index == "" {
		return partiql.Keys{Hash: t.Hash.Name, Range: t.Range.Name}, nil
	}
	ix, err := readIndex(t, &index)
	if err != nil {
		return partiql.Keys{}, err
	}
	return partiql.Keys{Hash: ix.Hash.Name, Range: ix.Range.Name}, nil
}
