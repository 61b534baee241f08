package engine

import (
	"bytes"
	"context"
	"path/filepath"
	"sort"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Placement reports where the data of scope s's tenant lives, table by
// table: every shared table and the tenant's own tables (in every
// environment in which it holds data, and "live"), with the store
// holding its items (pool: the main store; silo: the tenant's store) and
// whether it has written to the table. It reads nothing of other tenants.
func (e *Engine) Placement(ctx context.Context, s tenancy.Scope) ([]schema.TablePlacement, error) {
	t := s.Tenant()
	if !s.Valid() || t.IsZero() {
		return nil, apierr.New(apierr.AccessDenied, "no tenant to report on")
	}
	prefix := keyspace.Tenant(t)
	pairs, err := e.registryPairs()
	if err != nil {
		return nil, err
	}
	has := map[uint64]bool{}
	envs := map[string]bool{"live": true}
	for _, p := range pairs {
		if !bytes.HasPrefix(p.ns, prefix) {
			continue
		}
		has[p.id] = true
		if env, ok := keyspace.NamespaceOf(t, p.ns); ok {
			envs[env] = true
		}
	}
	var out []schema.TablePlacement
	add := func(tb *schema.Table, env string) error {
		in, err := e.inSilo(ctx, t, tb)
		if err != nil {
			return err
		}
		p := schema.TablePlacement{Table: tb.Name, Env: env, Isolation: tb.Isolation.String(), Store: "pool", HasData: has[tb.ID]}
		if st, ok := e.moveStatus(t, tb.ID); ok {
			p.Moving = "to " + st.To + ": " + st.Phase
		}
		if in {
			p.Store = "silo"
			if !e.inMemorySilos() {
				p.Path = filepath.Join(filepath.Base(e.opts.SiloDir), t.String(), siloStoreName)
			}
		}
		out = append(out, p)
		return nil
	}
	for _, tb := range e.res.Shared() {
		if err := add(tb, ""); err != nil {
			return nil, err
		}
	}
	for env := range envs {
		owned, err := e.res.Owned(ctx, t, env)
		if err != nil {
			return nil, err
		}
		for _, tb := range owned {
			if err := add(tb, env); err != nil {
				return nil, err
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Env != out[j].Env {
			return out[i].Env < out[j].Env
		}
		return out[i].Table < out[j].Table
	})
	return out, nil
}
