package admin

import (
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/catalog"
)

// The admin API's JSON shapes are the public client package's types: the
// handlers encode exactly what the client decodes. The aliases keep the
// handlers' (and the black-box tests') spelling.
type (
	Tenant              = client.Tenant
	TablePlacement      = client.TablePlacement
	CreateTenantRequest = client.CreateTenantRequest
	Key                 = client.Key
	CreateKeyRequest    = client.CreateKeyRequest
	RotateKeyRequest    = client.RotateKeyRequest
	SessionRequest      = client.SessionRequest
	Session             = client.Session
	VerifyResult        = client.VerifyResult
	InviteRequest       = client.InviteRequest
	Invite              = client.Invite
	AcceptInviteRequest = client.AcceptInviteRequest
	AddMemberRequest    = client.AddMemberRequest
	Membership          = client.Membership
	PlatformTenants     = client.PlatformTenants
	WhoAmI              = client.WhoAmI
	ServerKeyStatus     = client.ServerKeyStatus
)

// AuditPage is an answer of the audit endpoints: client.AuditPage's shape
// over the log's own records (a test in package client proves the shapes
// equal, as those of the quota package's Quota, Update and Report).
type AuditPage struct {
	Records []audit.Record `json:"records"`
	// NextAfter, if not zero, is the "after" of the next page.
	NextAfter uint64 `json:"next_after,omitempty"`
}

func tenantOut(t catalog.Tenant) Tenant {
	return Tenant{ID: t.ID.String(), Name: t.Name, Slug: t.Slug, Status: string(t.Status), Tier: string(t.Tier), CreatedAt: t.Created}
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
