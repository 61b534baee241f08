package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The persisted table definitions (schema.Encode) live in the main store
// under keyspace.SharedTable and keyspace.TenantTable.
//
// NB: this file is the only one of the engine that reads or writes a
// definition by its key: every by-name resolution goes through the
// resolver (internal/lint enforces it), which loads definitions through
// defStore.

// defStore is the resolver's Catalog over the main store.
type defStore struct{ db *storage.DB }

var _ resolve.Catalog = defStore{}

// LoadShared implements resolve.Catalog.
func (d defStore) LoadShared(context.Context) ([]*schema.Table, error) {
	lo, hi := keyspace.SharedTables()
	return d.load(lo, hi)
}

// LoadOwned implements resolve.Catalog.
func (d defStore) LoadOwned(_ context.Context, ns []byte) ([]*schema.Table, error) {
	lo, hi := keyspace.TenantTables(ns)
	return d.load(lo, hi)
}

func (d defStore) load(lo, hi []byte) ([]*schema.Table, error) {
	var out []*schema.Table
	it := d.db.NewIter(lo, hi)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		t, err := schema.Decode(it.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := it.Error(); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "loading tables")
	}
	return out, nil
}

// tableDefKey returns the key of t's persisted definition.
func tableDefKey(t *schema.Table) []byte {
	if t.Shared() {
		return keyspace.SharedTable(t.Name)
	}
	return keyspace.TenantTable(keyspace.Namespace(t.Owner, t.OwnerEnv), t.Name)
}

// saveTable adds t's definition to b.
func saveTable(b *storage.Batch, t *schema.Table) error {
	v, err := schema.Encode(t)
	if err != nil {
		return err
	}
	b.Set(tableDefKey(t), v)
	return nil
}

// persist durably stores t's definition and publishes it. REQUIRES: e.ddl.
func (e *Engine) persist(t *schema.Table) error {
	b := e.db.NewBatch()
	defer b.Close()
	if err := saveTable(b, t); err != nil {
		return err
	}
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "saving table definition")
	}
	e.res.Publish(t)
	return nil
}

// tableNames reads the ids and names of the definitions of the shared
// tables (ns nil) or of the tenant environment whose namespace is ns,
// straight from the store: usage reports name a tenant's tables without
// loading them into the resolver.
func (d defStore) tableNames(ns []byte) (map[uint64]string, error) {
	lo, hi := keyspace.SharedTables()
	if ns != nil {
		lo, hi = keyspace.TenantTables(ns)
	}
	it := d.db.NewIter(lo, hi)
	defer it.Close()
	m := map[uint64]string{}
	for ok := it.First(); ok; ok = it.Next() {
		t, err := schema.Decode(it.Value())
		if err != nil {
			return nil, err
		}
		m[t.ID] = t.Name
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("engine: reading table definitions: %w", err)
	}
	return m, nil
}

// saved reads the saved definition of the table named name owned by the
// namespace owner (nil: a shared table) straight from the store, nil if
// there is none: the repair of stream descriptors, on open, checks a
// descriptor against the definition that should name it.
func (d defStore) saved(owner []byte, name string) (*schema.Table, error) {
	k := keyspace.SharedTable(name)
	if owner != nil {
		k = keyspace.TenantTable(owner, name)
	}
	v, err := d.db.Get(k)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading table definition")
	}
	t, err := schema.Decode(v)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "decoding table definition")
	}
	return t, nil
}

// ownedTablesOf returns the definitions of every table tenant t owns, in
// every environment (one seek per environment, not a scan of its data).
func (e *Engine) ownedTablesOf(t tenancy.TenantID) ([]*schema.Table, error) {
	lo, hi := keyspace.Namespaces(t)
	it := e.db.NewIter(lo, hi)
	defer it.Close()
	var out []*schema.Table
	for ok := it.First(); ok; {
		env, valid := keyspace.NamespaceOf(t, it.Key())
		if !valid {
			break
		}
		ns := keyspace.Namespace(t, env)
		tlo, thi := keyspace.TenantTables(ns)
		for ok = it.SeekGE(tlo); ok && bytes.Compare(it.Key(), thi) < 0; ok = it.Next() {
			tb, err := schema.Decode(it.Value())
			if err != nil {
				return nil, err
			}
			out = append(out, tb)
		}
		ok = it.SeekGE(keyspace.PrefixEnd(ns))
	}
	if err := it.Error(); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "loading a tenant's tables")
	}
	return out, nil
}
