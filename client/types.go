package client

import "time"

// The admin API's JSON shapes. The server's handlers (internal/admin)
// encode these very types.

// Tenant is a tenant as the API shows it.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Slug      string    `json:"slug"`
	Status    string    `json:"status"` // active, suspended or (in DeleteTenant's answer) deleted
	Tier      string    `json:"tier"`   // pool or silo
	CreatedAt time.Time `json:"created_at"`
	// Placement (in Tenant's answer) says where the tenant's data of each
	// table lives.
	Placement []TablePlacement `json:"placement,omitempty"`
}

// TablePlacement says where a tenant's data of one table lives.
type TablePlacement struct {
	Table string `json:"table"`
	// Env is the environment owning a tenant's own table; "" for a
	// shared table.
	Env       string `json:"env,omitempty"`
	Isolation string `json:"isolation"`
	// Store is "pool" (the server's main store, shared by tenants) or
	// "silo" (the tenant's own store).
	Store string `json:"store"`
	// Path is the store's directory under the data directory ("" in
	// memory).
	Path string `json:"path,omitempty"`
	// HasData says whether the tenant has ever written to the table.
	HasData bool `json:"has_data"`
	// Moving, if not empty, is the phase of a move of the tenant's data of
	// the table to the other store (tenantdb tenant move).
	Moving string `json:"moving,omitempty"`
}

// CreateTenantRequest is the body of POST /v1/tenants.
type CreateTenantRequest struct {
	Name     string `json:"name"`
	Slug     string `json:"slug,omitempty"`
	Tier     string `json:"tier,omitempty"`      // pool (default) or silo (a store of its own)
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
	// Key is the full key (sk_...): the bearer token of the admin API, and
	// what an application's configuration holds.
	Key string `json:"key,omitempty"`
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

// AuditRecord is one record of an audit log.
type AuditRecord struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor"`          // access key id, "sub:<subject>" for platform users, "system"
	Role    string    `json:"role,omitempty"` // the actor's role
	Action  string    `json:"action"`         // e.g. "key.create", "tenant.suspend", "dynamodb:GetItem"
	Target  string    `json:"target,omitempty"`
	Source  string    `json:"source,omitempty"` // client address
	Outcome string    `json:"outcome"`          // ok, denied, error (or a summary of coalesced denials)
	Reason  string    `json:"reason,omitempty"`
	// Count is the number of attempts a summary record of coalesced
	// denials stands for; 0 otherwise.
	Count int64  `json:"count,omitempty"`
	Prev  string `json:"prev"`           // hex of the previous record's hash
	Hash  string `json:"hash,omitempty"` // hex
}

// AuditPage is an answer of the audit endpoints.
type AuditPage struct {
	Records []AuditRecord `json:"records"`
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

// Quota is a tenant's (or, with Table, one table's) capacity quota, in
// DynamoDB read and write capacity units per second.
type Quota struct {
	TenantID     string  `json:"tenant_id"`
	Table        string  `json:"table,omitempty"`
	ReadUnits    float64 `json:"read_units"`
	WriteUnits   float64 `json:"write_units"`
	BurstSeconds float64 `json:"burst_seconds"`
	Weight       float64 `json:"weight,omitempty"`
	MaxInflight  int     `json:"max_inflight,omitempty"`
	// Set reports whether the quota was set explicitly (not the default).
	Set bool `json:"set"`
	// Available is the capacity left now, if the server meters it.
	Available *QuotaAvailable `json:"available,omitempty"`
	// Tables are the tenant's tables' own quotas (tenant quota only).
	Tables []Quota `json:"tables,omitempty"`
}

// QuotaAvailable is the capacity left in a quota's buckets.
type QuotaAvailable struct {
	ReadUnits  float64 `json:"read_units"`
	WriteUnits float64 `json:"write_units"`
}

// QuotaUpdate is the body of PUT /v1/tenants/{tenant}/quota: each member
// given replaces the stored value, 0 removes it (back to the default), nil
// members are kept.
type QuotaUpdate struct {
	ReadUnits    *float64 `json:"read_units,omitempty"`
	WriteUnits   *float64 `json:"write_units,omitempty"`
	BurstSeconds *float64 `json:"burst_seconds,omitempty"`
	Weight       *float64 `json:"weight,omitempty"`
	MaxInflight  *int     `json:"max_inflight,omitempty"`
}

// OpUsage is the metered consumption of requests.
type OpUsage struct {
	Requests           int64   `json:"requests"`
	ThrottledRequests  int64   `json:"throttled_requests"`
	ConsumedReadUnits  float64 `json:"consumed_read_units"`
	ConsumedWriteUnits float64 `json:"consumed_write_units"`
}

// TableUsage is the consumed capacity of one table.
type TableUsage struct {
	ConsumedReadUnits  float64 `json:"consumed_read_units"`
	ConsumedWriteUnits float64 `json:"consumed_write_units"`
	// Requests counts the requests charged to the table (that consumed
	// capacity on it, or were throttled); ThrottledRequests the throttled.
	Requests          int64 `json:"requests"`
	ThrottledRequests int64 `json:"throttled_requests"`
}

// TableHourUsage is one table's consumption in one hour, and its storage
// (items and index entries, every environment) as sampled in that hour
// when the tenant was active in it (Sampled); an hour without a sample
// had the storage of the last one before it.
type TableHourUsage struct {
	Hour  time.Time `json:"hour"` // start of the hour, UTC
	Table string    `json:"table"`
	TableUsage
	Sampled      bool  `json:"sampled,omitempty"`
	StorageBytes int64 `json:"storage_bytes,omitempty"`
	Items        int64 `json:"items,omitempty"`
}

// HourUsage is the consumption of one hour.
type HourUsage struct {
	Hour time.Time `json:"hour"` // start of the hour, UTC
	OpUsage
}

// TableStorage is the stored size of one table of a tenant environment.
type TableStorage struct {
	Table      string `json:"table"`
	Env        string `json:"env"`
	Items      int64  `json:"items"`
	Bytes      int64  `json:"bytes"`
	IndexBytes int64  `json:"index_bytes"`
}

// UsageReport is a tenant's metered usage over a window: the totals, by
// operation, by table and by hour, and its current storage.
type UsageReport struct {
	TenantID string    `json:"tenant_id"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	OpUsage
	StorageBytes int64                 `json:"storage_bytes"`
	Items        int64                 `json:"items"`
	ByOperation  map[string]OpUsage    `json:"by_operation"`
	ByTable      map[string]TableUsage `json:"by_table"`
	Storage      []TableStorage        `json:"storage"`
	Hours        []HourUsage           `json:"hours"`
	// TableHours is ByTable by hour, oldest first (then by table).
	TableHours []TableHourUsage `json:"table_hours"`
}

// The outcomes of audit records.
const (
	OutcomeOK              = "ok"
	OutcomeDenied          = "denied"
	OutcomeError           = "error"
	OutcomeDeniedCoalesced = "denied-coalesced" // a summary of Count denials
)

// DeniedAttempts returns the number of refused attempts r records: 1 for
// a denial, Count for a summary of coalesced denials, 0 otherwise.
func (r AuditRecord) DeniedAttempts() int64 {
	switch r.Outcome {
	case OutcomeDenied:
		return 1
	case OutcomeDeniedCoalesced:
		return r.Count
	}
	return 0
}
