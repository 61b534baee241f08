package client

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// SessionProvider is an aws.CredentialsProvider that mints a new session
// of a tenant (CreateSession) on every Retrieve. Use it through
// Credentials, which caches a session until shortly before it expires.
type SessionProvider struct {
	Client  *Client
	Tenant  string
	Request SessionRequest
}

var _ aws.CredentialsProvider = (*SessionProvider)(nil)

// CredentialSource is the Source of the credentials SessionProvider
// returns.
const CredentialSource = "tenantdb-session"

// Retrieve mints temporary credentials.
func (p *SessionProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	s, err := p.Client.CreateSession(ctx, p.Tenant, p.Request)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("client: minting a session of tenant %s: %w", p.Tenant, err)
	}
	return aws.Credentials{
		AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken,
		Source: CredentialSource, CanExpire: true, Expires: s.Expiration,
	}, nil
}

// DefaultExpiryWindow is how long before a session expires Credentials
// replaces it (for sessions shorter than five times as long, a fifth of
// their duration).
const DefaultExpiryWindow = time.Minute

// Credentials returns an aws.CredentialsProvider for aws-sdk-go-v2 that
// vends temporary credentials of tenant with c's key (the operator's, or
// an admin key of the tenant) and renews them before they expire:
//
//	ddb := dynamodb.New(dynamodb.Options{
//		Credentials: c.Credentials("TENANT", client.SessionRequest{Role: "app"}),
//		...
//	})
//
// opts may change the cache's options (its ExpiryWindow, by default
// DefaultExpiryWindow).
func (c *Client) Credentials(tenant string, req SessionRequest, opts ...func(*aws.CredentialsCacheOptions)) *aws.CredentialsCache {
	d := time.Duration(req.DurationSeconds) * time.Second
	if d == 0 {
		d = 15 * time.Minute // the server's default
	}
	window := min(DefaultExpiryWindow, d/5)
	return aws.NewCredentialsCache(&SessionProvider{Client: c, Tenant: tenant, Request: req},
		append([]func(*aws.CredentialsCacheOptions){func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = window }}, opts...)...)
}
