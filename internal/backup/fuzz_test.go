package backup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var fixedNow = time.Unix(1764000000, 0)

// FuzzManifest feeds arbitrary bytes as a backup's manifest (the one
// file of a repository a restore trusts for paths): reading, verifying
// and restoring it must not panic, and a restore never writes outside
// its directory.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"format":1,"id":"20261125T000000.000Z-00000000","files":[{"path":"db/1.sst","size":1,"sha256":"00"}]}`))
	f.Add([]byte(`{"format":1,"id":"x","files":[{"path":"../../x","size":0,"sha256":""}],"keys":[{"tenant":"../k"}],"checksum":""}`))
	f.Add([]byte(`not json`))
	for _, files := range [][]File{
		{{Path: "../escape", Size: 0, SHA256: strings.Repeat("0", 64)}},
		{{Path: "db/1.sst", Size: 0, SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},
	} {
		m := Manifest{Format: Format, ID: "20261125T000000.000Z-00000000", Files: files, Keys: []Key{{Tenant: "../../k"}}}
		m.Checksum, _ = m.sum()
		b, _ := json.Marshal(m)
		f.Add(b)
	}
	root, err := os.MkdirTemp("", "fuzz-manifest")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(root) })
	repo := filepath.Join(root, "repo")
	r, err := initRepo(repo, "owner", fixedNow)
	if err != nil {
		f.Fatal(err)
	}
	sub := filepath.Join(root, "sub")
	f.Fuzz(func(t *testing.T, data []byte) {
		const id = "20261125T000000.000Z-00000000"
		os.WriteFile(filepath.Join(repo, backupsDir, id+".json"), data, 0o600)
		m, err := r.Manifest(id)
		if err != nil {
			return
		}
		// A manifest whose checksum holds: restore it.
		defer os.RemoveAll(sub)
		r.Restore(RestoreOptions{Backup: id, DataDir: filepath.Join(sub, "restored"), ServerKeyCheck: m.ServerKeyCheck})
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if e.Name() != "repo" && e.Name() != "sub" {
				t.Errorf("restore wrote %s", e.Name())
			}
		}
	})
}
