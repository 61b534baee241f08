package verify

// The families of the data-moving features: backups and point-in-time
// recovery, exports and imports (the DynamoDB API's operations).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
)

// unavailable returns the server's reason if err says that it does not
// serve a feature ("" otherwise): the DynamoDB API's
// UnknownOperationException, a refusal saying the feature "is not
// available" or "not supported", or the admin API's "no such admin
// endpoint". NB: only a family's own setup, which uses the feature as it
// is meant to be used, asks this.
func unavailable(err error) string {
	if err == nil {
		return ""
	}
	code, msg := errorOf(err)
	var ce *client.Error
	if errors.As(err, &ce) {
		code, msg = ce.Code, ce.Message
	}
	if code == "UnknownOperationException" || strings.Contains(msg, "not available") || strings.Contains(msg, "not supported") ||
		strings.Contains(msg, "no such admin endpoint") {
		return msg
	}
	return ""
}

// setupFail records that a family's own setup (the victim or the
// attacker using the feature as it is meant to be used) failed. A
// feature the server does not serve skips the family, with the server's
// reason; any other failure is an inconclusive attempt (it proves
// nothing, and the run fails).
func (r *run) setupFail(what string, err error) {
	if why := unavailable(err); why != "" {
		r.fam.Skipped = why
		return
	}
	r.fam.Attempts++
	r.fam.Inconclusive++
	if len(r.fam.Findings) < 50 {
		r.fam.Findings = append(r.fam.Findings, "setup: "+what+": "+err.Error())
	}
}

// otherID returns id with every hex digit replaced at random: an id of
// the same form that does not exist.
func otherID(id string) string {
	b := []byte(id)
	h := randHex(len(b))
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			b[i] = '0' + h[i]%10
		case c >= 'a' && c <= 'f':
			b[i] = h[i]
		}
	}
	return string(b)
}

// otherARN returns arn with its last path element replaced by otherID.
func otherARN(arn string) string {
	i := strings.LastIndexByte(arn, '/')
	return arn[:i+1] + otherID(arn[i+1:])
}

// countOwn counts a's items in table kind k.
func (r *run) countOwn(ctx context.Context, a *actor, k string) (int64, error) {
	var n int64
	in := &dynamodb.ScanInput{TableName: r.tbl(k), Select: types.SelectCount, ConsistentRead: aws.Bool(true)}
	for {
		out, err := a.Read.Scan(ctx, in)
		if err != nil {
			return 0, err
		}
		n += int64(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func pitrOn(ctx context.Context, c *dynamodb.Client, table *string) error {
	_, err := c.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: table,
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}})
	return err
}

