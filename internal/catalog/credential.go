package catalog

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Credential is a stored API key. Its secret is present only sealed.
type Credential struct {
	Tenant tenancy.TenantID // keyspace.Platform for operator credentials
	// ID is the key's short id, unique within the tenant; the access key
	// id is sk_<Env>_<Tenant>_<ID> (see package auth).
	ID          string
	AccessKeyID string
	Role        tenancy.Role
	Env         string
	Sealed      []byte // the secret, sealed by package auth
	Created     time.Time
	CreatedBy   string    // access key id of the creator
	Expires     time.Time // zero: never
	Revoked     time.Time // zero: not revoked
	// LastUsed is filled only by Credentials (it lives in its own key so
	// that recording it never races with revocation).
	LastUsed time.Time
}

// Usable reports whether the credential is neither revoked nor expired at now.
func (c *Credential) Usable(now time.Time) bool {
	return c.Revoked.IsZero() && (c.Expires.IsZero() || now.Before(c.Expires))
}

type credRecord struct {
	ID          string    `json:"id"`
	AccessKeyID string    `json:"access_key_id"`
	Role        string    `json:"role"`
	Env         string    `json:"env"`
	Sealed      []byte    `json:"sealed_secret"`
	Created     time.Time `json:"created"`
	CreatedBy   string    `json:"created_by,omitempty"`
	Expires     time.Time `json:"expires,omitzero"`
	Revoked     time.Time `json:"revoked,omitzero"`
}

func encodeCredential(c *Credential) []byte {
	b, _ := json.Marshal(credRecord{
		ID: c.ID, AccessKeyID: c.AccessKeyID, Role: c.Role.String(), Env: c.Env, Sealed: c.Sealed,
		Created: c.Created, CreatedBy: c.CreatedBy, Expires: c.Expires, Revoked: c.Revoked,
	})
	return b
}

func decodeCredential(t tenancy.TenantID, v []byte) (Credential, error) {
	var r credRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return Credential{}, fmt.Errorf("catalog: corrupt credential record: %w", err)
	}
	role, ok := tenancy.ParseRole(r.Role)
	if !ok {
		return Credential{}, fmt.Errorf("catalog: corrupt credential record: role %q", r.Role)
	}
	return Credential{
		Tenant: t, ID: r.ID, AccessKeyID: r.AccessKeyID, Role: role, Env: r.Env, Sealed: r.Sealed,
		Created: r.Created, CreatedBy: r.CreatedBy, Expires: r.Expires, Revoked: r.Revoked,
	}, nil
}

// ErrSealRetired is PutCredential's error when the server key that
// sealed the credential's secret was retired by a fleet's rotation.
var ErrSealRetired = errors.New("catalog: the credential is sealed under a server key a rotation retired")

// PutCredential stores a new credential. Errors: Conflict if the tenant
// already has a credential with that id; NotFound if the tenant does not
// exist (operator credentials belong to keyspace.Platform and need no
// tenant); Validation if the tenant is not active; ErrSealRetired if
// fence (the mark keyspace.RetiredServerKey of the key that sealed
// cr.Sealed; nil: none) is present: a fleet's rotation retired that key,
// and the caller seals the secret again under its current key.
func (c *Catalog) PutCredential(ctx context.Context, cr Credential, fence []byte) error {
	if cr.ID == "" || cr.AccessKeyID == "" || len(cr.Sealed) == 0 {
		return errors.New("catalog: credential lacks id, access key id or sealed secret")
	}
	key := keyspace.Credential(cr.Tenant, cr.ID)
	for range maxRetries {
		var tenant []byte // the tenant record the write is conditioned on
		if cr.Tenant != keyspace.Platform {
			t, v, err := c.readTenant(ctx, cr.Tenant)
			if errors.Is(err, ErrNotFound) {
				return notFound("tenant")
			}
			if err != nil {
				return err
			}
			if t.Status == Deleting {
				return apierr.Validationf("tenant is being deleted")
			}
			tenant = v
		}
		err := c.apply(ctx, func(b *kv.Batch) {
			b.SetIfAbsent(key, encodeCredential(&cr))
			if tenant != nil {
				b.Expect(keyspace.TenantRecord(cr.Tenant), tenant)
			}
			if fence != nil {
				// NB: nothing sealed under a retired key reaches the
				// engine after the rotation's re-sealing began.
				b.Expect(fence, nil)
			}
		})
		if !errors.Is(err, kv.ErrConflict) {
			return err
		}
		if _, err := c.get(ctx, key); err == nil {
			return apierr.New(apierr.Conflict, "credential %s already exists", cr.ID)
		}
		if fence != nil {
			if _, err := c.get(ctx, fence); err == nil {
				return ErrSealRetired
			}
		}
		// The tenant record changed meanwhile: check it again.
	}
	return contended()
}

