package catalog

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Membership says that platform user Sub (the OIDC subject) may act on
// Tenant. Memberships are created only by tenant creation (an owner),
// invitation acceptance and seeding by the operator.
//
// NB: the forward entry is keyed by Sub, not by tenant: it is read before
// a tenant is chosen. Only the platform endpoint reads it, and only with
// the Sub of a verified token.
type Membership struct {
	Sub     string
	Tenant  tenancy.TenantID
	Role    tenancy.Role
	Via     string // "tenant-create", "invite", "seed"
	Created time.Time
}

type memberRecord struct {
	Role    string    `json:"role"`
	Via     string    `json:"via"`
	Created time.Time `json:"created"`
}

// MaxSubLen bounds a platform user's subject.
const MaxSubLen = 255

func validSub(sub string) error {
	if sub == "" || len(sub) > MaxSubLen || !utf8.ValidString(sub) || strings.IndexByte(sub, 0) >= 0 {
		return apierr.Validationf("sub must be 1 to %d bytes of UTF-8 without NUL", MaxSubLen)
	}
	return nil
}

func putMembership(b *kv.Batch, m Membership) {
	v, _ := json.Marshal(memberRecord{Role: m.Role.String(), Via: m.Via, Created: m.Created})
	b.Set(keyspace.Membership(m.Sub, m.Tenant), v)
	b.Set(keyspace.TenantMember(m.Tenant, m.Sub), nil)
}

// AddMembership creates or replaces a membership of the scope's tenant
// (seeding); m.Tenant is ignored. Errors: Validation for a bad sub or
// role, NotFound for an unknown tenant.
func (c *Catalog) AddMembership(ctx context.Context, s tenancy.Scope, m Membership) (Membership, error) {
	var err error
	if m.Tenant, err = scoped(s); err != nil {
		return Membership{}, err
	}
	if err := validSub(m.Sub); err != nil {
		return Membership{}, err
	}
	if m.Role != tenancy.RoleRead && m.Role != tenancy.RoleApp && m.Role != tenancy.RoleAdmin {
		return Membership{}, apierr.Validationf("role must be read, app or admin")
	}
	if m.Created.IsZero() {
		m.Created = c.now().UTC()
	}
	for range maxRetries {
		t, tv, err := c.readTenant(ctx, m.Tenant)
		if errors.Is(err, ErrNotFound) {
			return Membership{}, notFound("tenant")
		}
		if err != nil {
			return Membership{}, err
		}
		if t.Status == Deleting {
			return Membership{}, apierr.Validationf("tenant is being deleted")
		}
		err = c.apply(ctx, func(b *kv.Batch) {
			b.Expect(keyspace.TenantRecord(m.Tenant), tv)
			putMembership(b, m)
		})
		if errors.Is(err, kv.ErrConflict) {
			continue
		}
		if err != nil {
			return Membership{}, err
		}
		return m, nil
	}
	return Membership{}, contended()
}

