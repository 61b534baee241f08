package catalog

import (
	"context"
	"errors"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// ResealCredentials calls reseal for every stored credential of every
// tenant and of the operator (a server key rotation) and stores the
// sealed secret it returns when changed is set. It returns how many it
// changed. Each credential is rewritten conditioned on the record it
// read, so a concurrent revocation is kept.
func (c *Catalog) ResealCredentials(ctx context.Context, reseal func(Credential) (sealed []byte, changed bool, err error)) (int, error) {
	ts, err := c.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	ids := []tenancy.TenantID{keyspace.Platform}
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	n := 0
	for _, t := range ids {
		var keys [][]byte
		lo, hi := keyspace.Credentials(t)
		if err := c.scan(ctx, lo, hi, func(k, _ []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			return true
		}); err != nil {
			return n, err
		}
		for _, k := range keys {
			changed, err := c.resealOne(ctx, t, k, reseal)
			if err != nil {
				return n, err
			}
			if changed {
				n++
			}
		}
	}
	return n, nil
}

func (c *Catalog) resealOne(ctx context.Context, t tenancy.TenantID, k []byte, reseal func(Credential) ([]byte, bool, error)) (bool, error) {
	for range maxRetries {
		v, err := c.get(ctx, k)
		if err != nil {
			return false, nil // deleted meanwhile
		}
		cr, err := decodeCredential(t, v)
		if err != nil {
			return false, err
		}
		sealed, changed, err := reseal(cr)
		if err != nil || !changed {
			return false, err
		}
		cr.Sealed = sealed
		err = c.apply(ctx, func(b *kv.Batch) { b.SetIfEquals(k, v, encodeCredential(&cr)) })
		if errors.Is(err, kv.ErrConflict) {
			continue // revoked or expired meanwhile: reseal what is stored now
		}
		return err == nil, err
	}
	return false, contended()
}
