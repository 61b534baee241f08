package node

import (
	"context"
	"sort"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// remoteStorage reports a tenant's storage on a gateway: the engine's
// storage counters, which every gateway keeps (internal/remote,
// storage.go), named by environment here (the remote backend knows
// namespaces, not how they are built).
type remoteStorage struct{ b *remote.Backend }

func (s remoteStorage) TenantStorage(ctx context.Context, sc tenancy.Scope) ([]quota.TableStorage, error) {
	cs, err := s.b.TenantStorage(ctx, sc)
	if err != nil {
		return nil, err
	}
	out := make([]quota.TableStorage, 0, len(cs))
	for _, c := range cs {
		env, ok := keyspace.NamespaceOf(sc.Tenant(), c.Namespace)
		if !ok {
			continue // NB: never another tenant's: the counters are the scope's tenant's collection
		}
		out = append(out, quota.TableStorage{Table: c.Table, Env: env, Items: c.Items, Bytes: c.Bytes, IndexBytes: c.IndexBytes})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Env != out[j].Env {
			return out[i].Env < out[j].Env
		}
		return out[i].Table < out[j].Table
	})
	return out, nil
}

var _ quota.StorageSource = remoteStorage{}
