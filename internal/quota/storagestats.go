package quota

import (
	"bytes"
	"context"
	"encoding/json"
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
// NB: silo tables keep their counters in their own stores, which this
// source does not open; they are not reported.
type CounterStorage struct{ DB *storage.DB }

var _ StorageSource = CounterStorage{}

// TenantStorage implements StorageSource.
func (c CounterStorage) TenantStorage(ctx context.Context, t tenancy.TenantID) ([]TableStorage, error) {
	names, err := c.sharedNames()
	if err != nil {
		return nil, err
	}
	lo, hi := keyspace.Namespaces(t)
	it := c.DB.NewIter(lo, hi)
	defer it.Close()
	var out []TableStorage
	for ok := it.First(); ok; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		env, valid := keyspace.NamespaceOf(t, it.Key())
		if !valid {
			break
		}
		ns := keyspace.Namespace(t, env)
		own, err := c.tableNames(keyspace.TenantTables(ns))
		if err != nil {
			return nil, err
		}
		byID := map[uint64]*TableStorage{}
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
			ts := byID[id]
			if ts == nil {
				n, found := own[id]
				if !found {
					n, found = names[id]
				}
				if !found {
					continue // a dropped table whose data is being removed
				}
				ts = &TableStorage{Table: n, Env: env}
				byID[id] = ts
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
		for _, ts := range byID {
			out = append(out, *ts)
		}
		ok = it.SeekGE(keyspace.PrefixEnd(ns))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("quota: reading storage counters: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Env != out[j].Env {
			return out[i].Env < out[j].Env
		}
		return out[i].Table < out[j].Table
	})
	return out, nil
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
