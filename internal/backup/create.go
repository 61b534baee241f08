package backup

import (
	"context"
	"crypto/rand"
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
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// RegistryFile is the file, in a data directory, naming the data
// directory's identity and the repositories its server wrote backups
// into. A restore does not copy it: a restored data directory is another
// owner.
const RegistryFile = "backups.json"

// StagingDir is the directory, in a data directory, where a backup being
// created holds its checkpoint (on the data directory's file system, so
// that sstables are hard-linked, not copied).
const StagingDir = "backup-staging"

// Registry is a data directory's record of its backup repositories.
type Registry struct {
	dataDir string
	mu      sync.Mutex
}

type registryFile struct {
	ID    string   `json:"id"`
	Repos []string `json:"repositories"`
}

// NewRegistry returns the registry of dataDir.
func NewRegistry(dataDir string) *Registry { return &Registry{dataDir: dataDir} }

func (g *Registry) read() (registryFile, error) {
	var f registryFile
	b, err := os.ReadFile(filepath.Join(g.dataDir, RegistryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("backup: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("backup: %s is corrupt", RegistryFile)
	}
	return f, nil
}

// add records repo (an absolute path) and returns the data directory's
// identity, created on first use.
func (g *Registry) add(repo string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, err := g.read()
	if err != nil {
		return "", err
	}
	changed := false
	if f.ID == "" {
		var b [16]byte
		rand.Read(b[:])
		f.ID, changed = hex.EncodeToString(b[:]), true
	}
	found := false
	for _, r := range f.Repos {
		found = found || r == repo
	}
	if !found {
		f.Repos, changed = append(f.Repos, repo), true
	}
	if changed {
		b, _ := json.Marshal(f)
		if err := writeAtomic(g.dataDir, filepath.Join(g.dataDir, RegistryFile), b); err != nil {
			return "", err
		}
	}
	return f.ID, nil
}

// Shred destroys tenant t's data keys in every repository of the
// registry, so that no backup taken before t's deletion restores its data
// (crypto-shredding reaches the backups). A repository that is not there
// (an unmounted disk) is skipped: the next backup into it removes the keys
// of every tenant deleted since. tenantkey.Keyring.OnDestroy calls it.
func (g *Registry) Shred(t tenancy.TenantID) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, err := g.read()
	if err != nil {
		return err
	}
	for _, repo := range f.Repos {
		if _, err := os.Stat(filepath.Join(repo, markerFile)); err != nil {
			continue
		}
		if err := shredKey(repo, t.String()); err != nil {
			return err
		}
	}
	return nil
}

func shredKey(repo, tenant string) error {
	dir := filepath.Join(repo, keysDir, tenant)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("backup: destroying the keys of tenant %s in %s: %w", tenant, repo, err)
	}
	return syncDir(filepath.Join(repo, keysDir))
}

// Checkpoint copies the server's stores into dir (which it creates) as of
// one moment and returns the tenants' key files as they were at that
// moment (tenantkey.Keyring.Freeze around engine.Engine.Checkpoint).
type Checkpoint func(dir string) (map[tenancy.TenantID][]byte, error)

// Progress is what Create reports while it runs.
type Progress struct {
	// Phase is "checkpoint", "copy" or "done".
	Phase       string `json:"phase"`
	Files       int    `json:"files"` // files of the backup
	Bytes       int64  `json:"bytes"`
	Done        int    `json:"done"` // files handled so far
	DoneBytes   int64  `json:"done_bytes"`
	Copied      int    `json:"copied"` // files new to the repository
	CopiedBytes int64  `json:"copied_bytes"`
}

// CreateOptions configure Create.
type CreateOptions struct {
	// Repo is the repository directory (absolute); created if missing or
	// empty.
	Repo string
	// DataDir is the server's data directory (the registry and staging
	// live there).
	DataDir string
	// Checkpoint copies the stores and returns the keys.
	Checkpoint Checkpoint
	// ServerKeyCheck identifies the server key wrapping the keys.
	ServerKeyCheck string
	// Live, if set, reports whether tenant t's key still exists; keys of
	// tenants destroyed while the backup was written are removed from it
	// (their Shred may have run before this backup wrote them).
	Live func(t tenancy.TenantID) bool
	// MaxRate limits how fast the backup reads, hashes and copies the
	// stores' files, in bytes per second; 0 does not limit. (The
	// checkpoint's own copies — a store's WAL, an open silo store — are
	// not limited.)
	MaxRate int64
	// Progress, if set, is called as the backup advances.
	Progress func(Progress)
	// Now; nil means time.Now.
	Now func() time.Time
}

// progressEvery is how many bytes Create handles between Progress calls.
const progressEvery = 64 << 20

// Create writes a backup into the repository and returns its manifest.
// Files already in the repository (by content) are not copied again, and
// an sstable the previous backup of the same store had, with the same
// name and size, is not even read (sstables never change). The manifest
// is written last: a backup interrupted at any point (kill -9) has none
// and is not a backup; the files it copied are reused by the next one.
func Create(ctx context.Context, o CreateOptions) (*Manifest, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(Progress) {}
	}
	if !filepath.IsAbs(o.Repo) {
		return nil, fmt.Errorf("backup: the repository path must be absolute, got %q", o.Repo)
	}
	o.Repo = filepath.Clean(o.Repo)
	if inside(o.Repo, o.DataDir) {
		return nil, fmt.Errorf("backup: the repository %s is inside the data directory", o.Repo)
	}
	reg := NewRegistry(o.DataDir)
	owner, err := reg.add(o.Repo) // NB: before any key lands there, so that Shred reaches it
	if err != nil {
		return nil, err
	}
	now := o.Now()
	r, err := initRepo(o.Repo, owner, now)
	if err != nil {
		return nil, err
	}
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	prev, err := r.Manifest("")
	if errors.Is(err, ErrNoBackup) {
		prev, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	os.RemoveAll(filepath.Join(r.dir, tmpDir)) // an interrupted backup's
	if err := os.MkdirAll(filepath.Join(r.dir, tmpDir), 0o700); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}

	id := newID(now)
	staging := filepath.Join(o.DataDir, StagingDir)
	os.RemoveAll(staging) // an interrupted backup's
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(staging)
	o.Progress(Progress{Phase: "checkpoint"})
	cp := filepath.Join(staging, id)
	keys, err := o.Checkpoint(cp)
	if err != nil {
		return nil, fmt.Errorf("backup: checkpoint: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	m := &Manifest{Format: Format, ID: id, Created: now.UTC(), ServerKeyCheck: o.ServerKeyCheck}
	known := map[string]File{}
	if prev != nil {
		m.Base = prev.ID
		for _, f := range prev.Files {
			known[f.Path] = f
		}
	}
	type entry struct {
		path string // in cp
		rel  string
		size int64
	}
	var files []entry
	err = filepath.WalkDir(cp, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cp, path)
		files = append(files, entry{path, filepath.ToSlash(rel), info.Size()})
		m.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	p := Progress{Phase: "copy", Files: len(files), Bytes: m.Bytes}
	o.Progress(p)
	lim := newLimiter(o.MaxRate)
	defer lowerPriority()()
	var since int64
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum := ""
		if k, ok := known[f.rel]; ok && immutable(f.rel) && k.Size == f.size {
			if st, err := os.Stat(r.blobPath(k.SHA256)); err == nil && st.Size() == f.size {
				sum = k.SHA256 // NB: same store, same sstable number: the same file
			}
		}
		if sum == "" {
			copied, s, err := r.store(ctx, lim, f.path, f.size)
			if err != nil {
				return nil, err
			}
			sum = s
			if copied {
				m.Copied++
				m.CopiedBytes += f.size
				p.Copied, p.CopiedBytes = m.Copied, m.CopiedBytes
			}
		}
		m.Files = append(m.Files, File{Path: f.rel, Size: f.size, SHA256: sum})
		p.Done++
		p.DoneBytes += f.size
		if since += f.size; since >= progressEvery {
			since = 0
			o.Progress(p)
		}
	}

	// The keys: one file per tenant and backup, destroyed with the tenant.
	for t, b := range keys {
		dir := filepath.Join(r.dir, keysDir, t.String())
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		if err := writeAtomic(dir, r.keyPath(t.String(), id), b); err != nil {
			return nil, err
		}
		sum, n, err := hashFile(r.keyPath(t.String(), id))
		if err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		m.Keys = append(m.Keys, Key{Tenant: t.String(), Size: n, SHA256: sum})
	}
	// NB: a tenant deleted since the moment may have had its keys shredded
	// here before they were written above: look again, after writing.
	// (Deleted after this look, its Shred comes after the write.)
	if o.Live != nil {
		for t := range keys {
			if !o.Live(t) {
				if err := shredKey(r.dir, t.String()); err != nil {
					return nil, err
				}
				delete(keys, t)
			}
		}
		m.Keys = slices.DeleteFunc(m.Keys, func(k Key) bool {
			t, _ := tenancy.ParseTenantID(k.Tenant)
			_, ok := keys[t]
			return !ok
		})
	}
	// NB: a tenant with keys here and none live was deleted while this
	// repository was out of reach of Shred.
	if err := r.sweepKeys(keys); err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Join(r.dir, keysDir)); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}

	if m.Checksum, err = m.sum(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(r.dir, tmpDir), filepath.Join(r.dir, backupsDir, id+".json"), b); err != nil {
		return nil, err
	}
	p.Phase = "done"
	o.Progress(p)
	return m, nil
}

