package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// fakeServer stands for a server's data directory: files its checkpoint
// copies, and the tenants' key files.
type fakeServer struct {
	dataDir string
	files   map[string][]byte
	keys    map[tenancy.TenantID][]byte
	fail    error
}

func newFake(t *testing.T) *fakeServer {
	return &fakeServer{dataDir: t.TempDir(), files: map[string][]byte{
		"db/000001.sst":                         bytes.Repeat([]byte("a"), 5000),
		"db/MANIFEST-000001":                    []byte("manifest 1"),
		"db/000002.log":                         []byte("wal"),
		"silos/" + tid(1) + "/store/000004.sst": bytes.Repeat([]byte("s"), 3000),
	}, keys: map[tenancy.TenantID][]byte{mustTenant(1): []byte(`{"tenant":"1"}`), mustTenant(2): []byte(`{"tenant":"2"}`)}}
}

func tid(n byte) string { return mustTenant(n).String() }

func mustTenant(n byte) tenancy.TenantID {
	var t tenancy.TenantID
	t[0], t[15] = 0x10, n
	return t
}

func (f *fakeServer) checkpoint(dir string) (map[tenancy.TenantID][]byte, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	for p, b := range f.files {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
	}
	out := map[tenancy.TenantID][]byte{}
	for t, b := range f.keys {
		out[t] = b
	}
	return out, nil
}

