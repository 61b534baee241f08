package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls the admin API; the tenantdb CLI is built on it.
type Client struct {
	// Endpoint is the server's base URL, e.g. http://127.0.0.1:8000.
	Endpoint string
	// Key is the full API key sent as the bearer token.
	Key string
	// Token is a platform user's JWT, for the platform endpoints.
	Token string
	// HTTP is the client used; nil means one with a 30 s timeout.
	HTTP *http.Client
}

// Error is an error answer of the API.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Message, e.Status)
}

func (c *Client) do(ctx context.Context, method, path string, bearer string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("admin client: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Endpoint, "/")+path, body)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("admin client: reading the answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var eb errorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			return &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return &Error{Status: resp.StatusCode, Code: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(data))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("admin client: malformed answer: %w", err)
	}
	return nil
}

// Do sends a request to path (e.g. "/v1/tenants/ID/quota") with the API
// key as the bearer token, in (if not nil) as the JSON body, and decodes
// the JSON answer into out (if not nil). An error answer is an *Error.
// It is for endpoints this Client has no method for.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	return c.do(ctx, method, path, c.Key, in, out)
}

func tenantPath(ref string) string { return "/v1/tenants/" + url.PathEscape(ref) }

// WhoAmI returns the caller's identity.
func (c *Client) WhoAmI(ctx context.Context) (WhoAmI, error) {
	var out WhoAmI
	return out, c.do(ctx, "GET", "/v1/whoami", c.Key, nil, &out)
}

// CreateTenant creates a tenant (operator).
func (c *Client) CreateTenant(ctx context.Context, req CreateTenantRequest) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "POST", "/v1/tenants", c.Key, req, &out)
}

// Tenants lists all tenants (operator).
func (c *Client) Tenants(ctx context.Context) ([]Tenant, error) {
	var out []Tenant
	return out, c.do(ctx, "GET", "/v1/tenants", c.Key, nil, &out)
}

// Tenant returns a tenant by id (or, for the operator, slug).
func (c *Client) Tenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "GET", tenantPath(ref), c.Key, nil, &out)
}

// SuspendTenant suspends a tenant (operator).
func (c *Client) SuspendTenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "POST", tenantPath(ref)+"/suspend", c.Key, nil, &out)
}

// ResumeTenant resumes a suspended tenant (operator).
func (c *Client) ResumeTenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "POST", tenantPath(ref)+"/resume", c.Key, nil, &out)
}

// DeleteTenant deletes a tenant and all its data (operator).
func (c *Client) DeleteTenant(ctx context.Context, ref string) (Tenant, error) {
	var out Tenant
	return out, c.do(ctx, "DELETE", tenantPath(ref), c.Key, nil, &out)
}

// CreateKey creates an API key; the answer holds the secret, once.
func (c *Client) CreateKey(ctx context.Context, tenant string, req CreateKeyRequest) (Key, error) {
	var out Key
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/keys", c.Key, req, &out)
}

// Keys lists a tenant's keys (never their secrets).
func (c *Client) Keys(ctx context.Context, tenant string) ([]Key, error) {
	var out []Key
	return out, c.do(ctx, "GET", tenantPath(tenant)+"/keys", c.Key, nil, &out)
}

// RevokeKey revokes a key (by key id or access key id).
func (c *Client) RevokeKey(ctx context.Context, tenant, key string) (Key, error) {
	var out Key
	return out, c.do(ctx, "DELETE", tenantPath(tenant)+"/keys/"+url.PathEscape(key), c.Key, nil, &out)
}

// RotateKey replaces a key; the answer is the new key with its secret.
func (c *Client) RotateKey(ctx context.Context, tenant, key string, grace time.Duration) (Key, error) {
	var out Key
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/keys/"+url.PathEscape(key)+"/rotate", c.Key,
		RotateKeyRequest{GraceSeconds: int(grace / time.Second)}, &out)
}

// CreateSession mints temporary credentials for a tenant.
func (c *Client) CreateSession(ctx context.Context, tenant string, req SessionRequest) (Session, error) {
	var out Session
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/sessions", c.Key, req, &out)
}

// AuditQuery selects audit records.
type AuditQuery struct {
	From, To time.Time
	After    uint64
	Limit    int
}

func (q AuditQuery) encode() string {
	v := url.Values{}
	if !q.From.IsZero() {
		v.Set("from", q.From.Format(time.RFC3339Nano))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.Format(time.RFC3339Nano))
	}
	if q.After > 0 {
		v.Set("after", strconv.FormatUint(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// Audit returns a page of a tenant's audit log ("" tenant: the platform
// log, operator only).
func (c *Client) Audit(ctx context.Context, tenant string, q AuditQuery) (AuditPage, error) {
	var out AuditPage
	path := "/v1/audit"
	if tenant != "" {
		path = tenantPath(tenant) + "/audit"
	}
	return out, c.do(ctx, "GET", path+q.encode(), c.Key, nil, &out)
}

// VerifyAudit checks a tenant's (or, with "", the platform's) audit chain.
func (c *Client) VerifyAudit(ctx context.Context, tenant string) (VerifyResult, error) {
	var out VerifyResult
	path := "/v1/audit/verify"
	if tenant != "" {
		path = tenantPath(tenant) + "/audit/verify"
	}
	return out, c.do(ctx, "GET", path, c.Key, nil, &out)
}

// CreateInvite creates an invitation to a tenant; the token is shown once.
func (c *Client) CreateInvite(ctx context.Context, tenant string, req InviteRequest) (Invite, error) {
	var out Invite
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/invites", c.Key, req, &out)
}

// AddMember seeds a platform user's membership (operator).
func (c *Client) AddMember(ctx context.Context, tenant string, req AddMemberRequest) (Membership, error) {
	var out Membership
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/members", c.Key, req, &out)
}

// AcceptInvite accepts an invitation as the platform user of c.Token.
func (c *Client) AcceptInvite(ctx context.Context, token string) (Membership, error) {
	var out Membership
	return out, c.do(ctx, "POST", "/v1/invites/accept", c.Token, AcceptInviteRequest{Token: token}, &out)
}

// PlatformTenants lists the tenants of the platform user of c.Token.
func (c *Client) PlatformTenants(ctx context.Context) (PlatformTenants, error) {
	var out PlatformTenants
	return out, c.do(ctx, "GET", "/v1/platform/tenants", c.Token, nil, &out)
}
