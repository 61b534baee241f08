package lifecycle

import (
	"context"
	"errors"

	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// FinishDeletions finishes the deletion of every tenant that was already
// in status deleting at the previous call (prev): a deletion cut short —
// its server killed, its engine failing — leaves the tenant deleting, and
// without this only a retried DELETE finished it. A tenant seen deleting
// for the first time is left for the next call, so that a deletion still
// running elsewhere (a gateway of the same fleet) is normally done by
// then; finishing one that is not is safe, every step being idempotent,
// only wasted work. It returns the tenants deleting now, for the next
// call, and records each finished deletion in the platform's audit log.
func (s *Service) FinishDeletions(ctx context.Context, prev map[tenancy.TenantID]bool) (map[tenancy.TenantID]bool, error) {
	ts, err := s.o.Catalog.Tenants(ctx)
	if err != nil {
		return prev, err
	}
	now := map[tenancy.TenantID]bool{}
	var errs []error
	for _, t := range ts {
		if t.Status != catalog.Deleting {
			continue
		}
		if !prev[t.ID] {
			now[t.ID] = true
			continue
		}
		// NB: no request: the server finishes a deletion the operator
		// asked for and was acknowledged as begun (the tenant deleting).
		sc := tenancy.SystemScope(t.ID, "tenant.delete")
		if err := s.Delete(ctx, sc); err != nil {
			now[t.ID] = true
			errs = append(errs, err)
			continue
		}
		ev := audit.Event{Actor: "system:tenant.delete", Role: "operator", Action: "tenant.delete", Target: t.ID.String(),
			Reason: "finished a deletion left unfinished"}
		if _, err := s.o.Audit.Append(ctx, tenancy.SystemScope(keyspace.Platform, "tenant.delete"), ev); err != nil {
			errs = append(errs, err)
		}
	}
	return now, errors.Join(errs...)
}
