package engine

import (
	"context"
	"github.com/tenantdb/tenantdb/internal/schema"
	"sort"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// ListTables lists, in name order, the tables s can use: the shared
// tables and (for a tenant) its own. Limit is 1..100 (default 100);
// LastEvaluatedTableName is set when more names follow.
func (e *Engine) ListTables(ctx context.Context, s tenancy.Scope, in *wire.ListTablesInput) (*wire.ListTablesOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	limit := 100
	if in.Limit != nil {
		limit = *in.Limit
		if limit < 1 {
			return nil, apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", limit)
		}
		if limit > 100 {
			return nil, apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to 100", limit)
		}
	}
	if in.ExclusiveStartTableName != "" {
		if err := schema.ValidateTableName(in.ExclusiveStartTableName); err != nil {
			return nil, err
		}
	}
	set := map[string]bool{}
	e.mu.RLock()
	for name := range e.shared {
		set[name] = true
	}
	e.mu.RUnlock()
	if !s.Tenant().IsZero() {
		own, err := e.ownedTables(s)
		if err != nil {
			return nil, err
		}
		for name := range own {
			set[name] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		if n > in.ExclusiveStartTableName && s.AllowsTable(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := &wire.ListTablesOutput{TableNames: []string{}}
	if len(names) > limit {
		names = names[:limit]
		out.LastEvaluatedTableName = names[limit-1]
	}
	out.TableNames = append(out.TableNames, names...)
	return out, nil
}
