package isolation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// Attacks on backups and point-in-time recovery: tenant B with A's backup
// ARNs (describe, delete, restore), B's listings, B restoring a shared
// table to a time (only B's view comes back), B restoring A's own table,
// and the operator. Every refusal of B's is audited in B's log.
func TestBackupIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	op := srv.Client(srv.Operator)
	a, b := srv.NewTenant(t, "backupA", "admin"), srv.NewTenant(t, "backupB", "admin")
	da, db := srv.Client(a), srv.Client(b)

	in := streamTableInput("iso_backup")
	in.StreamSpecification = nil
	if _, err := op.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	put := func(c *dynamodb.Client, table, pk, v string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*dynamodb.Client{da, db} {
		if _, err := c.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("iso_backup"),
			PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // into the recovery window
	put(da, "iso_backup", "same-key", "secret-of-A")
	put(da, "iso_backup", "only-A", "secret-of-A")
	put(db, "iso_backup", "same-key", "secret-of-B")

	// A's backup of its view of the shared table, and of a table of its own.
	sharedBackup, err := da.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("iso_backup"), BackupName: aws.String("a-shared")})
	if err != nil {
		t.Fatal(err)
	}
	own := streamTableInput("a_own")
	own.StreamSpecification = nil
	if _, err := da.CreateTable(ctx, own); err != nil {
		t.Fatal(err)
	}
	put(da, "a_own", "k", "secret-of-A")
	if _, err := da.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("a_own"),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	ownBackup, err := da.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("a_own"), BackupName: aws.String("a-own")})
	if err != nil {
		t.Fatal(err)
	}
	arns := []string{aws.ToString(sharedBackup.BackupDetails.BackupArn), aws.ToString(ownBackup.BackupDetails.BackupArn)}

	// B lists nothing of A's, by table or all.
	for _, tbl := range []*string{nil, aws.String("iso_backup"), aws.String("a_own")} {
		ls, err := db.ListBackups(ctx, &dynamodb.ListBackupsInput{TableName: tbl, BackupType: types.BackupTypeFilterAll})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls.BackupSummaries) != 0 {
			t.Errorf("B lists %d backups of A's (table %v)", len(ls.BackupSummaries), aws.ToString(tbl))
		}
	}
	// B with A's backup ARNs: not found, whatever it tries.
	for _, arn := range arns {
		if _, err := db.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)}); errCode(err) != "BackupNotFoundException" {
			t.Errorf("B DescribeBackup of A's %s: %v", arn, err)
		}
		if _, err := db.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("stolen"), BackupArn: aws.String(arn)}); errCode(err) != "BackupNotFoundException" {
			t.Errorf("B RestoreTableFromBackup of A's %s: %v", arn, err)
		}
		if _, err := db.DeleteBackup(ctx, &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)}); errCode(err) != "BackupNotFoundException" {
			t.Errorf("B DeleteBackup of A's %s: %v", arn, err)
		}
		if _, err := da.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)}); err != nil {
			t.Errorf("A's backup %s after B's attempts: %v", arn, err)
		}
	}
	// B restoring A's own table to a time: not found for B.
	if _, err := db.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("a_own"),
		TargetTableName: aws.String("stolen"), UseLatestRestorableTime: aws.Bool(true)}); errCode(err) != "TableNotFoundException" {
		t.Errorf("B RestoreTableToPointInTime of A's own table: %v", err)
	}
	// B restoring the shared table: B's view only.
	if _, err := db.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("iso_backup"),
		TargetTableName: aws.String("b_view"), UseLatestRestorableTime: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	sc, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("b_view")})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Items) != 1 || sc.Items[0]["v"].(*types.AttributeValueMemberS).Value != "secret-of-B" {
		t.Errorf("B's point-in-time restore of the shared table holds %v", sc.Items)
	}
	// B's backup of the shared table: B's items only; A cannot see it.
	bb, err := db.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("iso_backup"), BackupName: aws.String("b-shared")})
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: bb.BackupDetails.BackupArn})
	if err != nil || aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount) != 1 || aws.ToInt64(d.BackupDescription.BackupDetails.BackupSizeBytes) == 0 {
		t.Errorf("B's backup of the shared table: %+v %v", d, err)
	}
	if _, err := da.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: bb.BackupDetails.BackupArn}); errCode(err) != "BackupNotFoundException" {
		t.Errorf("A DescribeBackup of B's backup: %v", err)
	}
	// The operator has no access to backups (table data).
	if _, err := op.ListBackups(ctx, &dynamodb.ListBackupsInput{}); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator ListBackups: %v", err)
	}
	if _, err := op.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arns[0])}); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator DescribeBackup: %v", err)
	}
	if _, err := op.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("iso_backup"),
		TargetTableName: aws.String("op_view"), UseLatestRestorableTime: aws.Bool(true)}); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator RestoreTableToPointInTime: %v", err)
	}

	// B's refusals are audited in B's log: describe, restore and delete of
	// each of A's two backups.
	page, err := srv.Admin().Audit(ctx, b.TenantID, client.AuditQuery{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]int{}
	for _, r := range page.Records {
		if strings.HasPrefix(r.Outcome, "denied") {
			denied[r.Action]++
		}
	}
	for _, act := range []string{"dynamodb:DescribeBackup", "dynamodb:RestoreTableFromBackup", "dynamodb:DeleteBackup"} {
		if denied[act] < 2 {
			t.Errorf("%d %s denials audited for B, want 2 (all: %v)", denied[act], act, denied)
		}
	}
}
