package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The DynamoDB API's exports and imports live under the export root:
//
//	<root>/<tenant>/<env>/<bucket>/<prefix>/AWSDynamoDB/<id>/...   the files
//	<root>/<tenant>/<env>/.tenantdb/exports/<id>.json                ExportDescription
//	<root>/<tenant>/<env>/.tenantdb/imports/<id>.json                ImportTableDescription
//
// NB: every path is derived from the Scope's tenant and environment, and a
// bucket name is an S3 bucket name (which cannot start with '.', contain
// '/' or be ".."), so a caller reaches only its own tree: another tenant's
// bucket of the same name is another directory, and its exports and
// imports are not found.
type jobs struct {
	s    *Service
	root string

	rec    records
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Per tenant (tenants.go): the cancel functions of its holds (requests
	// writing records, running jobs) and whether it is retired.
	tmu     sync.Mutex
	tcond   *sync.Cond // on tmu: a hold was released
	seq     uint64
	holds   map[tenancy.TenantID]map[uint64]context.CancelFunc
	retired map[tenancy.TenantID]bool
	rmu     sync.Mutex // serializes removals of deleted tenants' trees
}

const (
	metaDir    = ".tenantdb"
	exportsDir = "exports"
	importsDir = "imports"
)

func openJobs(s *Service, root string, rec records) (*jobs, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("transfer: export root: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("transfer: export root: %w", err)
	}
	if rec == nil {
		rec = &fileRecords{root: abs}
	}
	j := &jobs{s: s, root: abs, rec: rec, holds: map[tenancy.TenantID]map[uint64]context.CancelFunc{}, retired: map[tenancy.TenantID]bool{}}
	j.tcond = sync.NewCond(&j.tmu)
	j.ctx, j.cancel = context.WithCancel(context.Background())
	if err := j.emptyTrash(); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *jobs) close() {
	j.cancel()
	j.wg.Wait()
}

// tenantDir is the root of scope sc's tree.
func (j *jobs) tenantDir(sc tenancy.Scope) string {
	return filepath.Join(j.root, sc.Tenant().String(), sc.Env())
}

// bucketDir validates bucket as an S3 bucket name and returns its
// directory in sc's tree.
func (j *jobs) bucketDir(sc tenancy.Scope, member, bucket string) (string, error) {
	if err := checkBucket(bucket); err != nil {
		return "", apierr.Validationf("%s: %s", member, err.Error())
	}
	return filepath.Join(j.tenantDir(sc), bucket), nil
}

// checkBucket applies S3's bucket naming rules: 3 to 63 lower-case
// letters, digits, '.' and '-', starting and ending with a letter or
// digit, no "..".
func checkBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must be 3 to 63 characters", apierr.Clip(b))
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return fmt.Errorf("bucket name %q may hold only lower-case letters, digits, '.' and '-'", apierr.Clip(b))
		}
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !alnum(b[0]) || !alnum(b[len(b)-1]) || strings.Contains(b, "..") {
		return fmt.Errorf("bucket name %q must start and end with a letter or digit and hold no \"..\"", apierr.Clip(b))
	}
	return nil
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func writeRecord(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	return nil
}

// create writes the record of a new job of sc, with sc's key and role
// (resume.go), and returns the hold of its runner.
func (j *jobs) create(ctx context.Context, sc tenancy.Scope, kind, id string, v any) (jobHold, error) {
	return j.rec.create(ctx, refOf(sc, kind, id), jobScopeOf(sc), v)
}

func (j *jobs) load(ctx context.Context, sc tenancy.Scope, kind, id string, v any) (bool, error) {
	return j.rec.load(ctx, refOf(sc, kind, id), v)
}

func (j *jobs) ids(ctx context.Context, sc tenancy.Scope, kind string) ([]string, error) {
	return j.rec.ids(ctx, sc.Tenant(), sc.Env(), kind)
}

func (s *Service) api(ctx context.Context, sc tenancy.Scope) (*jobs, error) {
	if s.jobs == nil {
		return nil, apierr.New(apierr.Validation, "exports and imports are not available: this server has no export root (start it with --export-root DIR or TENANTDB_EXPORT_ROOT)")
	}
	if err := dataScope(sc); err != nil {
		return nil, err
	}
	return s.jobs, ctx.Err()
}

