package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/fleetkey"
	"github.com/tenantdb/tenantdb/internal/kv"
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
//
// A gateway over a remote engine keeps the wrapped keys in the engine
// (store), shared by the fleet.
func openKeys(ctx context.Context, o Options, key *auth.ServerKey, cat *catalog.Catalog, store tenantkey.Store) (*tenantkey.Keyring, error) {
	opts := tenantkey.Options{KEK: key.Derive(kekInfo), Store: store}
	if store != nil {
		opts.MaxStale = FleetStaleness
	}
	if store == nil && !o.InMemory {
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

// serverKeyStatus reports which server key wraps the tenants' keys.
func (n *Node) serverKeyStatus(ctx context.Context) (admin.ServerKeyStatus, error) {
	cur, other, err := n.keys.Wrapped()
	if err != nil {
		return admin.ServerKeyStatus{}, apierr.Wrap(apierr.Internal, err, "reading the tenant keys")
	}
	st := admin.ServerKeyStatus{Check: hex.EncodeToString(n.auth.ServerKey().Check()[:8]), Current: cur, Other: other}
	if n.fleetKey != nil {
		if st.Rotation, err = n.fleetKey.Status(ctx); err != nil {
			return admin.ServerKeyStatus{}, apierr.Wrap(apierr.Internal, err, "reading the fleet's server key rotation")
		}
	}
	return st, nil
}

// rotateServerKey replaces the server key by a new random one (see
// auth/rotate.go for the steps and why a crash is safe).
func (n *Node) rotateServerKey(ctx context.Context) (admin.ServerKeyStatus, error) {
	if n.remote != nil { // every gateway of the fleet moves to the new key (package fleetkey)
		if err := n.fleetKey.Rotate(ctx, "operator"); err != nil {
			return admin.ServerKeyStatus{}, err
		}
		return n.serverKeyStatus(ctx)
	}
	if n.opts.ServerKey != "" {
		return admin.ServerKeyStatus{}, apierr.Validationf("the server key comes from %s, which the server cannot change; to rotate it, stop the server, move the key into <data-dir>/%s, unset the variable, start the server and rotate again", auth.ServerKeyEnv, auth.ServerKeyFile)
	}
	n.skMu.Lock()
	defer n.skMu.Unlock()
	var next *auth.ServerKey
	var err error
	if n.opts.InMemory {
		master := make([]byte, 32)
		rand.Read(master)
		next, err = auth.NewServerKey(master)
	} else {
		next, err = auth.CreateNextServerKey(n.opts.DataDir)
	}
	if err != nil {
		return admin.ServerKeyStatus{}, apierr.Wrap(apierr.Internal, err, "creating the new server key")
	}
	if err := n.finishServerKeyRotation(ctx, n.auth.ServerKey(), next); err != nil {
		return admin.ServerKeyStatus{}, err
	}
	return n.serverKeyStatus(ctx)
}

// finishServerKeyRotation re-wraps every tenant key and re-seals every
// credential under next and installs it. Every step is idempotent.
func (n *Node) finishServerKeyRotation(ctx context.Context, old, next *auth.ServerKey) error {
	if _, err := fleetkey.ResealSecrets(ctx, kv.NewLocal(n.db), next, old); err != nil { // the webhook secret
		return apierr.Wrap(apierr.Internal, err, "re-sealing the secrets kept under the server key")
	}
	if err := n.keys.Rewrap(old.Derive(kekInfo), next.Derive(kekInfo)); err != nil {
		return apierr.Wrap(apierr.Internal, err, "re-wrapping the tenant keys")
	}
	if _, err := n.auth.Rekey(ctx, next); err != nil {
		return apierr.Wrap(apierr.Internal, err, "re-sealing the credentials")
	}
	if !n.opts.InMemory {
		if err := auth.CommitServerKey(n.opts.DataDir); err != nil {
			return apierr.Wrap(apierr.Internal, err, "installing the new server key")
		}
	}
	n.log.Info("server key rotated; session tokens and shard iterators minted before must be minted again")
	return nil
}

// resumeServerKeyRotation finishes a rotation a crash interrupted (a
// server.key.next in the data directory) before the node serves, and
// returns the server key then in charge.
func (n *Node) resumeServerKeyRotation(ctx context.Context, key *auth.ServerKey) (*auth.ServerKey, error) {
	if n.opts.InMemory || n.opts.ServerKey != "" || n.remote != nil { // a gateway's: fleetkey.Check
		return key, nil
	}
	next, err := auth.LoadNextServerKey(n.opts.DataDir)
	if err != nil || next == nil {
		return key, err
	}
	n.log.Warn("finishing a server key rotation that was interrupted")
	if err := n.finishServerKeyRotation(ctx, key, next); err != nil {
		return nil, err
	}
	return next, nil
}
