package resolve

import (
	"context"
	"sort"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// ListTables answers a ListTables request from Visible: in name order, the
// tables s can use, Limit 1..100 (default 100), LastEvaluatedTableName set
// when more names follow. It needs nothing of a backend, so every backend
// answers ListTables with it.
func (r *Resolver) ListTables(ctx context.Context, s tenancy.Scope, in *wire.ListTablesInput) (*wire.ListTablesOutput, error) {
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
	visible, err := r.Visible(ctx, s)
	if err != nil {
		return nil, err
	}
	names := visible[sort.SearchStrings(visible, in.ExclusiveStartTableName):]
	if len(names) > 0 && names[0] == in.ExclusiveStartTableName {
		names = names[1:]
	}
	out := &wire.ListTablesOutput{TableNames: []string{}}
	if len(names) > limit {
		names = names[:limit]
		out.LastEvaluatedTableName = names[limit-1]
	}
	out.TableNames = append(out.TableNames, names...)
	return out, nil
}
