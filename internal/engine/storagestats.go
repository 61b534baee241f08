package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TenantStorage reports, per environment and table, the items and bytes
// tenant t holds (the statistics DescribeTable reports, summed over the
// table's indexes for IndexBytes), in (env, table) order. Metering reads
// it for usage reports (it satisfies quota.StorageSource).
//
// It reads the per-table counters every write keeps up to date
// (keyspace.Counter), skipping from one of the tenant's namespaces to the
// next: the cost is one seek per environment plus the counters
// themselves, never the items. Silo data keeps its counters in the
// tenant's silo store, which is read the same way (opened if it exists,
// never created); table names always come from the main store's catalog.
// A table whose data of the tenant is being moved (or was, and the
// source's copy is not deleted yet) counts once, in the store that holds
// it for requests.
func (e *Engine) TenantStorage(ctx context.Context, t tenancy.TenantID) ([]schema.TableStorage, error) {
	return tenantStorage(ctx, e.db, t, e.siloStoreOf, func(id uint64) (silo, ok bool) {
		if silo, ok := e.placedIn(t, id); ok {
			return silo, true
		}
		if st, ok := e.moveStatus(t, id); ok {
			return st.To != storeSilo, true // NB: not switched yet: the source holds it
		}
		return false, false
	})
}

type envTable struct {
	env string
	id  uint64
}

// tenantStorage is TenantStorage over the main store db and the silo
// store silo returns (nil if none). placed says which store holds the
// tenant's data of a table that moved or is moving (ok false: whichever
// has it); the other's counters of it are not counted.
func tenantStorage(ctx context.Context, db *storage.DB, t tenancy.TenantID,
	silo func(ctx context.Context, t tenancy.TenantID) (*storage.DB, releaser, error),
	placed func(id uint64) (silo, ok bool)) ([]schema.TableStorage, error) {
	defs := defStore{db}
	shared, err := defs.tableNames(nil)
	if err != nil {
		return nil, err
	}
	own := map[string]map[uint64]string{} // env -> the tenant's own tables there
	nameOf := func(env string, id uint64) (string, bool, error) {
		m, ok := own[env]
		if !ok {
			var err error
			if m, err = defs.tableNames(keyspace.Namespace(t, env)); err != nil {
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
	acc := map[envTable]*schema.TableStorage{}
	if _, err := scanCounters(ctx, db, t, nameOf, acc); err != nil {
		return nil, err
	}
	for k := range acc {
		if in, ok := placed(k.id); ok && in {
			delete(acc, k) // the silo store holds it
		}
	}
	if silo != nil {
		sdb, release, err := silo(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("engine: silo store: %w", err)
		}
		defer release()
		if sdb != nil {
			// NB: a silo store is closed when its tenant is dropped (or
			// the engine closes), possibly while it is read here: it
			// then counts for nothing, and the rest of the report stands.
			part := map[envTable]*schema.TableStorage{}
			_, err := scanCounters(ctx, sdb, t, nameOf, part)
			if errors.Is(err, storage.ErrClosed) {
				part = nil
			} else if err != nil {
				return nil, err
			}
			for k, ts := range part {
				if in, ok := placed(k.id); ok && !in {
					continue // the main store holds it
				}
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
	out := make([]schema.TableStorage, 0, len(acc))
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

// scanCounters adds the counters of tenant t's tables in db to acc and
// returns the environments it found in db.
func scanCounters(ctx context.Context, db *storage.DB, t tenancy.TenantID,
	nameOf func(env string, id uint64) (string, bool, error), acc map[envTable]*schema.TableStorage) ([]string, error) {
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
			if !valid || (name != counterItems && name != counterBytes) {
				continue
			}
			v, err := storage.DecodeCounter(it.Value())
			if err != nil {
				return nil, fmt.Errorf("engine: statistics counter: %w", err)
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
				ts = &schema.TableStorage{Table: n, Env: env}
				acc[k] = ts
			}
			v = max(v, 0)
			switch {
			case index == 0 && name == counterItems:
				ts.Items = v
			case index == 0:
				ts.Bytes = v
			case name == counterBytes:
				ts.IndexBytes += v
			}
		}
		ok = it.SeekGE(keyspace.PrefixEnd(ns))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("engine: reading storage counters: %w", err)
	}
	return envs, nil
}