// ExportTableToPointInTime starts an export of a table into an S3 bucket
// of the caller's tree, as DynamoDB does: it answers IN_PROGRESS and
// writes in the background. Errors: TableNotFoundException,
// ValidationException (bucket, prefix, unsupported format, type or
// encryption), InvalidExportTimeException (a past time).
func (s *Service) ExportTableToPointInTime(ctx context.Context, sc tenancy.Scope, in *wire.ExportTableToPointInTimeInput) (*wire.ExportTableToPointInTimeOutput, error) {
	j, err := s.api(ctx, sc)
	if err != nil {
		return nil, err
	}
	switch {
	case in.ExportFormat != "" && in.ExportFormat != dynexport.FormatDynamoDBJSON:
		return nil, apierr.Validationf("ExportFormat %s is not supported; use %s", apierr.Clip(in.ExportFormat), dynexport.FormatDynamoDBJSON)
	case in.ExportType != "" && in.ExportType != "FULL_EXPORT":
		return nil, apierr.Validationf("ExportType %s is not supported; use FULL_EXPORT", apierr.Clip(in.ExportType))
	case in.S3SseAlgorithm != "" || in.S3SseKmsKeyId != "":
		return nil, apierr.Validationf("S3SseAlgorithm and S3SseKmsKeyId are not supported: the export root is a local directory")
	case in.S3BucketOwner != "":
		return nil, apierr.Validationf("S3BucketOwner is not supported: buckets are directories of the calling tenant")
	case len(in.IncrementalExportSpecification) > 0 && string(in.IncrementalExportSpecification) != "null":
		return nil, apierr.Validationf("IncrementalExportSpecification is not supported; use a FULL_EXPORT")
	}
	if err := dynexport.CheckPrefix(in.S3Prefix); err != nil {
		return nil, apierr.Validationf("S3Prefix %q is not a relative path without empty, '.' or '..' segments", apierr.Clip(in.S3Prefix))
	}
	bucketDir, err := j.bucketDir(sc, "S3Bucket", in.S3Bucket)
	if err != nil {
		return nil, err
	}
	hctx, release, err := j.hold(sc.Tenant())
	if err != nil {
		return nil, err
	}
	defer func() {
		if release != nil {
			release() // NB: not handed to a job
		}
	}()
	now := s.o.Now()
	var at *time.Time
	if in.ExportTime != nil {
		t := time.UnixMilli(int64(*in.ExportTime * 1000))
		if t.After(now.Add(time.Second)) {
			return nil, apierr.New(apierr.InvalidExportTime, "ExportTime %s is in the future", t.UTC().Format(time.RFC3339))
		}
		if t.Before(now) {
			at = &t
		}
	}
	name, ok := tableOfARN(in.TableArn)
	if !ok {
		return nil, apierr.Validationf("TableArn %q is not a table ARN", apierr.Clip(in.TableArn))
	}
	_, td, err := s.describe(ctx, sc, name)
	if apierr.Is(err, apierr.ResourceNotFound) || (err == nil && td.TableArn != in.TableArn) {
		return nil, apierr.New(apierr.TableNotFound, "Table not found: %s", apierr.Clip(in.TableArn))
	}
	if err != nil {
		return nil, err
	}
	if in.ClientToken != "" {
		if d, err := j.byClientToken(ctx, sc, in.ClientToken); err != nil || d != nil {
			if d == nil {
				return nil, err
			}
			return &wire.ExportTableToPointInTimeOutput{ExportDescription: d}, nil
		}
	}
	id := dynexport.NewExportID(now)
	exportTime := now
	if at != nil {
		// NB: checked now, so that a time the history does not cover is
		// the request's error, as in DynamoDB, not a failed export.
		if err := s.checkHistory(ctx, sc, name, *at); err != nil {
			return nil, err
		}
		exportTime = *at
	}
	d := &wire.ExportDescription{
		ExportArn: td.TableArn + "/export/" + id, ExportStatus: "IN_PROGRESS", StartTime: epoch(now),
		TableArn: td.TableArn, TableId: td.TableId, ExportTime: epoch(exportTime), ClientToken: in.ClientToken,
		S3Bucket: in.S3Bucket, S3Prefix: in.S3Prefix, ExportFormat: dynexport.FormatDynamoDBJSON, ExportType: "FULL_EXPORT",
	}
	h, err := j.create(hctx, sc, exportsDir, id, d)
	if err != nil {
		return nil, err
	}
	s.record(ctx, sc, audit.Event{Action: "export.start", Target: apierr.Clip(d.ExportArn + " bucket=" + in.S3Bucket + " prefix=" + in.S3Prefix)})
	out := *d
	j.run(hctx, release, h, func(ctx context.Context) { s.runExport(ctx, sc, h, d, name, bucketDir, id, at) })
	release = nil
	return &wire.ExportTableToPointInTimeOutput{ExportDescription: &out}, nil
}

