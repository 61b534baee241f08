package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The API's job records live in one of two places: files under the
// export root, beside the buckets (one server: fileRecords), or the
// control plane's key-value store, shared by a gateway fleet
// (kvRecords, kvrecords.go), so that DescribeExport and ListImports
// answer the same on every gateway and another gateway takes over the
// jobs of one that died.

// jobRef names a job's record.
type jobRef struct {
	t    tenancy.TenantID
	env  string
	kind string // exportsDir or importsDir
	id   string
}

func refOf(sc tenancy.Scope, kind, id string) jobRef {
	return jobRef{t: sc.Tenant(), env: sc.Env(), kind: kind, id: id}
}

// records keeps the job records.
type records interface {
	// create writes the record v of a new job, and what it was started
	// with, and returns the runner's hold on it; the hold is kept alive
	// (kvRecords: leased) until ctx ends or the job ends.
	create(ctx context.Context, ref jobRef, js jobScope, v any) (jobHold, error)
	// load reads a record into v; false if there is none.
	load(ctx context.Context, ref jobRef, v any) (bool, error)
	// ids lists the record ids of kind of a tenant environment, sorted.
	ids(ctx context.Context, t tenancy.TenantID, env, kind string) ([]string, error)
	// interrupted returns the jobs in progress that no running server
	// holds any more, each held by the caller now (fileRecords: every
	// one, at start; kvRecords: those whose runner's lease lapsed).
	interrupted(ctx context.Context) ([]interruptedJob, error)
	// removeTenant removes every record of tenant t.
	removeTenant(ctx context.Context, t tenancy.TenantID) error
}

// jobHold is a runner's hold on its job's record.
type jobHold interface {
	// save writes the record's progress; an error means the job must
	// stop (on a fleet: another gateway took it over).
	save(v any) error
	// end writes the final record: the job is no longer in progress.
	end(v any) error
	// stop gives the job up without ending it (the server is shutting
	// down): it is resumed later, by this server or another.
	stop()
	// lost is closed when the hold is lost (nil: never).
	lost() <-chan struct{}
}

// interruptedJob is a job in progress whose runner is gone.
type interruptedJob struct {
	ref  jobRef
	js   jobScope
	ok   bool // js was recorded (a job of an older version has none)
	raw  []byte
	hold jobHold
}

// fileRecords keeps the records as files:
// <root>/<tenant>/<env>/.tenantdb/{exports,imports}/<id>.{json,scope}.
type fileRecords struct {
	root string
	mu   sync.Mutex // serializes record files
}

func (f *fileRecords) path(ref jobRef) string {
	return filepath.Join(f.root, ref.t.String(), ref.env, metaDir, ref.kind, ref.id+".json")
}

func (f *fileRecords) write(path string, v any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return writeRecord(path, v)
}

func (f *fileRecords) create(_ context.Context, ref jobRef, js jobScope, v any) (jobHold, error) {
	path := f.path(ref)
	if err := f.write(scopeFile(path), js); err != nil {
		return nil, err
	}
	if err := f.write(path, v); err != nil {
		return nil, err
	}
	return fileHold{f, path}, nil
}

func (f *fileRecords) load(_ context.Context, ref jobRef, v any) (bool, error) {
	return f.read(f.path(ref), v)
}

func (f *fileRecords) read(path string, v any) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("transfer: %w", err)
	}
	return true, json.Unmarshal(b, v)
}

func (f *fileRecords) ids(_ context.Context, t tenancy.TenantID, env, kind string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(f.root, t.String(), env, metaDir, kind))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// interrupted returns every record in progress: on one server, at its
// start, nothing runs yet.
func (f *fileRecords) interrupted(context.Context) ([]interruptedJob, error) {
	files, err := filepath.Glob(filepath.Join(f.root, "*", "*", metaDir, "*", "*.json"))
	if err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	var out []interruptedJob
	for _, p := range files {
		rel, err := filepath.Rel(f.root, p)
		if err != nil {
			continue
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 5 || parts[2] != metaDir || (parts[3] != exportsDir && parts[3] != importsDir) {
			continue
		}
		t, err := tenancy.ParseTenantID(parts[0])
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("transfer: %w", err)
		}
		if !inProgress(parts[3], b) {
			continue
		}
		ij := interruptedJob{ref: jobRef{t: t, env: parts[1], kind: parts[3], id: strings.TrimSuffix(parts[4], ".json")}, raw: b, hold: fileHold{f, p}}
		ij.ok, err = f.read(scopeFile(p), &ij.js)
		if err != nil {
			ij.ok = false
		}
		out = append(out, ij)
	}
	return out, nil
}

// removeTenant does nothing: the records are in the tenant's tree,
// which the service removes with its buckets.
func (f *fileRecords) removeTenant(context.Context, tenancy.TenantID) error { return nil }

type fileHold struct {
	f    *fileRecords
	path string
}

func (h fileHold) save(v any) error { return h.f.write(h.path, v) }
func (h fileHold) end(v any) error  { return h.f.write(h.path, v) }
func (h fileHold) stop()            {}

func (h fileHold) lost() <-chan struct{} { return nil }

// inProgress reports whether raw, a record of kind, is in progress.
func inProgress(kind string, raw []byte) bool {
	var st struct {
		ExportStatus string `json:"ExportStatus"`
		ImportStatus string `json:"ImportStatus"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return false
	}
	if kind == exportsDir {
		return st.ExportStatus == "IN_PROGRESS"
	}
	return st.ImportStatus == "IN_PROGRESS"
}