// backups attacks backups and point-in-time recovery: the victim's
// backup ARNs (describe, restore, delete), listings, the victim's own
// table's continuous backups and restore to a time, and the attacker's
// backups and restores of its view of a shared table, which must hold
// its own items only.
func (r *run) backups(ctx context.Context) {
	A, B := r.A, r.B
	B.rec.take()
	for _, c := range []struct {
		a *actor
		k string
	}{{B, kBOnly}, {B, kNS}, {A, kNS}} {
		if err := pitrOn(ctx, c.a.Admin, r.tbl(c.k)); err != nil {
			r.setupFail("enabling point-in-time recovery", err)
			return
		}
	}
	victim := map[string]string{}
	for name, k := range map[string]string{"own": kBOnly, "shared": kNS} {
		out, err := B.Admin.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: r.tbl(k), BackupName: aws.String("tdbverify-" + r.id + "-" + name)})
		if err != nil {
			r.setupFail("the victim's backup", err)
			return
		}
		victim[name] = aws.ToString(out.BackupDetails.BackupArn)
	}
	B.rec.take()
	stolen := "tdbverify_" + r.id + "_stolen"
	A.rec.forbidAll(victim["own"], victim["shared"])
	for name, arn := range victim {
		never := otherARN(arn)
		r.try(ctx, A.rec, "DescribeBackup of the victim's backup ("+name+")", func(ctx context.Context) string {
			_, err := A.Admin.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
			_, nerr := A.Admin.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(never)})
			return sameError(err, nerr, arn, never)
		})
		r.try(ctx, A.rec, "RestoreTableFromBackup of the victim's backup ("+name+")", func(ctx context.Context) string {
			_, err := A.Admin.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{BackupArn: aws.String(arn), TargetTableName: aws.String(stolen)})
			_, nerr := A.Admin.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{BackupArn: aws.String(never), TargetTableName: aws.String(stolen)})
			return sameError(err, nerr, arn, never)
		})
		r.try(ctx, A.rec, "DeleteBackup of the victim's backup ("+name+")", func(ctx context.Context) string {
			_, err := A.Admin.DeleteBackup(ctx, &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)})
			return refused(err)
		})
		// The victim's ARN with the attacker's tenant-owned table's name.
		r.try(ctx, A.rec, "DescribeBackup of the victim's backup id under the attacker's table ("+name+")", func(ctx context.Context) string {
			i := strings.LastIndex(arn, "/backup/")
			forged := r.arn + r.tables[kOwn] + arn[i:]
			_, err := A.Admin.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(forged)})
			return refused(err)
		})
	}
	for _, tbl := range []*string{nil, r.tbl(kNS), r.tbl(kBOnly)} {
		r.try(ctx, A.rec, "ListBackups "+aws.ToString(tbl), func(ctx context.Context) string {
			out, err := A.Admin.ListBackups(ctx, &dynamodb.ListBackupsInput{TableName: tbl, BackupType: types.BackupTypeFilterAll})
			if err != nil {
				return ""
			}
			for _, b := range out.BackupSummaries {
				if a := aws.ToString(b.BackupArn); a == victim["own"] || a == victim["shared"] {
					return "lists the victim's backup"
				}
			}
			return ""
		})
	}
	never := "tdbverify_" + r.id + "_never"
	r.try(ctx, A.rec, "DescribeContinuousBackups of the victim's own table", func(ctx context.Context) string {
		_, err := A.Admin.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: r.tbl(kBOnly)})
		_, nerr := A.Admin.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(never)})
		return sameError(err, nerr, r.tables[kBOnly], never)
	})
	r.try(ctx, A.rec, "UpdateContinuousBackups of the victim's own table", func(ctx context.Context) string {
		return refused(pitrOn(ctx, A.Admin, r.tbl(kBOnly)))
	})
	r.try(ctx, A.rec, "RestoreTableToPointInTime of the victim's own table", func(ctx context.Context) string {
		_, err := A.Admin.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: r.tbl(kBOnly),
			TargetTableName: aws.String(stolen), UseLatestRestorableTime: aws.Bool(true)})
		_, nerr := A.Admin.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String(never),
			TargetTableName: aws.String(stolen), UseLatestRestorableTime: aws.Bool(true)})
		return sameError(err, nerr, r.tables[kBOnly], never)
	})

	// The attacker's backup of its view of the shared table: its own
	// items, counted and restored.
	want, err := r.countOwn(ctx, A, kNS)
	if err != nil {
		r.setupFail("counting the attacker's items", err)
		return
	}
	restored := "tdbverify_" + r.id + "_restored"
	r.try(ctx, A.rec, "CreateBackup of the attacker's view of a shared table, and its restore", func(ctx context.Context) string {
		out, err := A.Admin.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: r.tbl(kNS), BackupName: aws.String("tdbverify-" + r.id + "-a")})
		if err != nil {
			return ""
		}
		d, err := A.Admin.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: out.BackupDetails.BackupArn})
		if err == nil && d.BackupDescription.SourceTableDetails != nil {
			if n := aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount); n != want {
				return fmt.Sprintf("the attacker's backup of a shared table counts %d items; the attacker has %d", n, want)
			}
		}
		if _, err := A.Admin.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{BackupArn: out.BackupDetails.BackupArn, TargetTableName: aws.String(restored)}); err != nil {
			return ""
		}
		return r.scanRestored(ctx, A, restored, want)
	})
	// Restore to a time: wait until the window has begun.
	r.try(ctx, A.rec, "RestoreTableToPointInTime of the attacker's view of a shared table", func(ctx context.Context) string {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := A.Admin.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: r.tbl(kNS),
				TargetTableName: aws.String(restored + "_pitr"), UseLatestRestorableTime: aws.Bool(true)})
			if err == nil {
				break
			}
			if !isCode(err, "PointInTimeRecoveryUnavailableException") && !isCode(err, "InvalidRestoreTimeException") || time.Now().After(deadline) {
				return ""
			}
			select {
			case <-ctx.Done():
				return ""
			case <-time.After(200 * time.Millisecond):
			}
		}
		return r.scanRestored(ctx, A, restored+"_pitr", want)
	})
}

