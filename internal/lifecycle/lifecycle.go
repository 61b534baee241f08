// Package lifecycle creates, suspends, resumes and deletes tenants across
// everything that keeps state for one: the catalog (the tenant's record,
// credentials and memberships), the audit log, the quota manager's
// buckets, the engine's data outside the tenant's key range (silo stores,
// cached tables) and its files (exports under the export root).
//
// The admin plane calls it with the tenancy.Scope the guard admitted;
// the parts it coordinates are named in Options, so nothing is found by
// type assertion.
package lifecycle

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// Engine is the part of a storage engine that keeps a tenant's data
// outside its key range. The embedded engine implements it.
type Engine interface {
	// DropTenant forgets the scope's tenant's data outside its key range
	// and refuses its later writes. It is idempotent.
	DropTenant(ctx context.Context, s tenancy.Scope) error
	// ReviveTenant lifts DropTenant's refusal of writes, for a tenant
	// created again with a deleted tenant's id.
	ReviveTenant(s tenancy.Scope)
}

// Workers are the server's own background workers that write state into
// tenants' key ranges (webhook delivery cursors, aggregates).
type Workers interface {
	// RetireTenant stops the workers of tenant t: once it returns, none
	// writes into t's range and none will until UnretireTenant.
	RetireTenant(t tenancy.TenantID)
	// UnretireTenant lets them go on (a deletion failed, or a deleted
	// tenant's id was created again).
	UnretireTenant(t tenancy.TenantID)
}

// Files keeps tenants' files outside the stores: the export root of the
// DynamoDB API's exports and imports (transfer.Service).
type Files interface {
	// RemoveTenant removes every file kept for the scope's tenant. It is
	// idempotent.
	RemoveTenant(ctx context.Context, s tenancy.Scope) error
}

// Placement is the part of a storage engine that says where a tenant's
// data of each table lives. The embedded engine implements it.
type Placement interface {
	Placement(ctx context.Context, s tenancy.Scope) ([]schema.TablePlacement, error)
}

// Options name the parts a tenant's lifecycle touches. Catalog and Audit
// are required; Quotas and Engine may be nil (a server without them keeps
// no tenant state there).
type Options struct {
	Catalog *catalog.Catalog
	Audit   *audit.Log
	Quotas  *quota.Manager
	Engine  Engine
	// Sweep, if not nil, is called once a deleted tenant's records are
	// gone, for what the engine keeps of it outside them that a server
	// which had not yet seen the deletion may have written meanwhile
	// (a gateway fleet's capacity buckets). It is idempotent; DropTenant
	// deletes the same before, so a deletion retried after a crash leaves
	// nothing either.
	Sweep func(ctx context.Context, s tenancy.Scope) error
	// SiloTier says that the engine keeps a silo-tier tenant's data in a
	// store of its own (the embedded engine does, reading the tier from
	// the catalog); without it creating a tenant of the silo tier is
	// refused rather than promised and not kept.
	SiloTier bool
	// Placement, if not nil, reports where tenants' data lives (Show).
	Placement Placement
	// Keys holds the tenants' data keys: Create generates the tenant's,
	// Delete destroys it before any data is deleted (crypto-shredding).
	// Nil only in tests without data.
	Keys *tenantkey.Keyring
	// Compact, if not nil, compacts a deleted tenant's key range [lo, hi)
	// away once Delete has deleted it (storage.DB.Compact).
	Compact func(lo, hi []byte) error
	// Workers, if not nil, are retired from a tenant before its range is
	// deleted, so that no late checkpoint of theirs lands in it.
	Workers Workers
	// Files, if not nil, removes a deleted tenant's files (its exports)
	// inside the deletion, after its stores: a deletion that fails or is
	// cut short leaves the tenant deleting, and retrying it removes them.
	Files Files
}

// Service is the tenant lifecycle.
type Service struct {
	o Options
}

// New returns the lifecycle over o's parts.
func New(o Options) *Service { return &Service{o: o} }

// Create creates tenant nt, acting on the platform scope of the operator
// (an operator Scope bound to no tenant). A tenant created with an
// explicit id may be a deleted tenant's: its refusal of writes in the
// engine is lifted and its quota state is remembered again. Errors: those
// of catalog.CreateTenant; AccessDenied for another scope.
func (s *Service) Create(ctx context.Context, platform tenancy.Scope, nt catalog.NewTenant) (catalog.Tenant, error) {
	if !platform.Valid() || !platform.IsOperator() || !platform.Tenant().IsZero() {
		return catalog.Tenant{}, apierr.New(apierr.AccessDenied, "only the operator may create tenants")
	}
	if nt.Tier == catalog.Silo && !s.o.SiloTier {
		return catalog.Tenant{}, apierr.Validationf("tier silo is not supported by this server's storage backend: it cannot keep a tenant's data in a store of its own; create the tenant with tier pool (the default)")
	}
	explicit := !nt.ID.IsZero()
	t, err := s.o.Catalog.CreateTenant(ctx, nt)
	if err != nil {
		return t, err
	}
	if s.o.Keys != nil {
		if err := s.o.Keys.Create(t.ID); err != nil {
			return t, apierr.Wrap(apierr.Internal, err, "creating the tenant's data key")
		}
	}
	if explicit {
		// NB: the new tenant did not exist when the guard admitted the
		// operator; this is the one scope of it the creation itself needs.
		ns := tenancy.SystemScope(t.ID, "tenant.create")
		if s.o.Engine != nil {
			s.o.Engine.ReviveTenant(ns)
		}
		if s.o.Quotas != nil {
			s.o.Quotas.Remember(t.ID)
		}
		if s.o.Workers != nil {
			s.o.Workers.UnretireTenant(t.ID)
		}
		// NB: the deleted tenant's log was retired in this process; the
		// new tenant's takes records.
		s.o.Audit.Unretire(t.ID)
	}
	return t, nil
}

