package client

import "context"

// Encryption is a tenant's encryption at rest: every non-key attribute
// value of its items, index entries, change records and audit records is
// sealed under the tenant's own data key.
type Encryption struct {
	Algorithm string       `json:"algorithm"`
	Version   uint32       `json:"version"`
	Legacy    bool         `json:"legacy,omitempty"`
	Rotation  *KeyRotation `json:"rotation,omitempty"`
	Running   bool         `json:"running"`
	Error     string       `json:"error,omitempty"`
}

// KeyRotation is a tenant data key rotation in progress.
type KeyRotation struct {
	From    uint32 `json:"from"`
	To      uint32 `json:"to"`
	Started int64  `json:"started"` // unix ms
	Done    int64  `json:"done"`    // values re-encrypted so far
	Cursor  string `json:"cursor,omitempty"`
	// Owner is, on a fleet of gateways, the gateway working on it, and
	// Beat when it last renewed its claim (unix ms).
	Owner string `json:"owner,omitempty"`
	Beat  int64  `json:"beat,omitempty"`
}

// ServerKeyStatus reports which server key wraps the tenants' data keys.
type ServerKeyStatus struct {
	// Check identifies the server key in use (not the key itself).
	Check string `json:"check"`
	// Current and Other count the tenant keys wrapped under the current
	// server key and under another (a rotation not finished).
	Current int `json:"current"`
	Other   int `json:"other"`
	// Rotation, on a fleet of gateways, is the server key rotation in
	// progress (its phase and the gateway driving it), if any.
	Rotation string `json:"rotation,omitempty"`
}

// Encryption returns a tenant's encryption state.
func (c *Client) Encryption(ctx context.Context, tenant string) (Encryption, error) {
	var out Encryption
	return out, c.do(ctx, "GET", tenantPath(tenant)+"/encryption", c.Key, nil, &out)
}

// RotateTenantKey starts (or resumes) a rotation of the tenant's data
// key (operator only); the re-encryption runs in the background, and
// Encryption shows its progress.
func (c *Client) RotateTenantKey(ctx context.Context, tenant string) (Encryption, error) {
	var out Encryption
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/rotate-key", c.Key, struct{}{}, &out)
}

// ServerKey reports which server key wraps the tenants' data keys
// (operator only).
func (c *Client) ServerKey(ctx context.Context) (ServerKeyStatus, error) {
	var out ServerKeyStatus
	return out, c.do(ctx, "GET", "/v1/server-key", c.Key, nil, &out)
}

// RotateServerKey replaces the server key with a new random one and
// re-wraps every tenant's data key and credential secret under it
// (operator only).
func (c *Client) RotateServerKey(ctx context.Context) (ServerKeyStatus, error) {
	var out ServerKeyStatus
	return out, c.do(ctx, "POST", "/v1/server-key/rotate", c.Key, struct{}{}, &out)
}