func (f *fakeServer) create(t *testing.T, repo string) *Manifest {
	t.Helper()
	m, err := Create(context.Background(), CreateOptions{Repo: repo, DataDir: f.dataDir, Checkpoint: f.checkpoint, ServerKeyCheck: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func restore(t *testing.T, repo, id string) (string, VerifyResult, error) {
	t.Helper()
	r, err := OpenRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	res, err := r.Restore(RestoreOptions{Backup: id, DataDir: dir, ServerKeyCheck: "k1", ServerKey: []byte("KEY\n")})
	return dir, res, err
}

func TestCreateIncrementalRestore(t *testing.T) {
	f := newFake(t)
	repo := filepath.Join(t.TempDir(), "repo")
	full := f.create(t, repo)
	if full.Base != "" || full.CopiedBytes != full.Bytes || len(full.Files) != 4 || len(full.Keys) != 2 {
		t.Fatalf("full backup = %+v", full)
	}
	if _, err := os.Stat(filepath.Join(f.dataDir, StagingDir)); !os.IsNotExist(err) {
		t.Errorf("staging left after a backup: %v", err)
	}

	// New sstable, a changed WAL and manifest; the old sstable is the same
	// file (same name and size): not read again, so a change of its bytes
	// (impossible for an sstable) is not seen.
	f.files["db/000005.sst"] = bytes.Repeat([]byte("b"), 7000)
	f.files["db/000002.log"] = []byte("wal 2")
	f.files["db/MANIFEST-000001"] = []byte("manifest 2")
	f.files["db/000001.sst"] = bytes.Repeat([]byte("X"), 5000)
	incr := f.create(t, repo)
	if incr.Base != full.ID || incr.Copied != 3 || incr.CopiedBytes != 7000+5+10 {
		t.Fatalf("incremental backup = base %q, %d copied (%d bytes); want 3 files of %d bytes", incr.Base, incr.Copied, incr.CopiedBytes, 7000+5+10)
	}

	dir, res, err := restore(t, repo, "")
	if err != nil || len(res.Problems) > 0 {
		t.Fatalf("restore: %v %v", err, res.Problems)
	}
	for p, want := range map[string]string{"db/000005.sst": strings.Repeat("b", 7000), "db/000001.sst": strings.Repeat("a", 5000),
		"db/000002.log": "wal 2", "tenant-keys/" + tid(2): `{"tenant":"2"}`, "server.key": "KEY\n"} {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(got) != want {
			t.Errorf("restored %s = %.40q, %v; want %.40q", p, got, err, want)
		}
	}
	// The first backup restores as it was.
	dir1, _, err := restore(t, repo, full.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir1, "db/000002.log")); string(got) != "wal" {
		t.Errorf("backup 1's WAL = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir1, "db/000005.sst")); !os.IsNotExist(err) {
		t.Errorf("backup 1 holds a later sstable: %v", err)
	}
}

func TestRestoreRefuses(t *testing.T) {
	f := newFake(t)
	repo := filepath.Join(t.TempDir(), "repo")
	m := f.create(t, repo)
	r, _ := OpenRepo(repo)

	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o600)
	if _, err := r.Restore(RestoreOptions{DataDir: full, ServerKeyCheck: "k1"}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore into a non-empty directory: %v", err)
	}
	if _, err := r.Restore(RestoreOptions{DataDir: filepath.Join(t.TempDir(), "n"), ServerKeyCheck: "other"}); err == nil || !strings.Contains(err.Error(), "server key") {
		t.Errorf("restore with another server key: %v", err)
	}

	blob := r.blobPath(m.Files[0].SHA256)
	b, _ := os.ReadFile(blob)
	b[len(b)/2] ^= 1
	os.WriteFile(blob, b, 0o600)
	target := filepath.Join(t.TempDir(), "n")
	res, err := r.Restore(RestoreOptions{DataDir: target, ServerKeyCheck: "k1"})
	if err == nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Reason, "checksum mismatch") {
		t.Errorf("restore of a corrupted backup: %v %v", err, res.Problems)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("a refused restore wrote %s", target)
	}

	// A manifest altered by hand (a path out of the directory) fails its
	// checksum; one whose checksum was recomputed is refused by entry.
	mp := filepath.Join(repo, backupsDir, m.ID+".json")
	var mm Manifest
	data, _ := os.ReadFile(mp)
	json.Unmarshal(data, &mm)
	mm.Files[0].Path = "../../escape"
	data, _ = json.Marshal(mm)
	os.WriteFile(mp, data, 0o600)
	if _, err := r.Manifest(m.ID); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("a hand-altered manifest: %v", err)
	}
	mm.Checksum, _ = mm.sum()
	data, _ = json.Marshal(mm)
	os.WriteFile(mp, data, 0o600)
	res, err = r.Restore(RestoreOptions{DataDir: target, ServerKeyCheck: "k1"})
	if err == nil || len(res.Problems) == 0 || !strings.Contains(res.Problems[0].Reason, "not a valid file entry") {
		t.Errorf("a manifest naming a path out of the data directory: %v %v", err, res.Problems)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(target)), "escape")); !os.IsNotExist(err) {
		t.Error("a restore wrote outside its directory")
	}
}

func TestShredAndSweep(t *testing.T) {
	f := newFake(t)
	repo := filepath.Join(t.TempDir(), "repo")
	m := f.create(t, repo)
	// Tenant 1 is deleted: its keys go from the repository at once.
	if err := NewRegistry(f.dataDir).Shred(mustTenant(1)); err != nil {
		t.Fatal(err)
	}
	_, res, err := restore(t, repo, m.ID)
	if err != nil || len(res.Shredded) != 1 || res.Shredded[0] != tid(1) {
		t.Fatalf("restore after tenant 1's deletion: %v, shredded %v", err, res.Shredded)
	}
	// Tenant 2 is deleted while the repository is away: the next backup
	// removes its keys from the earlier backups too.
	delete(f.keys, mustTenant(2))
	f.create(t, repo)
	if _, err := os.Stat(filepath.Join(repo, keysDir, tid(2))); !os.IsNotExist(err) {
		t.Errorf("tenant 2's keys after a backup without it: %v", err)
	}
}