func (s *Service) runExport(ctx context.Context, sc tenancy.Scope, h jobHold, d *wire.ExportDescription, table, bucketDir, id string, at *time.Time) {
	var summary dynexport.Summary
	var w *dynexport.Writer
	ends, err := s.Export(ctx, sc, []string{table}, at, func(ts TableStart) (TableSink, error) {
		var err error
		w, err = dynexport.Create(bucketDir, dynexport.WriterOptions{ExportID: id, ExportArn: d.ExportArn, TableArn: ts.TableArn,
			TableID: ts.TableID, Bucket: d.S3Bucket, Prefix: d.S3Prefix, Start: s.o.Now(), ExportTime: ts.ExportTime, Definition: ts.Definition})
		if err != nil {
			return nil, err
		}
		return &fileSink{w: w, now: s.o.Now, summary: &summary}, nil
	})
	if err != nil && ctx.Err() != nil {
		// NB: stopped by the server's shutdown: the record stays
		// IN_PROGRESS and the export starts again at the next start.
		if w != nil {
			w.Abort()
		}
		h.stop()
		return
	}
	d.EndTime = epoch(s.o.Now())
	if err != nil {
		if w != nil {
			w.Abort()
		}
		d.ExportStatus, d.FailureCode, d.FailureMessage = "FAILED", apierr.KindOf(err).String(), apierr.Message(err)
	} else {
		d.ExportStatus = "COMPLETED"
		d.ItemCount, d.BilledSizeBytes = summary.ItemCount, summary.BilledSizeBytes
		d.ExportManifest = strings.TrimSuffix(summary.ManifestFilesS3Key, dynexport.FilesFile) + dynexport.SummaryFile
	}
	if err := h.end(d); err != nil {
		s.log.Error("saving an export's record failed", "export", d.ExportArn, "err", err)
	}
	s.record(context.Background(), sc, audit.Event{Action: "export.end", Target: apierr.Clip(d.ExportArn + " " + summarize(ends, []string{table})),
		Outcome: outcomeOf(err), Reason: reason(err)})
}

func outcomeOf(err error) string {
	if err != nil {
		return audit.OutcomeError
	}
	return audit.OutcomeOK
}

// fileSink writes a table's items with a dynexport.Writer.
type fileSink struct {
	w       *dynexport.Writer
	now     func() time.Time
	summary *dynexport.Summary
}

func (f *fileSink) Add(item []byte, size int64) error { return f.w.Add(item, size) }

func (f *fileSink) Close() error {
	s, err := f.w.Close(f.now())
	*f.summary = s
	return err
}

func (j *jobs) byClientToken(ctx context.Context, sc tenancy.Scope, token string) (*wire.ExportDescription, error) {
	ids, err := j.ids(ctx, sc, exportsDir)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		var d wire.ExportDescription
		if ok, err := j.load(ctx, sc, exportsDir, id, &d); err != nil {
			return nil, err
		} else if ok && d.ClientToken == token {
			return &d, nil
		}
	}
	return nil, nil
}

func (j *jobs) importByClientToken(ctx context.Context, sc tenancy.Scope, token string) (*wire.ImportTableDescription, error) {
	ids, err := j.ids(ctx, sc, importsDir)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		var d wire.ImportTableDescription
		if ok, err := j.load(ctx, sc, importsDir, id, &d); err != nil {
			return nil, err
		} else if ok && d.ClientToken == token {
			return &d, nil
		}
	}
	return nil, nil
}

