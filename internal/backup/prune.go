package backup

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PruneResult is what Prune removed.
type PruneResult struct {
	Deleted []string `json:"deleted"` // backups
	Kept    int      `json:"kept"`
	Files   int      `json:"files"` // files no kept backup names
	Bytes   int64    `json:"bytes"`
}

// Prune deletes all but the newest keep backups (keep ≥ 1), then the
// files and keys no remaining backup needs, and whatever an interrupted
// backup left, so that a repository written every day does not grow
// without bound. A manifest goes first: a crash in the middle leaves
// unreferenced files, which the next Prune removes, never a backup
// missing a file. It takes the repository's lock (no Create meanwhile).
func (r *Repo) Prune(keep int) (PruneResult, error) {
	var res PruneResult
	if keep < 1 {
		return res, fmt.Errorf("backup: keep at least one backup, got %d", keep)
	}
	unlock, err := r.lock()
	if err != nil {
		return res, err
	}
	defer unlock()
	ms, err := r.Backups()
	if err != nil {
		return res, err
	}
	if len(ms) > keep {
		for _, m := range ms[:len(ms)-keep] {
			if err := os.Remove(filepath.Join(r.dir, backupsDir, m.ID+".json")); err != nil {
				return res, fmt.Errorf("backup: %w", err)
			}
			res.Deleted = append(res.Deleted, m.ID)
		}
		if err := syncDir(filepath.Join(r.dir, backupsDir)); err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
		ms = ms[len(ms)-keep:]
	}
	res.Kept = len(ms)
	files, keys := map[string]bool{}, map[string]bool{}
	for _, m := range ms {
		for _, f := range m.Files {
			files[f.SHA256] = true
		}
		for _, k := range m.Keys {
			keys[k.Tenant+"/"+m.ID] = true
		}
	}
	err = filepath.WalkDir(filepath.Join(r.dir, filesDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || files[d.Name()] {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		res.Files++
		res.Bytes += info.Size()
		return os.Remove(p)
	})
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	tenants, err := os.ReadDir(filepath.Join(r.dir, keysDir))
	if err != nil {
		return res, fmt.Errorf("backup: %w", err)
	}
	for _, t := range tenants {
		dir := filepath.Join(r.dir, keysDir, t.Name())
		ents, err := os.ReadDir(dir)
		if err != nil {
			return res, fmt.Errorf("backup: %w", err)
		}
		left := 0
		for _, e := range ents {
			if keys[t.Name()+"/"+e.Name()] {
				left++
				continue
			}
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return res, fmt.Errorf("backup: %w", err)
			}
		}
		if left == 0 {
			os.Remove(dir)
		}
	}
	os.RemoveAll(filepath.Join(r.dir, tmpDir))
	os.MkdirAll(filepath.Join(r.dir, tmpDir), 0o700)
	return res, nil
}
