package node

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// TenantKeysDir is the directory, inside the data directory, of the
// tenants' wrapped data keys (package tenantkey).
const TenantKeysDir = "tenant-keys"

// kekInfo names the key, derived from the server key, that wraps every
// tenant's data key.
const kekInfo = "tenantdb tenant data key wrap v1"

// openKeys opens the tenants' keyring. A data directory that holds tenants
// but no keyring yet was written before encryption: the keys its tenants
// get are marked legacy (their older values are plaintext until
// `tenant rotate-key` re-encrypts them).
func openKeys(ctx context.Context, o Options, key *auth.ServerKey, cat *catalog.Catalog) (*tenantkey.Keyring, error) {
	opts := tenantkey.Options{KEK: key.Derive(kekInfo)}
	if !o.InMemory {
		opts.Dir = filepath.Join(o.DataDir, TenantKeysDir)
		if _, err := os.Stat(opts.Dir); errors.Is(err, fs.ErrNotExist) {
			ts, err := cat.Tenants(ctx)
			if err != nil {
				return nil, err
			}
			opts.Upgrade = len(ts) > 0
		}
	}
	return tenantkey.Open(opts)
}