// PutBootstrapCredential stores an operator credential made because no
// usable one exists (the first start): cr and the bootstrap mark, in one
// write conditioned on the mark being what it was before the caller
// looked. It returns false, storing nothing, if another process (a
// gateway over the same engine) stored its operator meanwhile.
func (c *Catalog) PutBootstrapCredential(ctx context.Context, cr Credential, mark []byte) (bool, error) {
	if cr.Tenant != keyspace.Platform || cr.Role != tenancy.RoleOperator {
		return false, errors.New("catalog: the bootstrap credential must be an operator credential")
	}
	err := c.apply(ctx, func(b *kv.Batch) {
		b.SetIfAbsent(keyspace.Credential(cr.Tenant, cr.ID), encodeCredential(&cr))
		b.SetIfEquals(keyspace.System(keyspace.SysOperatorBootstrap), mark, []byte(cr.AccessKeyID))
	})
	if errors.Is(err, kv.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

// BootstrapMark returns the bootstrap mark PutBootstrapCredential
// conditions on (nil if none was ever written).
func (c *Catalog) BootstrapMark(ctx context.Context) ([]byte, error) {
	v, err := c.get(ctx, keyspace.System(keyspace.SysOperatorBootstrap))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// Credential returns tenant t's credential id with exactly one storage
// read. Errors: NotFound (wrapping ErrNotFound).
func (c *Catalog) Credential(ctx context.Context, t tenancy.TenantID, id string) (Credential, error) {
	v, err := c.get(ctx, keyspace.Credential(t, id))
	if errors.Is(err, ErrNotFound) {
		return Credential{}, notFound("credential")
	}
	if err != nil {
		return Credential{}, err
	}
	return decodeCredential(t, v)
}

// Credentials returns all of the scope's tenant's credentials, revoked
// ones included, oldest first, with LastUsed filled in.
func (c *Catalog) Credentials(ctx context.Context, s tenancy.Scope) ([]Credential, error) {
	t, err := scoped(s)
	if err != nil {
		return nil, err
	}
	var out []Credential
	lo, hi := keyspace.Credentials(t)
	var derr error
	if err := c.scan(ctx, lo, hi, func(_, v []byte) bool {
		cr, err := decodeCredential(t, v)
		if err != nil {
			derr = err
			return false
		}
		out = append(out, cr)
		return true
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	used := map[string]time.Time{}
	lo, hi = keyspace.CredentialsLastUsed(t)
	prefix := len(lo)
	if err := c.scan(ctx, lo, hi, func(k, v []byte) bool {
		if len(v) == 8 {
			used[string(k[prefix:])] = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
		}
		return true
	}); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].LastUsed = used[out[i].ID]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// RevokeCredential marks the scope's tenant's credential id revoked at
// the current time (a no-op if already revoked) and returns it. Errors:
// NotFound.
//
// With Options.Settle it returns once every gateway refuses the key.
func (c *Catalog) RevokeCredential(ctx context.Context, s tenancy.Scope, id string) (Credential, error) {
	cr, err := c.updateCredential(ctx, s, id, func(cr *Credential) bool {
		if !cr.Revoked.IsZero() {
			return false
		}
		cr.Revoked = c.now().UTC()
		return true
	})
	if err == nil {
		err = c.settleNarrowed(ctx, time.Now())
	}
	return cr, err
}

// ExpireCredential sets the scope's tenant's credential id to expire at
// at (if that is earlier than its current expiry) and returns it. Errors:
// NotFound.
func (c *Catalog) ExpireCredential(ctx context.Context, s tenancy.Scope, id string, at time.Time) (Credential, error) {
	cr, err := c.updateCredential(ctx, s, id, func(cr *Credential) bool {
		if !cr.Expires.IsZero() && !at.Before(cr.Expires) {
			return false
		}
		cr.Expires = at.UTC()
		return true
	})
	if err == nil && c.now().Add(c.settleD).After(at) {
		err = c.settleNarrowed(ctx, time.Now()) // NB: narrowing within the bound
	}
	return cr, err
}

func (c *Catalog) updateCredential(ctx context.Context, s tenancy.Scope, id string, f func(*Credential) bool) (Credential, error) {
	t, err := scoped(s)
	if err != nil {
		return Credential{}, err
	}
	key := keyspace.Credential(t, id)
	for range maxRetries {
		old, err := c.get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return Credential{}, notFound("credential")
		}
		if err != nil {
			return Credential{}, err
		}
		cr, err := decodeCredential(t, old)
		if err != nil {
			return Credential{}, err
		}
		if f(&cr) {
			err := c.apply(ctx, func(b *kv.Batch) { b.SetIfEquals(key, old, encodeCredential(&cr)) })
			if errors.Is(err, kv.ErrConflict) {
				continue
			}
			if err != nil {
				return Credential{}, err
			}
		}
		c.notify(Change{Tenant: t, KeyID: id})
		return cr, nil
	}
	return Credential{}, contended()
}

// TouchCredential records that tenant t's credential id was used at at.
// It writes its own key (never the credential), on the condition that the
// credential still exists; callers rate-limit it.
func (c *Catalog) TouchCredential(t tenancy.TenantID, id string, at time.Time) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(at.UnixNano()))
	err := c.apply(context.Background(), func(b *kv.Batch) {
		b.Set(keyspace.CredentialLastUsed(t, id), v[:])
		// NB: not for a credential another gateway deleted with its
		// tenant meanwhile: nothing of a tenant outlives its deletion.
		b.ExpectPresent(keyspace.Credential(t, id))
	})
	if errors.Is(err, kv.ErrConflict) {
		return nil
	}
	return err
}

// HasCredentials reports whether tenant t (keyspace.Platform for the
// operator) has any usable credential of role r.
func (c *Catalog) HasCredentials(ctx context.Context, t tenancy.TenantID, r tenancy.Role) (bool, error) {
	found := false
	now := c.now()
	lo, hi := keyspace.Credentials(t)
	err := c.scan(ctx, lo, hi, func(_, v []byte) bool {
		cr, err := decodeCredential(t, v)
		if err == nil && cr.Role == r && cr.Usable(now) {
			found = true
			return false
		}
		return true
	})
	return found, err
}
