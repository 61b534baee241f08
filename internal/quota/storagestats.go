package quota

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TableStorage is what one table holds for one tenant environment.
type TableStorage struct {
	Table string `json:"table"`
	Env   string `json:"env"`
	// Items and Bytes are the table's items and their size as DynamoDB
	// counts it (DescribeTable's ItemCount and TableSizeBytes).
	Items int64 `json:"items"`
	Bytes int64 `json:"bytes"`
	// IndexBytes is the size of the table's index entries.
	IndexBytes int64 `json:"index_bytes"`
}

// StorageSource reports a tenant's storage per table. The default,
// CounterStorage, reads the engine's statistics counters.
type StorageSource interface {
	TenantStorage(ctx context.Context, t tenancy.TenantID) ([]TableStorage, error)
}

// Names of the engine's statistics counters under keyspace.Counter (see
// internal/engine/catalog.go; cmd/tenantdb TestUsageEqualsConsumedCapacity keeps them
// in step).
const (
	engineCounterItems = "n"
	engineCounterBytes = "b"
)

// CounterStorage reads the per-table item and byte counters that the
// engine keeps up to date with every write (keyspace.Counter), skipping
// from one of the tenant's namespaces to the next: the cost is one seek
// per environment plus the counters themselves, never the items.
//
// Silo tables keep their counters in the tenant's own store of the table;
// with Silos set, those stores are read the same way (table names always
// come from the main store's catalog).
type CounterStorage struct {
	DB *storage.DB
	// Silos returns tenant t's silo stores (of shared silo tables, and of
	// the silo tables it owns in environments envs); nil: none are read.
	Silos func(ctx context.Context, t tenancy.TenantID, envs []string) ([]*storage.DB, error)
}

var _ StorageSource = CounterStorage{}

type envTable struct {
	env string
	id  uint64
}

// TenantStorage implements StorageSource.
func (c CounterStorage) TenantStorage(ctx context.Context, t tenancy.TenantID) ([]TableStorage, error) {
	shared, err := c.sharedNames()
	if err != nil {
		return nil, err
	}
	own := map[string]map[uint64]string{} // env -> the tenant's own tables there
	nameOf := func(env string, id uint64) (string, bool, error) {
		m, ok := own[env]
		if !ok {
			var err error
			if m, err = c.tableNames(keyspace.TenantTables(keyspace.Namespace(t, env))); err != nil {
				return "", false, err
			}
			own[env] = m
		}
		if n, found := m[id]; found {
			return n, true, nil
		}
		n, found := shared[id]
		return n, found, nil
	}
	acc := map[envTable]*TableStorage{}
	envs, err := c.scan(ctx, c.DB, t, nameOf, acc)
	if err != nil {
		return nil, err
	}
	if c.Silos != nil {
		dbs, err := c.Silos(ctx, t, envs)
		if err != nil {
			return nil, fmt.Errorf("quota: silo stores: %w", err)
		}
		for _, db := range dbs {
			// NB: a silo store is closed when its table or tenant is
			// dropped (or the engine closes), possibly while it is read
			// here: it then counts for nothing, and the rest of the
			// report stands.
			part := map[envTable]*TableStorage{}
			_, err := c.scan(ctx, db, t, nameOf, part)
			if errors.Is(err, storage.ErrClosed) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for k, ts := range part {
				if cur := acc[k]; cur != nil {
					cur.Items += ts.Items
					cur.Bytes += ts.Bytes
					cur.IndexBytes += ts.IndexBytes
				} else {
					acc[k] = ts
				}
			}
		}
	}
	out := make([]TableStorage, 0, len(acc))
	for _, ts := range acc {
		out = append(out, *ts)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Env != out[j].Env {
			return out[i].Env < out[j].Env
		}
		return out[i].Table < out[j].Table
	})
	return out, nil
}

// scan adds the counters of tenant t's tables in db to acc and returns the
// environments it found in db.
func (c CounterStorage) scan(ctx context.Context, db *storage.DB, t tenancy.TenantID,
	nameOf func(env string, id uint64) (string, bool, error), acc map[envTable]*TableStorage) ([]string, error) {
	lo, hi := keyspace.Namespaces(t)
	it := db.NewIter(lo, hi)
	defer it.Close()
	var envs []string
	for ok := it.First(); ok; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		env, valid := keyspace.NamespaceOf(t, it.Key())
		if !valid {
			break
		}
		envs = append(envs, env)
		ns := keyspace.Namespace(t, env)
		clo, chi := keyspace.Counters(ns)
		for ok = it.SeekGE(clo); ok && bytes.Compare(it.Key(), chi) < 0; ok = it.Next() {
			id, index, name, valid := keyspace.ParseCounter(ns, it.Key())
			if !valid || (name != engineCounterItems && name != engineCounterBytes) {
				continue
			}
			v, err := storage.DecodeCounter(it.Value())
			if err != nil {
				return nil, fmt.Errorf("quota: statistics counter: %w", err)
			}
			k := envTable{env, id}
			ts := acc[k]
			if ts == nil {
				n, found, err := nameOf(env, id)
				if err != nil {
					return nil, err
				}
				if !found {
					continue // a dropped table whose data is being removed
				}
				ts = &TableStorage{Table: n, Env: env}
				acc[k] = ts
			}
			v = max(v, 0)
			switch {
			case index == 0 && name == engineCounterItems:
				ts.Items = v
			case index == 0:
				ts.Bytes = v
			case name == engineCounterBytes:
				ts.IndexBytes += v
			}
		}
		ok = it.SeekGE(keyspace.PrefixEnd(ns))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("quota: reading storage counters: %w", err)
	}
	return envs, nil
}

func (c CounterStorage) sharedNames() (map[uint64]string, error) {
	return c.tableNames(keyspace.SharedTables())
}

// tableNames reads the id and name of the table definitions in [lo, hi).
// Only these two members of the engine's definition record are read.
func (c CounterStorage) tableNames(lo, hi []byte) (map[uint64]string, error) {
	it := c.DB.NewIter(lo, hi)
	defer it.Close()
	m := map[uint64]string{}
	for ok := it.First(); ok; ok = it.Next() {
		var def struct {
			ID   uint64 `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(it.Value(), &def); err != nil {
			return nil, fmt.Errorf("quota: decoding a table definition: %w", err)
		}
		m[def.ID] = def.Name
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("quota: reading table definitions: %w", err)
	}
	return m, nil
}
