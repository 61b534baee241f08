package resolve

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// CheckPlacement decides whether scope s may move its tenant's data
// between the pool and the tenant's silo store, or see such moves: the
// operator only, admitted to one tenant (where a tenant's data lives is
// the platform's decision and its cost; a tenant's own admin may not make
// it). Errors: AccessDeniedException.
func CheckPlacement(s tenancy.Scope) error {
	if !s.Valid() || !s.IsOperator() || s.Tenant().IsZero() {
		return apierr.New(apierr.AccessDenied, "only the operator may move a tenant's data or see its moves")
	}
	return nil
}
