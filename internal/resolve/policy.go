package resolve

import (
	"context"
	"sort"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Visible returns, in name order, the names of the tables scope s can
// use: the shared tables and (for a tenant) its own, within a narrowed
// credential's policy. ListTables pages through it.
func (r *Resolver) Visible(ctx context.Context, s tenancy.Scope) ([]string, error) {
	set := map[string]bool{}
	// NB: ListTables shows what the engine holds now, not what this
	// gateway loaded up to MaxStale ago (refresh.go).
	if err := r.refreshSharedFor(ctx, true); err != nil {
		return nil, err
	}
	r.mu.RLock()
	for name := range r.shared {
		set[name] = true
	}
	r.mu.RUnlock()
	if !s.Tenant().IsZero() {
		own, err := r.ownedFor(ctx, Namespace(s), true)
		if err != nil {
			return nil, err
		}
		for name := range own {
			set[name] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		if s.AllowsTable(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// MayCreate checks, before the request is validated, that scope s may
// create tables at all: the operator (shared tables) or a tenant admin
// (its own). Errors: AccessDeniedException.
func (r *Resolver) MayCreate(s tenancy.Scope, name string) error {
	if !s.IsOperator() && !s.CanManageTenantTables() && !s.Bypassed() {
		return apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:CreateTable on resource: %s", s.KeyID(), r.TableARN(name))
	}
	return nil
}

// AdmitCreate decides whether scope s may create the table t (validated,
// not yet persisted): it makes t a tenant table of s's environment unless
// s is the operator, and refuses a name outside a narrowed credential's
// policy, a name s already sees (for a tenant, also a shared table's) and
// a tenant environment's table beyond Options.MaxTenantTables. Errors:
// AccessDeniedException, ResourceInUseException, LimitExceededException.
// REQUIRES: DDL serialized by the backend until t is published.
func (r *Resolver) AdmitCreate(ctx context.Context, s tenancy.Scope, t *schema.Table) error {
	if !s.IsOperator() {
		t.Owner, t.OwnerEnv = s.Tenant(), s.Env()
		if t.Owner.IsZero() {
			return apierr.New(apierr.AccessDenied, "The credential is not bound to a tenant")
		}
	}
	if !s.AllowsTable(t.Name) {
		return apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:CreateTable on resource: %s", s.KeyID(), r.TableARN(t.Name))
	}
	if _, err := r.Lookup(ctx, s, t.Name); err == nil {
		return apierr.New(apierr.ResourceInUse, "Table already exists: %s", t.Name)
	} else if !apierr.Is(err, apierr.ResourceNotFound) {
		return err
	}
	if !t.Shared() {
		own, err := r.ownedByNS(ctx, Namespace(s))
		if err != nil {
			return err
		}
		if len(own) >= r.opts.MaxTenantTables {
			return apierr.New(apierr.LimitExceeded, "Subscriber limit exceeded: the number of tables exceeds the limit of %d tables", r.opts.MaxTenantTables)
		}
	}
	return nil
}

// CheckManage decides whether scope s may change table t (DDL, TTL, tags):
// the operator for shared tables, a tenant admin for its own tables.
// Errors: AccessDeniedException.
func (r *Resolver) CheckManage(s tenancy.Scope, t *schema.Table) error {
	if canManage(s, t) {
		return nil
	}
	return apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:%s on resource: %s",
		s.KeyID(), s.Action(), r.TableARN(t.Name))
}

func canManage(s tenancy.Scope, t *schema.Table) bool {
	if s.Bypassed() {
		return true
	}
	if t.Shared() {
		return s.IsOperator()
	}
	return s.CanManageTenantTables() && s.Tenant() == t.Owner
}