// Memberships returns platform user sub's memberships, and nothing else:
// it reads only the range keyed by sub.
func (c *Catalog) Memberships(ctx context.Context, sub string) ([]Membership, error) {
	if err := validSub(sub); err != nil {
		return nil, err
	}
	var out []Membership
	lo, hi := keyspace.Memberships(sub)
	prefix := len(lo)
	var derr error
	err := c.scan(ctx, lo, hi, func(k, v []byte) bool {
		var id tenancy.TenantID
		if len(k) != prefix+len(id) {
			derr = fmt.Errorf("catalog: corrupt membership key")
			return false
		}
		copy(id[:], k[prefix:])
		var r memberRecord
		if err := json.Unmarshal(v, &r); err != nil {
			derr = fmt.Errorf("catalog: corrupt membership record: %w", err)
			return false
		}
		role, _ := tenancy.ParseRole(r.Role)
		out = append(out, Membership{Sub: sub, Tenant: id, Role: role, Via: r.Via, Created: r.Created})
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// Invite is a pending invitation to become a member of a tenant.
type Invite struct {
	Tenant    tenancy.TenantID
	Role      tenancy.Role
	Email     string // informational
	Expires   time.Time
	CreatedBy string
	Created   time.Time
}

type inviteRecord struct {
	Role      string    `json:"role"`
	Email     string    `json:"email,omitempty"`
	Expires   time.Time `json:"expires"`
	CreatedBy string    `json:"created_by,omitempty"`
	Created   time.Time `json:"created"`
}

// invitePrefix starts every invitation token: inv_<tenant hex>_<secret hex>.
const invitePrefix = "inv_"

// CreateInvite stores an invitation and returns its token, which is shown
// once: only its SHA-256 is stored (it never needs to be recovered).
// The invitation is to the scope's tenant; inv.Tenant is ignored.
// Errors: NotFound, Validation.
func (c *Catalog) CreateInvite(ctx context.Context, s tenancy.Scope, inv Invite) (string, error) {
	var err error
	if inv.Tenant, err = scoped(s); err != nil {
		return "", err
	}
	if inv.Role != tenancy.RoleRead && inv.Role != tenancy.RoleApp && inv.Role != tenancy.RoleAdmin {
		return "", apierr.Validationf("role must be read, app or admin")
	}
	if inv.Created.IsZero() {
		inv.Created = c.now().UTC()
	}
	t, err := c.Tenant(ctx, inv.Tenant)
	if err != nil {
		return "", err
	}
	if t.Status != Active {
		return "", apierr.Validationf("tenant is %s", t.Status)
	}
	var secret [24]byte
	rand.Read(secret[:])
	token := invitePrefix + inv.Tenant.String() + "_" + hex.EncodeToString(secret[:])
	h := sha256.Sum256([]byte(token))
	v, _ := json.Marshal(inviteRecord{Role: inv.Role.String(), Email: inv.Email, Expires: inv.Expires.UTC(), CreatedBy: inv.CreatedBy, Created: inv.Created})
	if err := c.apply(ctx, func(b *kv.Batch) { b.Set(keyspace.Invite(inv.Tenant, h[:]), v) }); err != nil {
		return "", err
	}
	return token, nil
}

// InviteTenant returns the tenant an invitation token names, without
// checking it. Errors: NotFound for a malformed token.
func InviteTenant(token string) (tenancy.TenantID, error) {
	rest, ok := strings.CutPrefix(token, invitePrefix)
	if !ok || len(rest) < 33 || rest[32] != '_' {
		return tenancy.TenantID{}, notFound("invitation")
	}
	id, err := tenancy.ParseTenantID(rest[:32])
	if err != nil || strings.ContainsRune(rest[:32], '-') {
		return tenancy.TenantID{}, notFound("invitation")
	}
	return id, nil
}

// AcceptInvite consumes invitation token for platform user sub and
// creates the membership, atomically; a token works once. Errors:
// NotFound for an unknown, used or expired token (the same error, so a
// token's state is not revealed), Validation for a bad sub.
func (c *Catalog) AcceptInvite(ctx context.Context, token, sub string) (Membership, error) {
	if err := validSub(sub); err != nil {
		return Membership{}, err
	}
	tid, err := InviteTenant(token)
	if err != nil {
		return Membership{}, err
	}
	h := sha256.Sum256([]byte(token))
	key := keyspace.Invite(tid, h[:])
	for range maxRetries {
		v, err := c.get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return Membership{}, notFound("invitation")
		}
		if err != nil {
			return Membership{}, err
		}
		var r inviteRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return Membership{}, fmt.Errorf("catalog: corrupt invitation: %w", err)
		}
		now := c.now().UTC()
		if !now.Before(r.Expires) {
			_ = c.apply(ctx, func(b *kv.Batch) { b.DeleteIfEquals(key, v) })
			return Membership{}, notFound("invitation")
		}
		t, tv, err := c.readTenant(ctx, tid)
		if errors.Is(err, ErrNotFound) {
			return Membership{}, notFound("tenant")
		}
		if err != nil {
			return Membership{}, err
		}
		if t.Status != Active {
			return Membership{}, apierr.Validationf("tenant is %s", t.Status)
		}
		role, _ := tenancy.ParseRole(r.Role)
		m := Membership{Sub: sub, Tenant: tid, Role: role, Via: "invite", Created: now}
		// NB: the token is consumed by the conditional delete, so two
		// gateways accepting it at once make one membership.
		err = c.apply(ctx, func(b *kv.Batch) {
			b.DeleteIfEquals(key, v)
			b.Expect(keyspace.TenantRecord(tid), tv)
			putMembership(b, m)
		})
		if errors.Is(err, kv.ErrConflict) {
			continue
		}
		if err != nil {
			return Membership{}, err
		}
		return m, nil
	}
	return Membership{}, contended()
}
