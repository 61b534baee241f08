package backup

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// KeysDir is where a restore puts the tenants' keys in the data
// directory (node.TenantKeysDir; the same name).
const KeysDir = "tenant-keys"

// ServerKeyFile is where a restore installs the server key it was given
// (auth.ServerKeyFile; the same name).
const ServerKeyFile = "server.key"

type hasher struct{ h hash.Hash }

func newHasher() *hasher                      { return &hasher{sha256.New()} }
func (h *hasher) Write(b []byte) (int, error) { return h.h.Write(b) }
func (h *hasher) sum() string                 { return hex.EncodeToString(h.h.Sum(nil)) }

// Problem is one thing Verify found wrong.
type Problem struct {
	Backup string `json:"backup"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	return fmt.Sprintf("backup %s: %s: %s", p.Backup, p.Path, p.Reason)
}

// VerifyResult is what Verify checked.
type VerifyResult struct {
	Backup string `json:"backup"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	// Shredded are the tenants whose keys were destroyed after the backup
	// (deleted tenants): their data in it can no longer be read.
	Shredded []string  `json:"shredded,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
}

// Verify reads every file of backup id ("" for the latest) and checks it
// against the manifest's SHA-256 and size; progress, if set, is called
// with the bytes checked so far. Problems are reported, not returned as
// an error; the error is for a backup that cannot be read at all.
func (r *Repo) Verify(id string, progress func(done, total int64)) (VerifyResult, error) {
	m, err := r.Manifest(id)
	if err != nil {
		return VerifyResult{}, err
	}
	res := VerifyResult{Backup: m.ID, Files: len(m.Files), Bytes: m.Bytes}
	bad := func(path, reason string) {
		res.Problems = append(res.Problems, Problem{Backup: m.ID, Path: path, Reason: reason})
	}
	var done int64
	for _, f := range m.Files {
		if !validPath(f.Path) || !validSum(f.SHA256) {
			bad(f.Path, "not a valid file entry")
			continue
		}
		sum, n, err := hashFile(r.blobPath(f.SHA256))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			bad(f.Path, "missing from the repository")
		case err != nil:
			bad(f.Path, err.Error())
		case n != f.Size:
			bad(f.Path, fmt.Sprintf("size %d, manifest says %d", n, f.Size))
		case sum != f.SHA256:
			bad(f.Path, "checksum mismatch (the file is corrupt)")
		}
		done += f.Size
		if progress != nil {
			progress(done, m.Bytes)
		}
	}
	for _, k := range m.Keys {
		if !validTenant(k.Tenant) {
			bad("keys/"+k.Tenant, "not a valid key entry")
			continue
		}
		sum, n, err := hashFile(r.keyPath(k.Tenant, m.ID))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			res.Shredded = append(res.Shredded, k.Tenant)
		case err != nil:
			bad("keys/"+k.Tenant, err.Error())
		case n != k.Size || sum != k.SHA256:
			bad("keys/"+k.Tenant, "checksum mismatch (the key file is corrupt)")
		}
	}
	return res, nil
}

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// Backup is the backup's id; "" restores the latest.
	Backup string
	// DataDir is the new data directory: missing or empty.
	DataDir string
	// ServerKeyCheck identifies the server key the restored server will
	// run with (auth.ServerKey.Check, hex); it must be the backup's.
	ServerKeyCheck string
	// ServerKey, if set, is written to <DataDir>/server.key (mode 0600);
	// otherwise the server must be given the key (TENANTDB_SERVER_KEY).
	ServerKey []byte
	// Progress, if set, is called with a phase ("verify", "copy") and the
	// bytes done of the total.
	Progress func(phase string, done, total int64)
}

// Restore writes backup o.Backup into o.DataDir after checking every
// file of it (a backup with any problem is refused, and nothing is
// written). The directory appears complete or not at all: it is written
// beside, under a temporary name, and renamed. Tenants whose keys were
// destroyed (deleted after the backup) are reported in Shredded: their
// data is restored as it is stored, sealed, and no key opens it.
func (r *Repo) Restore(o RestoreOptions) (VerifyResult, error) {
	if o.Progress == nil {
		o.Progress = func(string, int64, int64) {}
	}
	target := filepath.Clean(o.DataDir)
	if ents, err := os.ReadDir(target); err == nil && len(ents) > 0 {
		return VerifyResult{}, fmt.Errorf("backup: the target %s is not empty; restore into a new directory", target)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return VerifyResult{}, fmt.Errorf("backup: %w", err)
	}
	m, err := r.Manifest(o.Backup)
	if err != nil {
		return VerifyResult{}, err
	}
	if o.ServerKeyCheck != m.ServerKeyCheck {
		return VerifyResult{}, fmt.Errorf("backup: backup %s's tenant keys are wrapped under the server key with check %s, not the one given (check %s); give the server key that was in use when it was taken", m.ID, m.ServerKeyCheck, o.ServerKeyCheck)
	}
	res, err := r.Verify(m.ID, func(done, total int64) { o.Progress("verify", done, total) })
	if err != nil {
		return res, err
	}
	if len(res.Problems) > 0 {
		return res, fmt.Errorf("backup: backup %s failed verification, nothing was restored: %s", m.ID, res.Problems[0])
	}

	var rnd [4]byte
	rand.Read(rnd[:])
	tmp := target + ".restoring-" + hex.EncodeToString(rnd[:])
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	var done int64
	dirs := map[string]bool{}
	for _, f := range m.Files {
		dst := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
		dirs[filepath.Dir(dst)] = true
		if err := copyChecked(r.blobPath(f.SHA256), dst, f.SHA256); err != nil {
			return res, fmt.Errorf("backup: restoring %s: %w", f.Path, err)
		}
		done += f.Size
		o.Progress("copy", done, m.Bytes)
	}
	kdir := filepath.Join(tmp, KeysDir)
	if err := os.MkdirAll(kdir, 0o700); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	dirs[kdir] = true
	for _, k := range m.Keys {
		if slices.Contains(res.Shredded, k.Tenant) {
			// NB: the mark keeps the restored server from giving the
			// tenant a new key (tenantkey.ShreddedSuffix).
			mark := fmt.Sprintf("the data key of tenant %s was destroyed (the tenant was deleted) after backup %s was taken\n", k.Tenant, m.ID)
			at := filepath.Join(kdir, k.Tenant+tenantkey.ShreddedSuffix)
			if err := os.WriteFile(at, []byte(mark), 0o600); err != nil {
				return res, fmt.Errorf("backup: %w", err)
			}
			if err := syncFile(at); err != nil {
				return res, fmt.Errorf("backup: %w", err)
			}
			continue
		}
		if err := copyChecked(r.keyPath(k.Tenant, m.ID), filepath.Join(kdir, k.Tenant), k.SHA256); err != nil {
			return res, fmt.Errorf("backup: restoring the keys of tenant %s: %w", k.Tenant, err)
		}
	}
	if len(o.ServerKey) > 0 {
		if err := os.WriteFile(filepath.Join(tmp, ServerKeyFile), o.ServerKey, 0o600); err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
		if err := syncFile(filepath.Join(tmp, ServerKeyFile)); err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
	}
	dirs[tmp] = true
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
	}
	os.Remove(target) // empty (checked above) or missing
	if err := os.Rename(tmp, target); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	ok = true
	if err := syncDir(filepath.Dir(target)); err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	return res, nil
}

// copyChecked copies src to dst (new), checking its SHA-256 again as it
// reads (the repository may change under a restore), and syncs dst.
func copyChecked(src, dst, sum string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := newHasher()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if err == nil && h.sum() != sum {
		err = errors.New("checksum mismatch while copying (the file changed after it was verified)")
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
