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
// included) or, on a gateway fleet, after their gateway died. Beside each
// job's record its start writes the key id and role of the credential
// that started it (fileRecords: <id>.scope; kvRecords: in the record).
// The interrupted jobs (records.interrupted: on one server every job in
// progress at its start; on a fleet those whose gateway's lease lapsed,
// claimed by another) are resumed with the Scope they were started with
// (tenant and environment from the record's key):
//
//   - an export starts again from the beginning into the same export id
//     (the partial files are removed first), at the recorded ExportTime
//     if the source still reads it, else at the resume time, which then
//     becomes its ExportTime;
//   - an import goes on after the items its record counts as processed
//     (the record is saved after every chunk written, so at most one
//     chunk is written again, and writing an item twice leaves it as it
//     was).
//
// A job started by a credential narrowed by a policy, or without a
// recorded scope (started by an older version), is marked FAILED.

// jobScope is what a job was started with.
type jobScope struct {
	KeyID    string `json:"key_id"`
	Role     string `json:"role"`
	Action   string `json:"action"`
	Narrowed bool   `json:"narrowed,omitempty"`
}

func jobScopeOf(sc tenancy.Scope) jobScope {
	return jobScope{KeyID: sc.KeyID(), Role: sc.Role().String(), Action: sc.Action(), Narrowed: sc.Narrowed()}
}

func scopeFile(recordPath string) string { return strings.TrimSuffix(recordPath, ".json") + ".scope" }

// resumedScope returns the Scope to resume job ij with; ok is false if
// it cannot be resumed.
func resumedScope(ij interruptedJob) (sc tenancy.Scope, ok bool) {
	if !ij.ok || ij.js.Narrowed {
		return sc, false
	}
	role, known := tenancy.ParseRole(ij.js.Role)
	if !known {
		return sc, false
	}
	sc = tenancy.ResumedScope(ij.ref.t, ij.ref.env, role, ij.js.KeyID, ij.js.Action)
	return sc, sc.Valid()
}

// resumeInterrupted resumes the jobs the records find interrupted, and
// marks those it cannot resume FAILED.
func (j *jobs) resumeInterrupted(ctx context.Context) error {
	list, err := j.rec.interrupted(ctx)
	if err != nil {
		return err
	}
	s := j.s
	for _, ij := range list {
		sc, ok := resumedScope(ij)
		switch ij.ref.kind {
		case exportsDir:
			var d wire.ExportDescription
			if json.Unmarshal(ij.raw, &d) != nil {
				ij.hold.stop()
				continue
			}
			if ok {
				err := s.resumeExport(sc, ij.hold, &d)
				if err == nil {
					continue
				}
				s.log.Warn("transfer: an interrupted export cannot be resumed", "export", d.ExportArn, "err", err)
			}
			d.ExportStatus, d.EndTime, d.FailureCode, d.FailureMessage = "FAILED", epoch(s.o.Now()), "Interrupted", "the server running the export stopped during it; run it again"
			if err := ij.hold.end(&d); err != nil {
				s.log.Error("transfer: marking an interrupted export failed", "export", d.ExportArn, "err", err)
			}
		case importsDir:
			var d wire.ImportTableDescription
			if json.Unmarshal(ij.raw, &d) != nil {
				ij.hold.stop()
				continue
			}
			if ok && d.S3BucketSource != nil && d.TableCreationParameters != nil && s.resumeImport(sc, ij.hold, &d) {
				continue
			}
			d.ImportStatus, d.EndTime, d.FailureCode = "FAILED", epoch(s.o.Now()), "Interrupted"
			d.FailureMessage = fmt.Sprintf("the server running the import stopped during it; %d items were imported into the table before", d.ImportedItemCount)
			if err := ij.hold.end(&d); err != nil {
				s.log.Error("transfer: marking an interrupted import failed", "import", d.ImportArn, "err", err)
			}
		default:
			ij.hold.stop()
		}
	}
	return nil
}

func (s *Service) resumeExport(sc tenancy.Scope, h jobHold, d *wire.ExportDescription) error {
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
		// NB: the source no longer reads the original time: the export
		// is of the state when it resumed, and says so.
		d.ExportTime = epoch(s.o.Now())
	}
	if err := h.save(d); err != nil {
		return err
	}
	ctx, release, err := j.hold(sc.Tenant())
	if err != nil {
		return err
	}
	s.record(j.ctx, sc, audit.Event{Action: "export.resume", Target: d.ExportArn})
	j.run(ctx, release, h, func(ctx context.Context) { s.runExport(ctx, sc, h, d, name, bucketDir, id, atp) })
	return nil
}

func (s *Service) resumeImport(sc tenancy.Scope, h jobHold, d *wire.ImportTableDescription) bool {
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
	j.run(ctx, release, h, func(ctx context.Context) { s.runImport(ctx, sc, h, d, dir, d.ProcessedItemCount) })
	return true
}

// sweep looks for interrupted jobs every interval (a gateway fleet's
// records; the first look at once) until the service closes.
func (j *jobs) sweep(interval time.Duration) {
	defer j.wg.Done()
	for {
		if err := j.resumeInterrupted(j.ctx); err != nil && j.ctx.Err() == nil {
			j.s.log.Warn("transfer: looking for interrupted jobs", "err", err)
		}
		select {
		case <-j.ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