// tableOfARN returns the table name of a table ARN.
func tableOfARN(arn string) (string, bool) {
	_, name, ok := strings.Cut(arn, ":table/")
	if !ok || name == "" || strings.Contains(name, "/") || !strings.HasPrefix(arn, "arn:") {
		return "", false
	}
	return name, true
}

// idOf returns the id after sep ("/export/", "/import/") in an ARN.
func idOf(arn, sep string) (string, bool) {
	i := strings.LastIndex(arn, sep)
	if i < 0 {
		return "", false
	}
	id := arn[i+len(sep):]
	return id, dynexport.ValidExportID(id)
}

// DescribeExport describes an export the caller's tenant (and
// environment) made. Errors: ExportNotFoundException for any other ARN.
func (s *Service) DescribeExport(ctx context.Context, sc tenancy.Scope, in *wire.DescribeExportInput) (*wire.DescribeExportOutput, error) {
	j, err := s.api(ctx, sc)
	if err != nil {
		return nil, err
	}
	id, ok := idOf(in.ExportArn, "/export/")
	var d wire.ExportDescription
	if ok {
		ok, err = j.load(ctx, sc, exportsDir, id, &d)
		if err != nil {
			return nil, err
		}
	}
	if !ok || d.ExportArn != in.ExportArn {
		return nil, apierr.New(apierr.ExportNotFound, "Export not found: %s", apierr.Clip(in.ExportArn))
	}
	return &wire.DescribeExportOutput{ExportDescription: &d}, nil
}

// ListExports lists the caller's exports (of TableArn, if given), oldest
// first, MaxResults (at most 25) a page.
func (s *Service) ListExports(ctx context.Context, sc tenancy.Scope, in *wire.ListExportsInput) (*wire.ListExportsOutput, error) {
	j, err := s.api(ctx, sc)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize("MaxResults", in.MaxResults, 25)
	if err != nil {
		return nil, err
	}
	ids, err := j.ids(ctx, sc, exportsDir)
	if err != nil {
		return nil, err
	}
	out := &wire.ListExportsOutput{ExportSummaries: []wire.ExportSummary{}}
	for _, id := range ids {
		if in.NextToken != "" && id <= in.NextToken {
			continue
		}
		var d wire.ExportDescription
		if ok, err := j.load(ctx, sc, exportsDir, id, &d); err != nil {
			return nil, err
		} else if !ok || (in.TableArn != "" && d.TableArn != in.TableArn) {
			continue
		}
		if len(out.ExportSummaries) == limit {
			out.NextToken = out.ExportSummaries[limit-1].ExportArn[strings.LastIndex(out.ExportSummaries[limit-1].ExportArn, "/")+1:]
			break
		}
		out.ExportSummaries = append(out.ExportSummaries, wire.ExportSummary{ExportArn: d.ExportArn, ExportStatus: d.ExportStatus, ExportType: d.ExportType})
	}
	return out, nil
}

func pageSize(member string, v *int64, max int) (int, error) {
	if v == nil {
		return max, nil
	}
	if *v < 1 || *v > int64(max) {
		return 0, apierr.Validationf("1 validation error detected: Value '%d' at '%s' failed to satisfy constraint: Member must have value between 1 and %d", *v, member, max)
	}
	return int(*v), nil
}

