package client

import (
	"context"
	"net/url"
	"time"
)

// CreateTenant creates a tenant (operator only). A slug taken already is
// ErrConflict.
func (c *Client) CreateTenant(ctx context.Context, req CreateTenantRequest) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "POST", "/v1/tenants", c.Key, req, &out)
}

// Tenants lists all tenants (operator only).
func (c *Client) Tenants(ctx context.Context) ([]Tenant, error) {
	var out []Tenant
	return out, c.do(ctx, "GET", "/v1/tenants", c.Key, nil, &out)
}

// Tenant returns a tenant by id (or, for the operator, slug). Another
// tenant's is ErrNotFound, as a tenant that does not exist.
func (c *Client) Tenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "GET", tenantPath(ref), c.Key, nil, &out)
}

// SuspendTenant suspends a tenant (operator only): its keys are refused
// until ResumeTenant.
func (c *Client) SuspendTenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "POST", tenantPath(ref)+"/suspend", c.Key, nil, &out)
}

// ResumeTenant resumes a suspended tenant (operator only).
func (c *Client) ResumeTenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "POST", tenantPath(ref)+"/resume", c.Key, nil, &out)
}

// DeleteTenant deletes a tenant and all its data (operator only).
func (c *Client) DeleteTenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "DELETE", tenantPath(ref), c.Key, nil, &out)
}

// CreateKey creates an API key of a tenant; the answer holds the secret,
// once.
func (c *Client) CreateKey(ctx context.Context, tenant string, req CreateKeyRequest) (Key, error) {
	var out Key
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/keys", c.Key, req, &out)
}

// Keys lists a tenant's keys (never their secrets).
func (c *Client) Keys(ctx context.Context, tenant string) ([]Key, error) {
	var out []Key
	return out, c.do(ctx, "GET", tenantPath(tenant)+"/keys", c.Key, nil, &out)
}

// GetKey returns a key's metadata, by key id or access key id.
func (c *Client) GetKey(ctx context.Context, tenant, key string) (Key, error) {
	var out Key
	return out, c.do(ctx, "GET", tenantPath(tenant)+"/keys/"+url.PathEscape(key), c.Key, nil, &out)
}

// RevokeKey revokes a key (by key id or access key id).
func (c *Client) RevokeKey(ctx context.Context, tenant, key string) (Key, error) {
	var out Key
	return out, c.do(ctx, "DELETE", tenantPath(tenant)+"/keys/"+url.PathEscape(key), c.Key, nil, &out)
}

// RotateKey replaces a key; the answer is the new key with its secret. The
// old key stays valid for grace (0: it is revoked at once).
func (c *Client) RotateKey(ctx context.Context, tenant, key string, grace time.Duration) (Key, error) {
	var out Key
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/keys/"+url.PathEscape(key)+"/rotate", c.Key,
		RotateKeyRequest{GraceSeconds: int(grace / time.Second)}, &out)
}

// CreateSession mints temporary credentials for a tenant (token vending).
// See Credentials for a provider that renews them.
func (c *Client) CreateSession(ctx context.Context, tenant string, req SessionRequest) (Session, error) {
	var out Session
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/sessions", c.Key, req, &out)
}
