// Package backup writes and restores operator backups of a whole server:
// a copy, as of one moment, of the main store, every silo store and the
// tenants' data keys, into a repository directory where files are stored
// once by content (so that a backup after the first copies only the
// sstables written since) and each backup is a manifest naming its files
// and their SHA-256. A backup is complete exactly when its manifest
// exists; restoring checks every file against it before using any.
//
// Repository layout (see DESIGN.md for the decisions):
//
//	tenantdb-backup             the repository's marker (format, owner)
//	files/<aa>/<sha256>         file contents, by their SHA-256
//	keys/<tenant>/<backup id>   a tenant's data keys as the backup took them
//	backups/<backup id>.json    manifests, written last
//	tmp/                        files being written
package backup

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Format is the repository and manifest format this package writes.
const Format = 1

// Names inside a repository.
const (
	markerFile = "tenantdb-backup"
	filesDir   = "files"
	keysDir    = "keys"
	backupsDir = "backups"
	tmpDir     = "tmp"
)

// ErrNoBackup is returned when a repository holds no complete backup (or
// not the one asked for).
var ErrNoBackup = errors.New("backup: no such complete backup in the repository")

// marker is the repository's marker file.
type marker struct {
	Format int `json:"format"`
	// Owner is the identity of the data directory whose server writes
	// backups here (Registry.ID): only it may add backups, since it
	// removes the keys of tenants it deleted and reuses checksums by file
	// name.
	Owner   string    `json:"owner"`
	Created time.Time `json:"created"`
}

// File is one file of a backup.
type File struct {
	// Path is the file's path in the data directory, slash-separated
	// (db/000012.sst, silos/<tenant>/store/MANIFEST-000001).
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Key is one tenant's data keys in a backup (keys/<tenant>/<backup id>).
type Key struct {
	Tenant string `json:"tenant"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest describes one complete backup.
type Manifest struct {
	Format  int       `json:"format"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Base is the backup whose checksums this one reused ("" for a full
	// backup).
	Base string `json:"base,omitempty"`
	// ServerKeyCheck identifies the server key that wraps the tenants'
	// data keys in this backup (auth.ServerKey.Check, hex): the key a
	// restore must be given.
	ServerKeyCheck string `json:"server_key_check"`
	Files          []File `json:"files"`
	Keys           []Key  `json:"keys"`
	// Bytes is the size of the backup's files; Copied and CopiedBytes
	// what creating it added to the repository (the rest was there).
	Bytes       int64 `json:"bytes"`
	Copied      int   `json:"copied"`
	CopiedBytes int64 `json:"copied_bytes"`
	// Checksum is the SHA-256 of the manifest's JSON with Checksum empty.
	Checksum string `json:"checksum"`
}

func (m *Manifest) sum() (string, error) {
	c := *m
	c.Checksum = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// Repo is a backup repository directory.
type Repo struct {
	dir string
}

// OpenRepo returns the repository in dir, which must hold one.
func OpenRepo(dir string) (*Repo, error) {
	if _, err := readMarker(dir); err != nil {
		return nil, err
	}
	return &Repo{dir: dir}, nil
}

func readMarker(dir string) (marker, error) {
	var m marker
	b, err := os.ReadFile(filepath.Join(dir, markerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("backup: %s is not a backup repository (no %s)", dir, markerFile)
	}
	if err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("backup: %s: corrupt repository marker", dir)
	}
	if m.Format != Format {
		return m, fmt.Errorf("backup: %s: repository format %d, this server reads %d", dir, m.Format, Format)
	}
	return m, nil
}

// initRepo opens the repository in dir for owner, creating it if dir is
// missing or empty. A repository of another owner is refused.
func initRepo(dir, owner string, now time.Time) (*Repo, error) {
	m, err := readMarker(dir)
	if err == nil {
		if m.Owner != owner {
			return nil, fmt.Errorf("backup: %s holds the backups of another data directory (a server restored from it, or another server); back up into a new directory", dir)
		}
		return &Repo{dir: dir}, nil
	}
	ents, rerr := os.ReadDir(dir)
	if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup: %w", rerr)
	}
	if len(ents) > 0 {
		return nil, err // not empty and not a repository
	}
	for _, d := range []string{dir, filepath.Join(dir, filesDir), filepath.Join(dir, keysDir), filepath.Join(dir, backupsDir), filepath.Join(dir, tmpDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	}
	b, _ := json.Marshal(marker{Format: Format, Owner: owner, Created: now.UTC()})
	if err := writeAtomic(dir, filepath.Join(dir, markerFile), b); err != nil {
		return nil, err
	}
	return &Repo{dir: dir}, nil
}

// lock takes the repository's lock (one create at a time), released by
// the returned function or by the process's death.
func (r *Repo) lock() (func(), error) {
	f, err := os.Open(filepath.Join(r.dir, markerFile))
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("backup: another backup is being written into %s", r.dir)
	}
	return func() { f.Close() }, nil
}

func (r *Repo) blobPath(sum string) string {
	return filepath.Join(r.dir, filesDir, sum[:2], sum)
}

func (r *Repo) keyPath(tenant, id string) string {
	return filepath.Join(r.dir, keysDir, tenant, id)
}

// Backups returns the repository's complete backups, oldest first. A
// manifest that does not parse or whose checksum is wrong is an error
// (Verify reports it), not skipped.
func (r *Repo) Backups() ([]*Manifest, error) {
	ents, err := os.ReadDir(filepath.Join(r.dir, backupsDir))
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	var out []*Manifest
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m, err := r.Manifest(id)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *Manifest) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Manifest reads backup id's manifest ("" for the latest) and checks its
// checksum.
func (r *Repo) Manifest(id string) (*Manifest, error) {
	if id == "" {
		ms, err := r.Backups()
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			return nil, ErrNoBackup
		}
		return ms[len(ms)-1], nil
	}
	if !validID(id) {
		return nil, fmt.Errorf("backup: %q is not a backup id", id)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, backupsDir, id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoBackup, id)
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("backup %s: the manifest is corrupt: %v", id, err)
	}
	sum, err := m.sum()
	if err != nil || sum != m.Checksum || m.ID != id {
		return nil, fmt.Errorf("backup %s: the manifest is corrupt (checksum mismatch)", id)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("backup %s: format %d, this server reads %d", id, m.Format, Format)
	}
	return &m, nil
}

// newID returns a backup id that sorts by creation time.
func newID(now time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// validID reports whether id can be a backup id (so it is safe in a path).
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '.') {
			return false
		}
	}
	return !strings.Contains(id, "..")
}

// validPath reports whether a manifest's file path stays inside the data
// directory.
func validPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

func validSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func validTenant(s string) bool {
	t, err := tenancy.ParseTenantID(s)
	return err == nil && t.String() == s
}

// writeAtomic writes data to path through a synced temporary file in dir
// and a rename, then syncs path's directory.
func writeAtomic(dir, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("backup: writing %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// hashFile returns the SHA-256 (hex) and size of the file at path.
func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