// store puts the file at path into the repository under its SHA-256 and
// reports whether it was not there yet. It reads the file once, paced by
// l: into a temporary file while hashing it, which becomes the blob (or
// is dropped if the repository has that content already).
func (r *Repo) store(ctx context.Context, l *limiter, path string, size int64) (copied bool, sum string, err error) {
	in, err := os.Open(path)
	if err != nil {
		return false, "", fmt.Errorf("backup: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Join(r.dir, tmpDir), "file-*")
	if err != nil {
		return false, "", fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := newHasher()
	n, err := copyPaced(ctx, l, io.MultiWriter(tmp, h), in, tmp)
	if err != nil {
		return false, "", fmt.Errorf("backup: %w", err)
	}
	if n != size {
		return false, "", fmt.Errorf("backup: %s changed while being copied", path)
	}
	sum = h.sum()
	dst := r.blobPath(sum)
	if st, err := os.Stat(dst); err == nil && st.Size() == n {
		return false, sum, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return false, "", fmt.Errorf("backup: %w", err)
	}
	err = tmp.Sync()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err == nil {
		err = syncDir(filepath.Dir(dst))
	}
	if err != nil {
		return false, "", fmt.Errorf("backup: %w", err)
	}
	return true, sum, nil
}

// sweepKeys removes the keys of tenants that have none live.
func (r *Repo) sweepKeys(live map[tenancy.TenantID][]byte) error {
	ents, err := os.ReadDir(filepath.Join(r.dir, keysDir))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	for _, e := range ents {
		t, err := tenancy.ParseTenantID(e.Name())
		if err != nil {
			continue
		}
		if _, ok := live[t]; !ok {
			if err := shredKey(r.dir, e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// immutable reports whether a store file never changes once written.
func immutable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// inside reports whether path is dir or inside it.
func inside(path, dir string) bool {
	if dir == "" {
		return false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(abs, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