// ImportTable creates a table from TableCreationParameters and loads into
// it the DynamoDB JSON data files (*.json.gz) under S3KeyPrefix of an S3
// bucket of the caller's tree, as DynamoDB does: it answers IN_PROGRESS
// and loads in the background, through BatchWriteItem with the caller's
// scope. Errors: ResourceInUseException (the table exists),
// ValidationException (bucket, prefix, unsupported format or
// compression, the table's parameters).
func (s *Service) ImportTable(ctx context.Context, sc tenancy.Scope, in *wire.ImportTableInput) (*wire.ImportTableOutput, error) {
	j, err := s.api(ctx, sc)
	if err != nil {
		return nil, err
	}
	src, tp := in.S3BucketSource, in.TableCreationParameters
	switch {
	case src == nil:
		return nil, apierr.Validationf("S3BucketSource is required")
	case tp == nil:
		return nil, apierr.Validationf("TableCreationParameters is required")
	case in.InputFormat != dynexport.FormatDynamoDBJSON:
		return nil, apierr.Validationf("InputFormat %q is not supported; use %s", apierr.Clip(in.InputFormat), dynexport.FormatDynamoDBJSON)
	case in.InputCompressionType != "" && in.InputCompressionType != "GZIP":
		return nil, apierr.Validationf("InputCompressionType %s is not supported; use GZIP", apierr.Clip(in.InputCompressionType))
	case len(in.InputFormatOptions) > 0 && string(in.InputFormatOptions) != "null":
		return nil, apierr.Validationf("InputFormatOptions apply to CSV only")
	case src.S3BucketOwner != "":
		return nil, apierr.Validationf("S3BucketOwner is not supported: buckets are directories of the calling tenant")
	}
	if err := dynexport.CheckPrefix(src.S3KeyPrefix); err != nil {
		return nil, apierr.Validationf("S3KeyPrefix %q is not a relative path without empty, '.' or '..' segments", apierr.Clip(src.S3KeyPrefix))
	}
	bucketDir, err := j.bucketDir(sc, "S3BucketSource.S3Bucket", src.S3Bucket)
	if err != nil {
		return nil, err
	}
	hctx, release, err := j.hold(sc.Tenant())
	if err != nil {
		return nil, err
	}
	defer func() {
		if release != nil {
			release() // NB: not handed to a job
		}
	}()
	if in.ClientToken != "" {
		// NB: a retry with the same token answers the import it started.
		if d, err := j.importByClientToken(ctx, sc, in.ClientToken); err != nil || d != nil {
			if d == nil {
				return nil, err
			}
			return &wire.ImportTableOutput{ImportTableDescription: d}, nil
		}
	}
	create := &wire.CreateTableInput{TableName: tp.TableName, AttributeDefinitions: tp.AttributeDefinitions, KeySchema: tp.KeySchema,
		BillingMode: tp.BillingMode, ProvisionedThroughput: tp.ProvisionedThroughput, SSESpecification: tp.SSESpecification,
		GlobalSecondaryIndexes: tp.GlobalSecondaryIndexes, OnDemandThroughput: tp.OnDemandThroughput}
	out, err := s.o.Handler.Handle(ctx, sc, opCreate, create)
	if err != nil {
		return nil, err
	}
	td := out.(*wire.CreateTableOutput).TableDescription
	now := s.o.Now()
	id := dynexport.NewExportID(now)
	d := &wire.ImportTableDescription{
		ImportArn: td.TableArn + "/import/" + id, ImportStatus: "IN_PROGRESS", TableArn: td.TableArn, TableId: td.TableId,
		ClientToken: in.ClientToken, S3BucketSource: src, InputFormat: in.InputFormat, InputCompressionType: "GZIP",
		TableCreationParameters: tp, StartTime: epoch(now),
	}
	h, err := j.create(hctx, sc, importsDir, id, d)
	if err != nil {
		return nil, err
	}
	s.record(ctx, sc, audit.Event{Action: "import.start", Target: apierr.Clip(d.ImportArn + " bucket=" + src.S3Bucket + " prefix=" + src.S3KeyPrefix)})
	cp := *d
	j.run(hctx, release, h, func(ctx context.Context) {
		s.runImport(ctx, sc, h, d, filepath.Join(bucketDir, filepath.FromSlash(src.S3KeyPrefix)), 0)
	})
	release = nil
	return &wire.ImportTableOutput{ImportTableDescription: &cp}, nil
}

// importChunk is how many items an API import writes between saves of
// its record.
const importChunk = 500

