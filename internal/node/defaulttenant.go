package node

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The default tenant makes a fresh server usable with plain AWS tools at
// once: `tenantdb serve` creates it on a new data directory (unless
// --default-tenant=false) with an admin key, so that
//
//	AWS_SHARED_CREDENTIALS_FILE=tenantdb-data/default-credentials aws dynamodb ...
//
// works without first creating a tenant through the admin API.
const (
	// DefaultTenantName is the default tenant's name.
	DefaultTenantName = "default"
	// DefaultCredentialsFile is the default tenant's credential file name
	// inside the data directory, in AWS shared-credentials format with the
	// profile "default".
	DefaultCredentialsFile = "default-credentials"
)

// createDefaultTenant creates tenant "default" and an admin key for it
// and, unless dataDir is "", writes the key to
// <dataDir>/default-credentials (mode 0600). It returns the key and the
// file's path. endpoint is the server's URL (clientEndpoint).
func createDefaultTenant(ctx context.Context, cat *catalog.Catalog, a *auth.Authenticator, dataDir, region, endpoint string) (auth.APIKey, string, error) {
	t, err := cat.CreateTenant(ctx, catalog.NewTenant{Name: DefaultTenantName})
	if err != nil {
		return auth.APIKey{}, "", fmt.Errorf("creating the default tenant: %w", err)
	}
	ik, err := a.CreateKey(ctx, auth.NewKey{Tenant: t.ID, Role: tenancy.RoleAdmin, Env: "live", CreatedBy: "bootstrap"})
	if err != nil {
		return auth.APIKey{}, "", fmt.Errorf("creating the default tenant's key: %w", err)
	}
	if dataDir == "" {
		return ik.Key, "", nil
	}
	path := filepath.Join(dataDir, DefaultCredentialsFile)
	if err := auth.WriteCredentialsFile(path, "default", ik.Key, region, endpoint); err != nil {
		return auth.APIKey{}, "", err
	}
	return ik.Key, path, nil
}

// clientEndpoint is the URL a client on this machine reaches a server
// listening on addr (host:port) at, for the credential files' usage
// comment: an unspecified host (0.0.0.0, ::) becomes 127.0.0.1; "" (no
// address known) is left to auth.WriteCredentialsFile's default.
func clientEndpoint(addr string) string {
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
