// Package client is the Go client of tenantdb's admin API (/v1/): tenants,
// API keys, sessions (temporary credentials, also as an
// aws.CredentialsProvider for aws-sdk-go-v2), quotas, usage and the audit
// log.
//
// A Client acts with one credential: the operator key for platform-wide
// calls (creating tenants), or a tenant's admin key for calls on that
// tenant. Every call takes a context. Errors answered by the server are
// *Error values carrying the API's code and HTTP status; IsNotFound,
// IsForbidden and their siblings (or errors.Is with ErrNotFound ...)
// classify them.
//
//	c := client.New("http://127.0.0.1:8000", operatorKey)
//	t, err := c.CreateTenant(ctx, client.CreateTenantRequest{Name: "acme"})
//
// The types of this package are the API's JSON shapes. The server's
// handlers encode these very types, or (audit records, quotas, usage)
// types of its own that a test proves to have exactly their shape, so the
// client and the server cannot drift apart.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls the admin API of one server with one credential. Its zero
// value is not usable: set Endpoint and Key (or Token). A Client is safe
// for concurrent use.
type Client struct {
	// Endpoint is the server's base URL, e.g. http://127.0.0.1:8000.
	Endpoint string
	// Key is the full API key (sk_...) sent as the bearer token.
	Key string
	// Token is a platform user's OIDC JWT, for the platform calls
	// (PlatformTenants, AcceptInvite).
	Token string
	// HTTP is the HTTP client used; nil means one with a 30 s timeout.
	HTTP *http.Client
	// Session, if set, signs every request with these temporary
	// credentials (SigV4) instead of sending Key: a tenant's session that
	// the operator minted (CreateSession) to act for the tenant.
	Session *Session
}

// New returns a Client for the server at endpoint acting with the API
// key key.
func New(endpoint, key string) *Client {
	return &Client{Endpoint: endpoint, Key: key}
}

// maxAnswer bounds an answer the client reads.
const maxAnswer = 64 << 20

var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

func (c *Client) do(ctx context.Context, method, path, bearer string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Endpoint, "/")+path, body)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := c.authorize(ctx, req, bearer); err != nil {
		return err
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("client: reading the answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		return errorOf(resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: malformed answer: %w", err)
	}
	return nil
}

// Do sends a request to path (e.g. "/v1/tenants/ID/quota") with the
// Client's key as the bearer token, in (if not nil) as the JSON body, and
// decodes the JSON answer into out (if not nil). An error answer is an
// *Error. It is for endpoints this Client has no method for.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	return c.do(ctx, method, path, c.Key, in, out)
}

func tenantPath(ref string) string { return "/v1/tenants/" + url.PathEscape(ref) }

// WhoAmI returns the identity of the Client's key.
func (c *Client) WhoAmI(ctx context.Context) (WhoAmI, error) {
	var out WhoAmI
	return out, c.do(ctx, "GET", "/v1/whoami", c.Key, nil, &out)
}
