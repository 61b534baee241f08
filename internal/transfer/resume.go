package transfer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Resuming the API's exports and imports after a restart (kill -9
// included). Beside each job's record (<id>.json) its start writes
// <id>.scope: the key id and role of the credential that started it. On
// start the service resumes every job still IN_PROGRESS with the Scope
// it was started with (tenant and environment from the record's path):
//
//   - an export starts again from the beginning into the same export id
//     (the partial files are removed first), at the recorded ExportTime
//     if the table's change log still covers it, else at the resume time,
//     which then becomes its ExportTime;
//   - an import goes on after the items its record counts as processed
//     (the record is saved after every chunk written, so at most one
//     chunk is written again, and writing an item twice leaves it as it
//     was).
//
// A job started by a credential narrowed by a policy, or without a scope
// file (started by an older version), is marked FAILED as before.

// jobScope is what a job was started with.
type jobScope struct {
	KeyID    string `json:"key_id"`
	Role     string `json:"role"`
	Action   string `json:"action"`
	Narrowed bool   `json:"narrowed,omitempty"`
}

func scopeFile(recordPath string) string { return strings.TrimSuffix(recordPath, ".json") + ".scope" }

// saveScope writes the scope file of the job whose record is at path.
func (j *jobs) saveScope(path string, sc tenancy.Scope) error {
	return j.save(scopeFile(path), jobScope{KeyID: sc.KeyID(), Role: sc.Role().String(), Action: sc.Action(), Narrowed: sc.Narrowed()})
}

// resumedScope returns the Scope to resume the job whose record is at
// path with; ok is false if it cannot be resumed.
func (j *jobs) resumedScope(path string) (sc tenancy.Scope, ok bool) {
	rel, err := filepath.Rel(j.root, path)
	if err != nil {
		return sc, false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 5 || parts[2] != metaDir {
		return sc, false
	}
	t, err := tenancy.ParseTenantID(parts[0])
	if err != nil {
		return sc, false
	}
	var js jobScope
	if ok, err := j.load(scopeFile(path), &js); err != nil || !ok || js.Narrowed {
		return sc, false
	}
	role, known := tenancy.ParseRole(js.Role)
	if !known {
		return sc, false
	}
	sc = tenancy.ResumedScope(t, parts[1], role, js.KeyID, js.Action)
	return sc, sc.Valid()
}

// resumeInterrupted resumes the jobs a restart interrupted, and marks
// those it cannot resume FAILED.
func (j *jobs) resumeInterrupted() error {
	files, err := filepath.Glob(filepath.Join(j.root, "*", "*", metaDir, "*", "*.json"))
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	s := j.s
	resumed := map[string]bool{}
	for _, f := range files {
		sc, ok := j.resumedScope(f)
		if !ok {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		switch filepath.Base(filepath.Dir(f)) {
		case exportsDir:
			var d wire.ExportDescription
			if json.Unmarshal(b, &d) != nil || d.ExportStatus != "IN_PROGRESS" {
				continue
			}
			if err := s.resumeExport(sc, f, &d); err != nil {
				s.log.Warn("transfer: an interrupted export cannot be resumed", "export", d.ExportArn, "err", err)
				continue
			}
			resumed[f] = true
		case importsDir:
			var d wire.ImportTableDescription
			if json.Unmarshal(b, &d) != nil || d.ImportStatus != "IN_PROGRESS" || d.S3BucketSource == nil || d.TableCreationParameters == nil {
				continue
			}
			if s.resumeImport(sc, f, &d) {
				resumed[f] = true
			}
		}
	}
	// What is left IN_PROGRESS could not be resumed.
	return j.failInterrupted(resumed)
}

func (s *Service) resumeExport(sc tenancy.Scope, path string, d *wire.ExportDescription) error {
	j := s.jobs
	name, ok := tableOfARN(d.TableArn)
	id, idOK := idOf(d.ExportArn, "/export/")
	if !ok || !idOK || checkBucket(d.S3Bucket) != nil || dynexport.CheckPrefix(d.S3Prefix) != nil {
		return fmt.Errorf("transfer: malformed export record")
	}
	bucketDir := filepath.Join(j.tenantDir(sc), d.S3Bucket)
	if err := os.RemoveAll(filepath.Join(bucketDir, filepath.FromSlash(d.S3Prefix), dynexport.ExportsDir, id)); err != nil {
		return fmt.Errorf("transfer: removing a partial export: %w", err)
	}
	at := time.UnixMilli(int64(d.ExportTime * 1000))
	var atp *time.Time
	if s.checkHistory(j.ctx, sc, name, at) == nil {
		atp = &at
	} else {
		// NB: the log no longer covers the original time: the export is
		// of the state when it resumed, and says so.
		d.ExportTime = epoch(s.o.Now())
	}
	if err := j.save(path, d); err != nil {
		return err
	}
	s.record(j.ctx, sc, audit.Event{Action: "export.resume", Target: d.ExportArn})
	ctx, release, err := j.hold(sc.Tenant())
	if err != nil {
		return err
	}
	j.run(ctx, release, func(ctx context.Context) { s.runExport(ctx, sc, path, d, name, bucketDir, id, atp) })
	return nil
}

func (s *Service) resumeImport(sc tenancy.Scope, path string, d *wire.ImportTableDescription) bool {
	j := s.jobs
	src := d.S3BucketSource
	if checkBucket(src.S3Bucket) != nil || dynexport.CheckPrefix(src.S3KeyPrefix) != nil {
		return false
	}
	dir := filepath.Join(j.tenantDir(sc), src.S3Bucket, filepath.FromSlash(src.S3KeyPrefix))
	ctx, release, err := j.hold(sc.Tenant())
	if err != nil {
		return false
	}
	s.record(j.ctx, sc, audit.Event{Action: "import.resume", Target: fmt.Sprintf("%s processed=%d", d.ImportArn, d.ProcessedItemCount)})
	j.run(ctx, release, func(ctx context.Context) { s.runImport(ctx, sc, path, d, dir, d.ProcessedItemCount) })
	return true
}
