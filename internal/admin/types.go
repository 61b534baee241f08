package admin

import (
	"time"

	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/catalog"
)

// The admin API's JSON shapes, shared by the handlers and the Client.

// Tenant is a tenant as the API shows it.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Slug      string    `json:"slug"`
	Status    string    `json:"status"`
	Tier      string    `json:"tier"`
	CreatedAt time.Time `json:"created_at"`
}

func tenantOut(t catalog.Tenant) Tenant {
	return Tenant{ID: t.ID.String(), Name: t.Name, Slug: t.Slug, Status: string(t.Status), Tier: string(t.Tier), CreatedAt: t.Created}
}

// CreateTenantRequest is the body of POST /v1/tenants.
type CreateTenantRequest struct {
	Name     string `json:"name"`
	Slug     string `json:"slug,omitempty"`
	Tier     string `json:"tier,omitempty"`      // pool (default); silo is refused until tenant moves exist
	OwnerSub string `json:"owner_sub,omitempty"` // platform user who becomes a member (admin)
	ID       string `json:"id,omitempty"`        // a chosen id (32 hex), for seeding
}

// Key is an API key's metadata; SecretAccessKey and Key are set only in
// the answers to create and rotate.
type Key struct {
	TenantID        string     `json:"tenant_id"`
	KeyID           string     `json:"key_id"`
	AccessKeyID     string     `json:"access_key_id"`
	Role            string     `json:"role"`
	Env             string     `json:"env"`
	Status          string     `json:"status"` // active, expired or revoked
	CreatedAt       time.Time  `json:"created_at"`
	CreatedBy       string     `json:"created_by,omitempty"`
	LastUsedAt      *time.Time `json:"last_used_at,omitempty"`
	ExpiresAt       *time.Time `json:"expires_at,omitempty"`
	RevokedAt       *time.Time `json:"revoked_at,omitempty"`
	SecretAccessKey string     `json:"secret_access_key,omitempty"`
	Key             string     `json:"key,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func keyOut(cr catalog.Credential, now time.Time) Key {
	k := Key{
		TenantID: cr.Tenant.String(), KeyID: cr.ID, AccessKeyID: cr.AccessKeyID, Role: cr.Role.String(), Env: cr.Env,
		Status: "active", CreatedAt: cr.Created, CreatedBy: cr.CreatedBy,
		LastUsedAt: timePtr(cr.LastUsed), ExpiresAt: timePtr(cr.Expires), RevokedAt: timePtr(cr.Revoked),
	}
	switch {
	case !cr.Revoked.IsZero():
		k.Status = "revoked"
	case !cr.Usable(now):
		k.Status = "expired"
	}
	return k
}

// CreateKeyRequest is the body of POST /v1/tenants/{tenant}/keys.
type CreateKeyRequest struct {
	Role      string     `json:"role,omitempty"` // app (default), read or admin
	Env       string     `json:"env,omitempty"`  // live (default; an admin key's own env for admin keys)
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// RotateKeyRequest is the body of POST /v1/tenants/{tenant}/keys/{key}/rotate.
type RotateKeyRequest struct {
	// GraceSeconds keeps the old key valid that long; 0 revokes it at once.
	GraceSeconds int `json:"grace_seconds,omitempty"`
}

// SessionRequest is the body of POST /v1/tenants/{tenant}/sessions.
type SessionRequest struct {
	Role            string   `json:"role,omitempty"` // app (default), read or admin
	Env             string   `json:"env,omitempty"`
	Tables          []string `json:"tables,omitempty"`
	Actions         []string `json:"actions,omitempty"`
	DurationSeconds int      `json:"duration_seconds,omitempty"` // default 900, at most 43200
}

// Session is a set of temporary credentials. Its upper-case members are
// those of AWS STS (and, with Version, of the AWS CLI's credential_process
// output).
type Session struct {
	Version         int       `json:"Version"`
	AccessKeyID     string    `json:"AccessKeyId"`
	SecretAccessKey string    `json:"SecretAccessKey"`
	SessionToken    string    `json:"SessionToken"`
	Expiration      time.Time `json:"Expiration"`
	TenantID        string    `json:"tenant_id"`
	Role            string    `json:"role"`
	Env             string    `json:"env"`
	Tables          []string  `json:"tables,omitempty"`
	Actions         []string  `json:"actions,omitempty"`
}

// AuditPage is an answer of the audit endpoints.
type AuditPage struct {
	Records []audit.Record `json:"records"`
	// NextAfter, if not zero, is the "after" of the next page.
	NextAfter uint64 `json:"next_after,omitempty"`
}

// VerifyResult is the answer of the audit verify endpoints.
type VerifyResult struct {
	OK      bool   `json:"ok"`
	Records uint64 `json:"records"`
	Error   string `json:"error,omitempty"`
}

// InviteRequest is the body of POST /v1/tenants/{tenant}/invites.
type InviteRequest struct {
	Role       string `json:"role,omitempty"` // read (default), app or admin
	Email      string `json:"email,omitempty"`
	TTLSeconds int    `json:"ttl_seconds,omitempty"` // default 7 days
}

// Invite is a created invitation; Token is shown once.
type Invite struct {
	Token     string    `json:"token"`
	TenantID  string    `json:"tenant_id"`
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AcceptInviteRequest is the body of POST /v1/invites/accept.
type AcceptInviteRequest struct {
	Token string `json:"token"`
}

// AddMemberRequest is the body of POST /v1/tenants/{tenant}/members
// (seeding, operator only).
type AddMemberRequest struct {
	Sub  string `json:"sub"`
	Role string `json:"role,omitempty"` // admin (default), app or read
}

// Membership is one of a platform user's tenants.
type Membership struct {
	Sub       string    `json:"sub"`
	TenantID  string    `json:"tenant_id"`
	Name      string    `json:"name,omitempty"`
	Slug      string    `json:"slug,omitempty"`
	Status    string    `json:"status,omitempty"`
	Role      string    `json:"role"`
	Via       string    `json:"via"`
	CreatedAt time.Time `json:"created_at"`
}

// PlatformTenants is the answer of GET /v1/platform/tenants.
type PlatformTenants struct {
	Sub     string       `json:"sub"`
	Tenants []Membership `json:"tenants"`
}

// WhoAmI is the answer of GET /v1/whoami.
type WhoAmI struct {
	AccessKeyID string `json:"access_key_id"`
	Role        string `json:"role"`
	TenantID    string `json:"tenant_id,omitempty"`
	Env         string `json:"env,omitempty"`
}
