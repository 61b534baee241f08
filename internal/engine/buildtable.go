package engine

import (
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// BuildTable validates a CreateTable request as DynamoDB does and returns
// the new table's definition (without id, owner and times), for a backend
// other than the engine (internal/remote) until the validation moves to
// internal/schema (see schema/DESIGN.md).
func BuildTable(in *wire.CreateTableInput) (*schema.Table, error) {
	var e *Engine // buildTable uses no engine state
	return e.buildTable(in)
}

// CheckKeyCondition validates a compiled key condition against the key
// schema queried as DynamoDB does (isExpr: it came from a
// KeyConditionExpression, not KeyConditions), for the same backends.
func CheckKeyCondition(kc *expr.KeyCondition, hashKey, rangeKey schema.KeyAttr, isExpr bool) error {
	return checkKeyCondition(kc, hashKey, rangeKey, isExpr)
}