// runImport loads the data files under dir into d's table, skipping the
// first skip items (those a run before a restart had processed).
func (s *Service) runImport(ctx context.Context, sc tenancy.Scope, h jobHold, d *wire.ImportTableDescription, dir string, skip int64) {
	table := d.TableCreationParameters.TableName
	err := s.waitActive(ctx, sc, table)
	var files []string
	if err == nil {
		files, err = dataFiles(dir)
	}
	var chunk []attr.Item
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := s.write(ctx, s.o.Handler, sc, table, chunk); err != nil {
			return err
		}
		d.ImportedItemCount += int64(len(chunk))
		chunk = chunk[:0]
		return h.save(d)
	}
	for _, f := range files {
		if err != nil {
			break
		}
		var fh *os.File
		if fh, err = os.Open(f); err != nil {
			break
		}
		_, err = dynexport.ReadData(fh, func(_ int64, raw []byte) error {
			if skip > 0 {
				skip-- // NB: processed (and counted) before the restart
				return nil
			}
			d.ProcessedItemCount++
			d.ProcessedSizeBytes += int64(len(raw))
			it, perr := attr.ParseItemJSON(raw)
			if perr != nil {
				d.ErrorCount++ // NB: as DynamoDB, a malformed item is counted and skipped
				return nil
			}
			chunk = append(chunk, it)
			if len(chunk) == importChunk {
				return flush()
			}
			return nil
		})
		fh.Close()
		if err != nil {
			err = fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
	}
	if err == nil {
		err = flush()
	}
	if err != nil && ctx.Err() != nil {
		h.stop() // stopped by the server's shutdown: resumed at the next start
		return
	}
	d.EndTime = epoch(s.o.Now())
	if err != nil {
		d.ImportStatus, d.FailureCode, d.FailureMessage = "FAILED", apierr.KindOf(err).String(), apierr.Clip(errMessage(err))
	} else {
		d.ImportStatus = "COMPLETED"
	}
	if err := h.end(d); err != nil {
		s.log.Error("saving an import's record failed", "import", d.ImportArn, "err", err)
	}
	s.record(context.Background(), sc, audit.Event{Action: "import.end", Target: apierr.Clip(fmt.Sprintf("%s imported=%d errors=%d", d.ImportArn, d.ImportedItemCount, d.ErrorCount)),
		Outcome: outcomeOf(err), Reason: reason(err)})
}

func errMessage(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// dataFiles lists the *.json.gz files under dir, sorted.
func dataFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return apierr.Validationf("the S3 key prefix holds no objects")
			}
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".json.gz") {
			out = append(out, p)
		}
		return nil
	})
	if err == nil && len(out) == 0 {
		err = apierr.Validationf("the S3 key prefix holds no .json.gz data files")
	}
	return out, err
}

// DescribeImport describes an import the caller's tenant (and
// environment) made. Errors: ImportNotFoundException for any other ARN.
func (s *Service) DescribeImport(ctx context.Context, sc tenancy.Scope, in *wire.DescribeImportInput) (*wire.DescribeImportOutput, error) {
	j, err := s.api(ctx, sc)
	if err != nil {
		return nil, err
	}
	id, ok := idOf(in.ImportArn, "/import/")
	var d wire.ImportTableDescription
	if ok {
		if ok, err = j.load(ctx, sc, importsDir, id, &d); err != nil {
			return nil, err
		}
	}
	if !ok || d.ImportArn != in.ImportArn {
		return nil, apierr.New(apierr.ImportNotFound, "Import not found: %s", apierr.Clip(in.ImportArn))
	}
	return &wire.DescribeImportOutput{ImportTableDescription: &d}, nil
}

// ListImports lists the caller's imports (into TableArn, if given),
// oldest first, PageSize (at most 25) a page.
func (s *Service) ListImports(ctx context.Context, sc tenancy.Scope, in *wire.ListImportsInput) (*wire.ListImportsOutput, error) {
	j, err := s.api(ctx, sc)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize("PageSize", in.PageSize, 25)
	if err != nil {
		return nil, err
	}
	ids, err := j.ids(ctx, sc, importsDir)
	if err != nil {
		return nil, err
	}
	out := &wire.ListImportsOutput{ImportSummaryList: []wire.ImportSummary{}}
	var last string
	for _, id := range ids {
		if in.NextToken != "" && id <= in.NextToken {
			continue
		}
		var d wire.ImportTableDescription
		if ok, err := j.load(ctx, sc, importsDir, id, &d); err != nil {
			return nil, err
		} else if !ok || (in.TableArn != "" && d.TableArn != in.TableArn) {
			continue
		}
		if len(out.ImportSummaryList) == limit {
			out.NextToken = last
			break
		}
		last = id
		out.ImportSummaryList = append(out.ImportSummaryList, wire.ImportSummary{ImportArn: d.ImportArn, ImportStatus: d.ImportStatus,
			TableArn: d.TableArn, S3BucketSource: d.S3BucketSource, InputFormat: d.InputFormat, StartTime: d.StartTime, EndTime: d.EndTime})
	}
	return out, nil
}
