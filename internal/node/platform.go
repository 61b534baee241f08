package node

import (
	"context"
	"log/slog"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/auth"
)

// Platform configures platform users' sign-in (OIDC ID tokens). Without
// JWKS or HS256Secret the platform endpoints are off.
type Platform struct {
	// JWKS is a JWKS URL or file for RS256/ES256 tokens.
	JWKS string
	// HS256Secret enables HS256 tokens signed with it, for local
	// development and tests only.
	HS256Secret string
	// Issuer and Audience, if set, must match the tokens' iss and aud.
	Issuer, Audience string
}

// open returns the verifier and key set to put into admin.Options (both
// nil when platform sign-in is not configured).
func (c Platform) open(ctx context.Context, log *slog.Logger) (*auth.JWTVerifier, *admin.JWKS, error) {
	if c.JWKS == "" && c.HS256Secret == "" {
		return nil, nil, nil
	}
	v := auth.NewJWTVerifier(auth.JWTOptions{HS256Secret: []byte(c.HS256Secret), Issuer: c.Issuer, Audience: c.Audience})
	if c.JWKS == "" {
		return v, nil, nil
	}
	j, err := admin.LoadJWKS(ctx, c.JWKS, v, log)
	if err != nil {
		return nil, nil, err
	}
	return v, j, nil
}