// TestDeletedDuringCreate: a tenant deleted while a backup is written
// (its Shred may come before the backup writes its keys) has no keys in
// the finished backup.
func TestDeletedDuringCreate(t *testing.T) {
	f := newFake(t)
	repo := filepath.Join(t.TempDir(), "repo")
	m, err := Create(context.Background(), CreateOptions{Repo: repo, DataDir: f.dataDir, Checkpoint: f.checkpoint, ServerKeyCheck: "k1",
		Live: func(tn tenancy.TenantID) bool { return tn != mustTenant(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Keys) != 1 || m.Keys[0].Tenant != tid(2) {
		t.Errorf("keys of the backup = %+v; want tenant 2's only", m.Keys)
	}
	if _, err := os.Stat(filepath.Join(repo, keysDir, tid(1))); !os.IsNotExist(err) {
		t.Errorf("the deleted tenant's keys are in the repository: %v", err)
	}
}

func TestRepositoryOwner(t *testing.T) {
	f, g := newFake(t), newFake(t)
	repo := filepath.Join(t.TempDir(), "repo")
	f.create(t, repo)
	_, err := Create(context.Background(), CreateOptions{Repo: repo, DataDir: g.dataDir, Checkpoint: g.checkpoint})
	if err == nil || !strings.Contains(err.Error(), "another data directory") {
		t.Errorf("a backup of another data directory into the repository: %v", err)
	}
	if _, err := Create(context.Background(), CreateOptions{Repo: "relative", DataDir: g.dataDir, Checkpoint: g.checkpoint}); err == nil {
		t.Error("a relative repository path was accepted")
	}
	if _, err := Create(context.Background(), CreateOptions{Repo: filepath.Join(g.dataDir, "in"), DataDir: g.dataDir, Checkpoint: g.checkpoint}); err == nil {
		t.Error("a repository inside the data directory was accepted")
	}
}

func TestInterruptedCreateLeavesNoBackup(t *testing.T) {
	f := newFake(t)
	repo := filepath.Join(t.TempDir(), "repo")
	f.fail = os.ErrDeadlineExceeded
	if _, err := Create(context.Background(), CreateOptions{Repo: repo, DataDir: f.dataDir, Checkpoint: f.checkpoint}); err == nil {
		t.Fatal("a failed checkpoint made a backup")
	}
	r, err := OpenRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := r.Backups(); err != nil || len(ms) != 0 {
		t.Fatalf("backups after a failed create: %v %v", ms, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.fail = nil
	cancel()
	if _, err := Create(ctx, CreateOptions{Repo: repo, DataDir: f.dataDir, Checkpoint: f.checkpoint}); err == nil {
		t.Fatal("a cancelled create made a backup")
	}
	if ms, _ := r.Backups(); len(ms) != 0 {
		t.Fatalf("backups after a cancelled create: %d", len(ms))
	}
}

func TestPrune(t *testing.T) {
	f := newFake(t)
	repo := filepath.Join(t.TempDir(), "repo")
	first := f.create(t, repo)
	for i := range 3 {
		time.Sleep(2 * time.Millisecond) // ids sort by time
		f.files["db/000002.log"] = []byte("wal " + strings.Repeat("x", i+1))
		f.create(t, repo)
	}
	r, _ := OpenRepo(repo)
	res, err := r.Prune(2)
	if err != nil || len(res.Deleted) != 2 || res.Deleted[0] != first.ID || res.Files != 2 {
		t.Fatalf("prune = %+v, %v; want 2 backups and their 2 WALs deleted", res, err)
	}
	for _, m := range mustBackups(t, r) {
		if v, err := r.Verify(m.ID, nil); err != nil || len(v.Problems) > 0 {
			t.Errorf("after prune, backup %s: %v %v", m.ID, err, v.Problems)
		}
	}
	if _, err := os.Stat(r.keyPath(tid(1), first.ID)); !os.IsNotExist(err) {
		t.Errorf("the keys of a pruned backup are left: %v", err)
	}
}

func mustBackups(t *testing.T, r *Repo) []*Manifest {
	t.Helper()
	ms, err := r.Backups()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
