package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Every-tenant aggregates: the operator defines one aggregate on a shared
// table for every tenant at once. The definition is kept server-wide
// (keyspace.AggregateFleet); each tenant environment that holds data of
// the table gets its own copy (Definition.Fleet) in its own namespace,
// maintained by its own worker from its own log exactly as one the
// tenant defined — so each tenant's covers only its items, and the
// tenant reads it with its admin key. A reconciler gives the copy to
// tenant environments that start writing to the table later.

// Shared lists the tenant environments of a shared table (the engine's).
type Shared interface {
	SharedTableNamespaces(ctx context.Context, s tenancy.Scope, table string) ([][]byte, error)
}

// CreateFleet defines d for every tenant of the shared table d.Table and
// gives it at once to every tenant environment holding data of it.
// Operator only. Errors: AccessDenied, ResourceNotFound (no shared table
// of that name), Conflict, Validation.
func (s *Service) CreateFleet(ctx context.Context, sc tenancy.Scope, d Definition) (Definition, error) {
	if !sc.IsOperator() || !sc.Tenant().IsZero() {
		return Definition{}, apierr.New(apierr.AccessDenied, "only the operator defines an aggregate for every tenant")
	}
	if s.gw != nil {
		return Definition{}, apierr.Validationf("aggregates for every tenant are not available on a gateway over a remote engine: define one per tenant (README)")
	}
	if s.o.Shared == nil {
		return Definition{}, apierr.Validationf("this server does not define aggregates for every tenant")
	}
	if err := d.Validate(); err != nil {
		return Definition{}, err
	}
	if len(d.Item) > 0 && s.o.Tables == nil {
		return Definition{}, apierr.Validationf("this server does not materialise aggregates as items")
	}
	if _, err := s.o.Shared.SharedTableNamespaces(ctx, systemScope(), d.Table); err != nil {
		return Definition{}, err
	}
	d.Fleet = true
	d.Created = s.o.Now().UTC().Truncate(time.Millisecond)
	s.mu.Lock()
	if _, err := s.o.DB.Get(keyspace.AggregateFleet(d.Name)); err == nil {
		s.mu.Unlock()
		return Definition{}, apierr.New(apierr.Conflict, "an aggregate %s for every tenant already exists", d.Name)
	} else if !errors.Is(err, storage.ErrNotFound) {
		s.mu.Unlock()
		return Definition{}, err
	}
	b := s.o.DB.NewBatch()
	b.Set(keyspace.AggregateFleet(d.Name), d.marshal())
	err := s.o.DB.Apply(b)
	b.Close()
	s.mu.Unlock()
	if err != nil {
		return Definition{}, err
	}
	if err := s.reconcile(ctx); err != nil {
		s.log.Warn("extending an every-tenant aggregate", "aggregate", d.Name, "err", err)
	}
	return d, nil
}

// Fleet returns the aggregates defined for every tenant. Operator only.
func (s *Service) Fleet(ctx context.Context, sc tenancy.Scope) ([]Definition, error) {
	if !sc.IsOperator() || !sc.Tenant().IsZero() {
		return nil, apierr.New(apierr.AccessDenied, "only the operator lists aggregates defined for every tenant")
	}
	if s.gw != nil {
		return []Definition{}, nil // a gateway defines none (CreateFleet)
	}
	return s.fleet()
}

func (s *Service) fleet() ([]Definition, error) {
	lo, hi := keyspace.AggregateFleetRange()
	it := s.o.DB.NewIter(lo, hi)
	defer it.Close()
	out := []Definition{}
	for ok := it.First(); ok; ok = it.Next() {
		var d Definition
		if err := json.Unmarshal(it.Value(), &d); err != nil {
			return nil, fmt.Errorf("aggregate: decode every-tenant definition: %w", err)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, it.Error()
}

// DeleteFleet removes an every-tenant aggregate and every tenant's copy
// of it. Operator only. Errors: AccessDenied, NotFound.
func (s *Service) DeleteFleet(ctx context.Context, sc tenancy.Scope, name string) error {
	if !sc.IsOperator() || !sc.Tenant().IsZero() {
		return apierr.New(apierr.AccessDenied, "only the operator deletes aggregates defined for every tenant")
	}
	if s.gw != nil {
		return notFound(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := keyspace.AggregateFleet(name)
	if _, err := s.o.DB.Get(key); errors.Is(err, storage.ErrNotFound) {
		return notFound(name)
	} else if err != nil {
		return err
	}
	// NB: the server-wide definition goes first, so the reconciler gives
	// no tenant a new copy while the copies are removed.
	b := s.o.DB.NewBatch()
	b.Delete(key)
	err := s.o.DB.Apply(b)
	b.Close()
	if err != nil {
		return err
	}
	nss, names, err := s.st.registry()
	if err != nil {
		return err
	}
	for i := range nss {
		if names[i] != name {
			continue
		}
		d, err := s.st.definition(nss[i], name)
		if errors.Is(err, errNoAggregate) {
			continue
		}
		if err != nil {
			return err
		}
		if !d.Fleet {
			continue // the tenant's own aggregate of that name
		}
		t, env := splitNamespace(nss[i])
		if err := s.deleteLocked(ctx, s.o.Scope(t, env), nss[i], d); err != nil {
			return err
		}
	}
	return nil
}

// fleetLoop extends every-tenant aggregates to new tenant environments
// until the service closes.
func (s *Service) fleetLoop() {
	defer close(s.fleetDone)
	t := time.NewTicker(s.o.FleetInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if err := s.reconcile(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("extending every-tenant aggregates", "err", err)
		}
	}
}

// reconcile gives every tenant environment holding data of an
// every-tenant aggregate's table its copy of the aggregate. A tenant's
// own aggregate of the same name is left alone (the tenant then has no
// copy).
func (s *Service) reconcile(ctx context.Context) error {
	if s.o.Shared == nil {
		return nil
	}
	defs, err := s.fleet()
	if err != nil {
		return err
	}
	for i := range defs {
		d := defs[i]
		nss, err := s.o.Shared.SharedTableNamespaces(ctx, systemScope(), d.Table)
		if apierr.Is(err, apierr.ResourceNotFound) {
			continue // the table was dropped
		}
		if err != nil {
			return err
		}
		for _, ns := range nss {
			if _, err := s.st.definition(ns, d.Name); err == nil {
				continue
			} else if !errors.Is(err, errNoAggregate) {
				return err
			}
			t, env := splitNamespace(ns)
			c := d
			if err := s.create(ctx, s.o.Scope(t, env), ns, &c); err != nil && !apierr.Is(err, apierr.Conflict) {
				s.log.Warn("giving a tenant its copy of an every-tenant aggregate", "aggregate", d.Name, "err", err)
			}
		}
	}
	return nil
}