// Placement reports where the scope's tenant's data of each table lives
// (nil when the engine does not say). The admin plane admits the scope
// (the operator on the tenant, or the tenant's admin).
func (s *Service) Placement(ctx context.Context, sc tenancy.Scope) ([]schema.TablePlacement, error) {
	if !sc.Valid() || sc.Tenant().IsZero() {
		return nil, apierr.New(apierr.AccessDenied, "no tenant to report on")
	}
	if s.o.Placement == nil {
		return nil, nil
	}
	return s.o.Placement.Placement(ctx, sc)
}

// Suspend suspends the scope's tenant: its credentials are refused from
// the next request. Errors: AccessDenied for a scope not the operator's
// on one tenant; those of catalog.SetStatus.
func (s *Service) Suspend(ctx context.Context, sc tenancy.Scope) (catalog.Tenant, error) {
	if err := operatorOnTenant(sc, "suspend"); err != nil {
		return catalog.Tenant{}, err
	}
	return s.o.Catalog.SetStatus(ctx, sc, catalog.Suspended)
}

// operatorOnTenant refuses (AccessDenied) a scope that is not the
// operator's on one tenant, as Create refuses one not on the platform:
// the admin plane's routes admit only the operator to these actions, and
// a tenant admin's own scope must not reach them by another path.
func operatorOnTenant(sc tenancy.Scope, verb string) error {
	if !sc.Valid() || !sc.IsOperator() || sc.Tenant().IsZero() {
		return apierr.New(apierr.AccessDenied, "only the operator may %s tenants", verb)
	}
	return nil
}

// Resume makes the scope's tenant active again. Errors: as Suspend's.
func (s *Service) Resume(ctx context.Context, sc tenancy.Scope) (catalog.Tenant, error) {
	if err := operatorOnTenant(sc, "resume"); err != nil {
		return catalog.Tenant{}, err
	}
	return s.o.Catalog.SetStatus(ctx, sc, catalog.Active)
}

// Delete deletes the scope's tenant and everything it owns: its audit log
// is retired, its quota buckets forgotten and its webhook, aggregate and
// export workers retired first (so no late record, checkpoint or file
// lands in its range or tree), then the catalog marks it deleting,
// drops the engine's data, removes its files and deletes its key range.
// If that fails, the log and buckets are restored and the deletion can be
// retried. Errors:
// AccessDenied for a scope not the operator's; those of
// catalog.DeleteTenant.
func (s *Service) Delete(ctx context.Context, sc tenancy.Scope) error {
	if !sc.Valid() || sc.Tenant().IsZero() {
		return apierr.New(apierr.Internal, "lifecycle: no tenant to delete")
	}
	if err := operatorOnTenant(sc, "delete"); err != nil {
		return err
	}
	id := sc.Tenant()
	// NB: the log is retired before the tenant's range is deleted, so that
	// no late record (a denial racing the deletion) lands in it after.
	s.o.Audit.Retire(id)
	// NB: so are the checkpoints of its token buckets.
	if s.o.Quotas != nil {
		s.o.Quotas.Forget(id)
	}
	// NB: and so are the webhook and aggregate workers' cursors.
	if s.o.Workers != nil {
		s.o.Workers.RetireTenant(id)
	}
	// NB: the data key is destroyed first, durably, inside the deletion
	// (the tenant is already Deleting, its credentials refused): from
	// then on none of its data opens, in the store or in any copy of it,
	// and a write racing the deletion fails to seal rather than commit.
	// Only then are its stores and range deleted.
	drop := func(ctx context.Context, sc tenancy.Scope) error {
		if s.o.Keys != nil {
			if err := s.o.Keys.Destroy(sc.Tenant()); err != nil {
				return apierr.Wrap(apierr.Internal, err, "destroying the tenant's data key")
			}
		}
		if s.o.Engine != nil {
			if err := s.o.Engine.DropTenant(ctx, sc); err != nil {
				return err
			}
		}
		if s.o.Files != nil {
			return s.o.Files.RemoveTenant(ctx, sc)
		}
		return nil
	}
	if err := s.o.Catalog.DeleteTenant(ctx, sc, drop); err != nil {
		s.o.Audit.Unretire(id)
		if s.o.Quotas != nil {
			s.o.Quotas.Remember(id)
		}
		if s.o.Workers != nil {
			s.o.Workers.UnretireTenant(id)
		}
		return err
	}
	s.o.Audit.Forget(id)
	if s.o.Sweep != nil {
		if err := s.o.Sweep(ctx, sc); err != nil {
			return apierr.Wrap(apierr.Internal, err, "sweeping the deleted tenant's capacity records (the tenant is deleted; its key was destroyed)")
		}
	}
	if s.o.Compact != nil {
		lo, hi := keyspace.TenantRange(id)
		if err := s.o.Compact(lo, hi); err != nil {
			return apierr.Wrap(apierr.Internal, err, "compacting the deleted tenant's range (the tenant is deleted; its key was destroyed)")
		}
	}
	return nil
}
