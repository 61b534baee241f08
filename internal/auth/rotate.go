package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tenantdb/tenantdb/internal/catalog"
)

// Rotating the server key (tenantdb server-key rotate):
//
//  1. the new key is written to <data-dir>/server.key.next (CreateNextServerKey);
//  2. the tenants' data keys are re-wrapped under it (package tenantkey);
//  3. every credential secret is re-sealed under it (Authenticator.Rekey),
//     while secrets and session tokens sealed under either key open;
//  4. server.key.next replaces server.key (CommitServerKey).
//
// Each step is idempotent, and a server that starts with a server.key.next
// present finishes the rotation before serving, so a crash anywhere leaves
// either the old key or the new one in charge, never a mix that cannot
// be opened. Session tokens and shard iterators minted under the old key
// stop working once the rotation is done (clients mint new ones).

// NextServerKeyFile is the file of a server key rotation in progress.
const NextServerKeyFile = "server.key.next"

// keyPair is the server key, and during a rotation the key it replaces.
type keyPair struct {
	cur, prev *ServerKey
}

// openSecret opens a sealed credential secret under the server key, or
// the previous one while the key rotates.
func (a *Authenticator) openSecret(sealed, aad []byte) ([]byte, error) {
	kp := a.keys.Load()
	pt, err := open(kp.cur.seal, sealed, aad)
	if err != nil && kp.prev != nil {
		return open(kp.prev.seal, sealed, aad)
	}
	return pt, err
}

func (a *Authenticator) openToken(sealed, aad []byte) ([]byte, error) {
	kp := a.keys.Load()
	pt, err := open(kp.cur.token, sealed, aad)
	if err != nil && kp.prev != nil {
		return open(kp.prev.token, sealed, aad)
	}
	return pt, err
}

// Rekey makes next the server key and re-seals every stored credential
// secret under it, online: until it returns, secrets sealed under either
// key open. It returns how many secrets it re-sealed. Calling it again
// after a crash (with the same next) finishes the job.
func (a *Authenticator) Rekey(ctx context.Context, next *ServerKey) (int, error) {
	old := a.keys.Load().cur
	if old == next {
		old = a.keys.Load().prev
	}
	a.UseKeys(next, old)
	n, err := a.Reseal(ctx)
	if err != nil {
		return n, err
	}
	a.UseKeys(next, nil)
	return n, nil
}

// UseKeys makes cur the key that seals new secrets and mints session
// tokens, and also (if not nil) a key that secrets and tokens sealed
// under it still open with. A fleet's rotation (package fleetkey) steps
// every gateway through UseKeys(old, new), UseKeys(new, old) and
// UseKeys(new, nil).
func (a *Authenticator) UseKeys(cur, also *ServerKey) {
	a.keys.Store(&keyPair{cur: cur, prev: also})
}

// Reseal re-seals under the current key every stored credential secret
// that is not sealed under it (it must open under the other key of
// UseKeys) and returns how many it re-sealed. Each record is rewritten on
// condition that it is what was read.
func (a *Authenticator) Reseal(ctx context.Context) (int, error) {
	next := a.keys.Load().cur
	return a.cat.ResealCredentials(ctx, func(cr catalog.Credential) ([]byte, bool, error) {
		aad := sealAAD(cr.Tenant, cr.ID)
		if _, err := open(next.seal, cr.Sealed, aad); err == nil {
			return nil, false, nil // done already
		}
		secret, err := a.openSecret(cr.Sealed, aad)
		if err != nil {
			return nil, false, fmt.Errorf("auth: credential %s does not open under the old or the new server key: %w", cr.AccessKeyID, err)
		}
		return seal(next.seal, secret, aad), true, nil
	})
}

// Keys returns the server key in use and the other one it opens with (nil
// unless a rotation is in progress).
func (a *Authenticator) Keys() (cur, also *ServerKey) {
	kp := a.keys.Load()
	return kp.cur, kp.prev
}

// WriteNextServerKey writes master to dataDir's server.key.next (mode
// 0600, synced), replacing what is there, and returns its ServerKey: a
// gateway handed the new key of a fleet's rotation keeps it there until
// the rotation ends (CommitServerKey).
func WriteNextServerKey(dataDir string, master []byte) (*ServerKey, error) {
	sk, err := NewServerKey(master)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, NextServerKeyFile)
	if err := writeFileAtomic(path, []byte(hex.EncodeToString(master)+"\n"), 0o600, false); err != nil {
		return nil, fmt.Errorf("auth: writing the next server key: %w", err)
	}
	return sk, nil
}

// DiscardNextServerKey removes dataDir's server.key.next (a rotation that
// was abandoned before it began to seal under it).
func DiscardNextServerKey(dataDir string) error {
	err := os.Remove(filepath.Join(dataDir, NextServerKeyFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}

// ServerKey returns the server key in use.
func (a *Authenticator) ServerKey() *ServerKey { return a.keys.Load().cur }

// CreateNextServerKey writes a fresh random key to dataDir's
// server.key.next (mode 0600, synced) and returns it; if a rotation left
// one there, it returns that one instead.
func CreateNextServerKey(dataDir string) (*ServerKey, error) {
	if sk, err := LoadNextServerKey(dataDir); sk != nil || err != nil {
		return sk, err
	}
	master := make([]byte, 32)
	rand.Read(master)
	path := filepath.Join(dataDir, NextServerKeyFile)
	if err := writeFileAtomic(path, []byte(hex.EncodeToString(master)+"\n"), 0o600, false); err != nil {
		return nil, fmt.Errorf("auth: writing the next server key: %w", err)
	}
	return NewServerKey(master)
}

// LoadNextServerKey returns the key of a rotation in progress in dataDir,
// or nil if there is none.
func LoadNextServerKey(dataDir string) (*ServerKey, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, NextServerKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: reading the next server key: %w", err)
	}
	master, err := decodeKeyMaterial(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", NextServerKeyFile, err)
	}
	return NewServerKey(master)
}

// CommitServerKey ends a rotation: server.key.next replaces server.key
// (atomically; the directory is synced).
func CommitServerKey(dataDir string) error {
	if err := os.Rename(filepath.Join(dataDir, NextServerKeyFile), filepath.Join(dataDir, ServerKeyFile)); err != nil {
		return fmt.Errorf("auth: installing the new server key: %w", err)
	}
	d, err := os.Open(dataDir)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	defer d.Close()
	return d.Sync()
}
