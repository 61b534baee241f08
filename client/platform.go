package client

import "context"

// CreateInvite creates an invitation of a platform user to a tenant; the
// token is shown once.
func (c *Client) CreateInvite(ctx context.Context, tenant string, req InviteRequest) (Invite, error) {
	var out Invite
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/invites", c.Key, req, &out)
}

// AddMember seeds a platform user's membership of a tenant (operator only).
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
