package server

// A static-credential Authenticator for this package's tests, so that
// they need no catalog. The real one is internal/auth.

import (
	"context"
	"crypto/subtle"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// DevTenant is the id of the single built-in tenant ("default") that
// DevAuthenticator's credential belongs to.
var DevTenant = tenancy.TenantID{15: 1}

// DevPrincipal is the principal of the built-in development credential:
// the "default" tenant, environment "live", role admin (it may create its
// own tables and read and write items).
func DevPrincipal(keyID string) tenancy.Principal {
	return tenancy.Principal{Tenant: DevTenant, Env: "live", Role: tenancy.RoleAdmin, KeyID: keyID}
}

// DevAuthenticator verifies SigV4 against one static credential and maps
// it to one fixed principal. Any region is accepted; the service must be
// "dynamodb".
type DevAuthenticator struct {
	AccessKeyID     string
	SecretAccessKey string
	Principal       tenancy.Principal
	// Now is the clock for the signature's time check; nil means time.Now.
	Now func() time.Time

	mu   sync.Mutex
	keys map[string][]byte // date/region/service → signing key
}

var _ Authenticator = (*DevAuthenticator)(nil)

// Authenticate implements Authenticator.
func (d *DevAuthenticator) Authenticate(_ context.Context, r *sigv4.Request) (tenancy.Principal, error) {
	a, err := sigv4.Parse(r)
	if err != nil {
		return tenancy.Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(a.AccessKeyID), []byte(d.AccessKeyID)) != 1 || a.SecurityToken != "" {
		return tenancy.Principal{}, apierr.New(apierr.UnrecognizedClient, "The security token included in the request is invalid.")
	}
	if a.Service != "dynamodb" {
		return tenancy.Principal{}, apierr.New(apierr.InvalidSignature, "Credential should be scoped to correct service: 'dynamodb'.")
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	if err := sigv4.Verify(r, a, d.signingKey(a), now()); err != nil {
		return tenancy.Principal{}, err
	}
	return d.Principal, nil
}

func (d *DevAuthenticator) signingKey(a *sigv4.Auth) []byte {
	id := a.Date + "/" + a.Region + "/" + a.Service
	d.mu.Lock()
	defer d.mu.Unlock()
	if k, ok := d.keys[id]; ok {
		return k
	}
	if d.keys == nil || len(d.keys) >= 64 {
		d.keys = map[string][]byte{}
	}
	k := sigv4.SigningKey(d.SecretAccessKey, a.Date, a.Region, a.Service)
	d.keys[id] = k
	return k
}
