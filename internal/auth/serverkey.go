package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ServerKeyFile is the server key's file name inside the data directory.
const ServerKeyFile = "server.key"

// ServerKeyEnv names the environment variable that may hold the server key
// (64 hex digits or standard base64 of 32 bytes) instead of the file.
const ServerKeyEnv = "TENANTDB_SERVER_KEY"

// ServerKey is the 256-bit master key that seals credential secrets and
// session tokens. Purpose-specific keys are derived from it with HKDF, so
// a sealed secret can never be replayed as a session token or vice versa.
type ServerKey struct {
	seal   cipher.AEAD // credential secrets
	token  cipher.AEAD // session tokens
	check  []byte      // identifies the key without revealing it
	master []byte      // for Derive
}

// NewServerKey returns the ServerKey for 32 bytes of key material.
func NewServerKey(master []byte) (*ServerKey, error) {
	if len(master) != 32 {
		return nil, fmt.Errorf("auth: server key must be 32 bytes, got %d", len(master))
	}
	sk := &ServerKey{master: append([]byte(nil), master...)}
	var err error
	if sk.seal, err = deriveAEAD(master, "tenantdb credential seal v1"); err != nil {
		return nil, err
	}
	if sk.token, err = deriveAEAD(master, "tenantdb session token v1"); err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, master)
	m.Write([]byte("tenantdb server key check v1"))
	sk.check = m.Sum(nil)
	return sk, nil
}

func deriveAEAD(master []byte, info string) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, master, nil, info, 32)
	if err != nil {
		return nil, fmt.Errorf("auth: derive key: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return cipher.NewGCM(block)
}

// Derive returns 32 bytes of key material for the purpose named by info
// (HKDF of the server key), for another package's own keys: the change
// log's shard iterators, for one. Distinct infos give independent keys.
func (sk *ServerKey) Derive(info string) []byte {
	k, err := hkdf.Key(sha256.New, sk.master, nil, info, 32)
	if err != nil {
		panic("auth: HKDF of 32 bytes failed: " + err.Error()) // only for lengths past 255*32
	}
	return k
}

// Check returns a value that identifies the key (an HMAC under it), to
// detect at start-up that a data directory was sealed under another key.
func (sk *ServerKey) Check() []byte { return append([]byte(nil), sk.check...) }

// LoadServerKey returns the server key from env (if not empty: the value
// of TENANTDB_SERVER_KEY) or else from <dataDir>/server.key, creating that
// file (mode 0600) with a fresh random key if it does not exist. created
// reports whether a new key was made.
func LoadServerKey(dataDir, env string) (sk *ServerKey, created bool, err error) {
	if env = strings.TrimSpace(env); env != "" {
		master, err := decodeKeyMaterial(env)
		if err != nil {
			return nil, false, fmt.Errorf("auth: %s: %w", ServerKeyEnv, err)
		}
		sk, err := NewServerKey(master)
		return sk, false, err
	}
	path := filepath.Join(dataDir, ServerKeyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		master := make([]byte, 32)
		rand.Read(master)
		if err := writeFileAtomic(path, []byte(hex.EncodeToString(master)+"\n"), 0o600, true); err != nil {
			if errors.Is(err, fs.ErrExist) { // another process won the race
				return LoadServerKey(dataDir, "")
			}
			return nil, false, fmt.Errorf("auth: create server key: %w", err)
		}
		sk, err := NewServerKey(master)
		return sk, true, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("auth: read server key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, false, fmt.Errorf("auth: %s is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	master, err := decodeKeyMaterial(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, false, fmt.Errorf("auth: %s: %w", path, err)
	}
	sk, err = NewServerKey(master)
	return sk, false, err
}

func decodeKeyMaterial(s string) ([]byte, error) {
	if len(s) == 64 {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	return nil, errors.New("server key must be 64 hex digits or base64 of 32 bytes")
}

// writeFileAtomic writes data to path with mode perm through a temporary
// file and a rename, so readers never see a partial file. With exclusive,
// it fails with fs.ErrExist if path exists.
func writeFileAtomic(path string, data []byte, perm os.FileMode, exclusive bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if exclusive {
		// A hard link fails if path exists, which a rename would not.
		if err := os.Link(tmp, path); err != nil {
			return err
		}
	} else if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// sealVersion prefixes every sealed value.
const sealVersion = 1

// seal encrypts plaintext under aead with a random nonce, binding aad:
// version || nonce || ciphertext+tag.
func seal(aead cipher.AEAD, plaintext, aad []byte) []byte {
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out[0] = sealVersion
	rand.Read(out[1:])
	return aead.Seal(out, out[1:], plaintext, aad)
}

var errUnseal = errors.New("auth: sealed value does not open under this server key")

// open reverses seal.
func open(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	n := aead.NonceSize()
	if len(sealed) < 1+n+aead.Overhead() || sealed[0] != sealVersion {
		return nil, errUnseal
	}
	pt, err := aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, errUnseal
	}
	return pt, nil
}