// scanRestored waits for a's restored table to be ACTIVE and reads it:
// it must hold exactly want items, all a's (the recorder judges the
// rest).
func (r *run) scanRestored(ctx context.Context, a *actor, table string, want int64) string {
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := a.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return ""
		}
		if d.Table.TableStatus == types.TableStatusActive {
			break
		}
		if time.Now().After(deadline) {
			return ""
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(50 * time.Millisecond):
		}
	}
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := a.Read.Scan(ctx, in)
		if err != nil {
			return ""
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if f := ownOnly(a, items); f != "" {
		return "the restored table " + f
	}
	if int64(len(items)) != want {
		return fmt.Sprintf("the restored table holds %d items; the attacker has %d", len(items), want)
	}
	return ""
}

// exports attacks ExportTableToPointInTime, DescribeExport, ListExports,
// ImportTable, DescribeImport and ListImports: the victim exports its own
// table to a bucket and imports it back; the attacker names the victim's
// export and import ARNs and tables, imports from a bucket and prefix of
// the same names as the victim's, and exports its view of a shared table,
// which must count its own items only.
func (r *run) exports(ctx context.Context) {
	A, B := r.A, r.B
	B.rec.take()
	bucket, prefix := "tdbverify-"+r.id, "victim"
	ex, err := B.Admin.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{
		TableArn: aws.String(r.arn + r.tables[kBOnly]), S3Bucket: aws.String(bucket), S3Prefix: aws.String(prefix)})
	if err != nil {
		r.setupFail("the victim's export", err)
		return
	}
	exportArn := aws.ToString(ex.ExportDescription.ExportArn)
	if _, err := r.waitExport(ctx, B, exportArn); err != nil {
		r.setupFail("the victim's export", err)
		return
	}
	imp, err := B.Admin.ImportTable(ctx, r.importInput(bucket, prefix, "tdbverify_"+r.id+"_bimport"))
	if err != nil {
		r.setupFail("the victim's import", err)
		return
	}
	importArn := aws.ToString(imp.ImportTableDescription.ImportArn)
	B.rec.take()
	A.rec.forbidAll(exportArn, importArn)

	neverExport, neverImport := otherARN(exportArn), otherARN(importArn)
	r.try(ctx, A.rec, "DescribeExport of the victim's export", func(ctx context.Context) string {
		_, err := A.Admin.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: aws.String(exportArn)})
		_, nerr := A.Admin.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: aws.String(neverExport)})
		return sameError(err, nerr, exportArn, neverExport)
	})
	r.try(ctx, A.rec, "DescribeImport of the victim's import", func(ctx context.Context) string {
		_, err := A.Admin.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(importArn)})
		_, nerr := A.Admin.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(neverImport)})
		return sameError(err, nerr, importArn, neverImport)
	})
	for _, tbl := range []string{"", r.arn + r.tables[kBOnly], r.arn + r.tables[kNS]} {
		r.try(ctx, A.rec, "ListExports "+tbl, func(ctx context.Context) string {
			in := &dynamodb.ListExportsInput{}
			if tbl != "" {
				in.TableArn = aws.String(tbl)
			}
			out, err := A.Admin.ListExports(ctx, in)
			if err == nil && len(out.ExportSummaries) > 0 {
				return fmt.Sprintf("lists %d exports; the attacker has made none", len(out.ExportSummaries))
			}
			return ""
		})
		r.try(ctx, A.rec, "ListImports "+tbl, func(ctx context.Context) string {
			in := &dynamodb.ListImportsInput{}
			if tbl != "" {
				in.TableArn = aws.String(tbl)
			}
			out, err := A.Admin.ListImports(ctx, in)
			if err == nil && len(out.ImportSummaryList) > 0 {
				return fmt.Sprintf("lists %d imports; the attacker has made none", len(out.ImportSummaryList))
			}
			return ""
		})
	}
	never := "tdbverify_" + r.id + "_never"
	r.try(ctx, A.rec, "ExportTableToPointInTime of the victim's own table", func(ctx context.Context) string {
		_, err := A.Admin.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{
			TableArn: aws.String(r.arn + r.tables[kBOnly]), S3Bucket: aws.String(bucket), S3Prefix: aws.String("stolen")})
		_, nerr := A.Admin.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{
			TableArn: aws.String(r.arn + never), S3Bucket: aws.String(bucket), S3Prefix: aws.String("stolen")})
		return sameError(err, nerr, r.tables[kBOnly], never)
	})
	r.try(ctx, A.rec, "ImportTable from the victim's bucket and prefix", func(ctx context.Context) string {
		out, err := A.Admin.ImportTable(ctx, r.importInput(bucket, prefix, "tdbverify_"+r.id+"_aimport"))
		if err != nil {
			return ""
		}
		d, err := r.waitImport(ctx, A, aws.ToString(out.ImportTableDescription.ImportArn))
		if err != nil {
			return ""
		}
		if d.ImportedItemCount > 0 || d.ImportStatus == types.ImportStatusCompleted {
			return fmt.Sprintf("imported %d items from a bucket the attacker never wrote to", d.ImportedItemCount)
		}
		return ""
	})
	// The attacker's export of its view of a shared table counts its own
	// items; importing it back yields them and nothing else.
	want, err := r.countOwn(ctx, A, kNS)
	if err != nil {
		r.setupFail("counting the attacker's items", err)
		return
	}
	r.try(ctx, A.rec, "ExportTableToPointInTime of the attacker's view of a shared table, and its import", func(ctx context.Context) string {
		out, err := A.Admin.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{
			TableArn: aws.String(r.arn + r.tables[kNS]), S3Bucket: aws.String(bucket), S3Prefix: aws.String("attacker")})
		if err != nil {
			return ""
		}
		d, err := r.waitExport(ctx, A, aws.ToString(out.ExportDescription.ExportArn))
		if err != nil {
			return ""
		}
		if n := aws.ToInt64(d.ItemCount); n != want {
			return fmt.Sprintf("the attacker's export of a shared table counts %d items; the attacker has %d", n, want)
		}
		table := "tdbverify_" + r.id + "_reimport"
		in, err := A.Admin.ImportTable(ctx, r.importInput(bucket, "attacker", table))
		if err != nil {
			return ""
		}
		if _, err := r.waitImport(ctx, A, aws.ToString(in.ImportTableDescription.ImportArn)); err != nil {
			return ""
		}
		return r.scanRestored(ctx, A, table, want)
	})
}

func (r *run) importInput(bucket, prefix, table string) *dynamodb.ImportTableInput {
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	return &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
		S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String(bucket), S3KeyPrefix: aws.String(prefix)},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s("pk"), s("sk")},
			KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}}}
}

func (r *run) waitExport(ctx context.Context, a *actor, arn string) (*types.ExportDescription, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := a.Admin.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: aws.String(arn)})
		if err != nil {
			return nil, err
		}
		switch st := d.ExportDescription.ExportStatus; {
		case st == types.ExportStatusCompleted:
			return d.ExportDescription, nil
		case st != types.ExportStatusInProgress:
			return nil, fmt.Errorf("export %s: %s %s", arn, st, aws.ToString(d.ExportDescription.FailureMessage))
		case time.Now().After(deadline):
			return nil, fmt.Errorf("export %s still in progress after a minute", arn)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *run) waitImport(ctx context.Context, a *actor, arn string) (*types.ImportTableDescription, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := a.Admin.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(arn)})
		if err != nil {
			return nil, err
		}
		if d.ImportTableDescription.ImportStatus != types.ImportStatusInProgress {
			return d.ImportTableDescription, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("import %s still in progress after a minute", arn)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
