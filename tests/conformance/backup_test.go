package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// scanPairs returns table's items as sorted "pk=v" strings.
func scanPairs(t *testing.T, ctx context.Context, c *dynamodb.Client, table string) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		pg, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("Scan %s: %v", table, err)
		}
		for _, it := range pg.Items {
			out = append(out, str(it["pk"])+"="+str(it["v"]))
		}
	}
	sort.Strings(out)
	return out
}

func samePairs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// TestBackupsSDK: CreateBackup, DescribeBackup, ListBackups,
// RestoreTableFromBackup and DeleteBackup with aws-sdk-go-v2 on a tenant's
// own table with a GSI, TTL and a stream.
func TestBackupsSDK(t *testing.T) {
	srv, c := start(t)
	ctx := ctxT(t)
	createTable(t, c, "bk_src", keyDef{"pk", "S"}, nil, map[string][2]*keyDef{"byG": {{"g", "S"}, nil}})
	_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("bk_src"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: aws.String("exp")}})
	ok(t, err)
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("bk_src"),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
	ok(t, err)
	var want []string
	for i := 0; i < 30; i++ {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bk_src"), Item: item("pk", S(fmt.Sprintf("k%02d", i)), "v", S(fmt.Sprint(i)), "g", S(fmt.Sprint(i%2)))})
		ok(t, err)
		want = append(want, fmt.Sprintf("k%02d=%d", i, i))
	}
	cb, err := c.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("bk_src"), BackupName: aws.String("before-migration")})
	ok(t, err)
	arn := aws.ToString(cb.BackupDetails.BackupArn)
	if cb.BackupDetails.BackupStatus != types.BackupStatusAvailable || cb.BackupDetails.BackupType != types.BackupTypeUser ||
		!strings.Contains(arn, ":table/bk_src/backup/") || cb.BackupDetails.BackupCreationDateTime == nil {
		t.Fatalf("CreateBackup: %+v", cb.BackupDetails)
	}
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bk_src"), Item: item("pk", S("after"), "v", S("x"))})
	ok(t, err)

	d, err := c.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
	ok(t, err)
	bd := d.BackupDescription
	if aws.ToInt64(bd.SourceTableDetails.ItemCount) != 30 || aws.ToString(bd.SourceTableDetails.TableName) != "bk_src" ||
		len(bd.SourceTableFeatureDetails.GlobalSecondaryIndexes) != 1 || bd.SourceTableFeatureDetails.TimeToLiveDescription == nil ||
		bd.SourceTableFeatureDetails.StreamDescription == nil || bd.SourceTableFeatureDetails.StreamDescription.StreamViewType != types.StreamViewTypeKeysOnly {
		t.Errorf("DescribeBackup: %+v %+v", bd.SourceTableDetails, bd.SourceTableFeatureDetails)
	}
	lb, err := c.ListBackups(ctx, &dynamodb.ListBackupsInput{TableName: aws.String("bk_src")})
	ok(t, err)
	if len(lb.BackupSummaries) != 1 || aws.ToString(lb.BackupSummaries[0].BackupArn) != arn || aws.ToString(lb.BackupSummaries[0].BackupName) != "before-migration" {
		t.Errorf("ListBackups: %+v", lb.BackupSummaries)
	}

	r, err := c.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("bk_restored"), BackupArn: aws.String(arn)})
	ok(t, err)
	td := r.TableDescription
	if td.RestoreSummary == nil || aws.ToString(td.RestoreSummary.SourceBackupArn) != arn || len(td.GlobalSecondaryIndexes) != 1 || td.StreamSpecification != nil || td.LatestStreamArn != nil {
		t.Errorf("RestoreTableFromBackup: %+v", td)
	}
	harness.WaitActive(t, ctx, c, "bk_restored")
	samePairs(t, "restored items", scanPairs(t, ctx, c, "bk_restored"), want...)
	q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("bk_restored"), IndexName: aws.String("byG"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: item(":g", S("1"))})
	ok(t, err)
	if len(q.Items) != 15 {
		t.Errorf("restored GSI: %d items, want 15", len(q.Items))
	}
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("bk_restored")})
	ok(t, err)
	// As DynamoDB's: stream and TTL settings are not restored (the
	// backup's SourceTableFeatureDetails above still show them).
	if ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Errorf("restored TTL: %+v", ttl.TimeToLiveDescription)
	}
	_, err = c.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("bk_restored"), BackupArn: aws.String(arn)})
	wantCode(t, err, "TableAlreadyExistsException")

	_, err = c.DeleteBackup(ctx, &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)})
	ok(t, err)
	_, err = c.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
	wantCode(t, err, "BackupNotFoundException")

	// Charged to the tenant: the backup's copy as reads, the restore's
	// load as writes.
	u, err := srv.Admin().Usage(ctx, srv.Default.TenantID, time.Time{}, time.Time{})
	ok(t, err)
	if cb, rs := u.ByOperation["CreateBackup"], u.ByOperation["RestoreTableFromBackup"]; cb.ConsumedReadUnits < 1 || rs.ConsumedWriteUnits < 30 {
		t.Errorf("usage: CreateBackup %+v, RestoreTableFromBackup %+v", cb, rs)
	}
	_, err = c.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("bk_none"), BackupName: aws.String("x1x")})
	wantCode(t, err, "TableNotFoundException")
}

// waitNextSecond sleeps into the next whole second plus a margin, so
// that what happened before and after lie in different seconds.
func waitNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 100*time.Millisecond).Sub(now))
}

// TestPointInTimeSDK: point-in-time recovery on, writes at T1, updates and
// deletes at T2; RestoreTableToPointInTime to T1 gives exactly T1's items;
// on a shared table each tenant restores its own view and nothing of the
// other's.
func TestPointInTimeSDK(t *testing.T) {
	srv := harness.Start(t)
	ctx := ctxT(t)
	op := srv.Client(srv.Operator)
	createTable(t, op, "pitr_shared", keyDef{"pk", "S"}, nil, nil)
	ca, cb := srv.Client(srv.NewTenant(t, "pitr-a", "admin")), srv.Client(srv.NewTenant(t, "pitr-b", "admin"))
	for _, c := range []*dynamodb.Client{ca, cb} {
		d, err := c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("pitr_shared")})
		ok(t, err)
		if d.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled {
			t.Fatalf("PITR before enabling: %+v", d.ContinuousBackupsDescription.PointInTimeRecoveryDescription)
		}
		u, err := c.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("pitr_shared"),
			PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true), RecoveryPeriodInDays: aws.Int32(3)}})
		ok(t, err)
		p := u.ContinuousBackupsDescription.PointInTimeRecoveryDescription
		if p.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled || aws.ToInt32(p.RecoveryPeriodInDays) != 3 {
			t.Fatalf("UpdateContinuousBackups: %+v", p)
		}
	}
	waitNextSecond()
	waitNextSecond()
	put := func(c *dynamodb.Client, pk, v string) {
		t.Helper()
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("pitr_shared"), Item: item("pk", S(pk), "v", S(v))})
		ok(t, err)
	}
	del := func(c *dynamodb.Client, pk string) {
		t.Helper()
		_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("pitr_shared"), Key: item("pk", S(pk))})
		ok(t, err)
	}
	put(ca, "x", "a1")
	put(ca, "y", "a1")
	put(cb, "x", "b1")
	waitNextSecond()
	t1 := time.Now().Truncate(time.Second)
	waitNextSecond()
	put(ca, "x", "a2")
	del(ca, "y")
	put(ca, "z", "a2")
	put(cb, "x", "b2")
	put(cb, "w", "b2")
	waitNextSecond()

	d, err := ca.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("pitr_shared")})
	ok(t, err)
	p := d.ContinuousBackupsDescription.PointInTimeRecoveryDescription
	if p.EarliestRestorableDateTime == nil || p.EarliestRestorableDateTime.After(t1) || p.LatestRestorableDateTime.Before(t1) {
		t.Fatalf("window %v..%v does not hold T1 %v", p.EarliestRestorableDateTime, p.LatestRestorableDateTime, t1)
	}
	r, err := ca.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("pitr_shared"),
		TargetTableName: aws.String("pitr_a_t1"), RestoreDateTime: aws.Time(t1)})
	ok(t, err)
	if r.TableDescription.RestoreSummary == nil || !r.TableDescription.RestoreSummary.RestoreDateTime.Equal(t1) {
		t.Errorf("RestoreSummary: %+v", r.TableDescription.RestoreSummary)
	}
	harness.WaitActive(t, ctx, ca, "pitr_a_t1")
	samePairs(t, "A at T1", scanPairs(t, ctx, ca, "pitr_a_t1"), "x=a1", "y=a1")
	_, err = cb.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("pitr_shared"),
		TargetTableName: aws.String("pitr_b_t1"), RestoreDateTime: aws.Time(t1)})
	ok(t, err)
	samePairs(t, "B at T1", scanPairs(t, ctx, cb, "pitr_b_t1"), "x=b1")
	_, err = cb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("pitr_a_t1")})
	wantCode(t, err, "ResourceNotFoundException")
	_, err = ca.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("pitr_shared"),
		TargetTableName: aws.String("pitr_a_now"), UseLatestRestorableTime: aws.Bool(true)})
	ok(t, err)
	samePairs(t, "A latest", scanPairs(t, ctx, ca, "pitr_a_now"), "x=a2", "z=a2")
	_, err = ca.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("pitr_shared"),
		TargetTableName: aws.String("pitr_a_old"), RestoreDateTime: aws.Time(t1.Add(-time.Hour))})
	wantCode(t, err, "InvalidRestoreTimeException")
	_, err = ca.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("pitr_a_t1"),
		TargetTableName: aws.String("pitr_a_x"), UseLatestRestorableTime: aws.Bool(true)})
	wantCode(t, err, "PointInTimeRecoveryUnavailableException")
}

// TestBackupsAWSCLI: the same with the AWS CLI, unchanged.
func TestBackupsAWSCLI(t *testing.T) {
	needAWSCLI(t)
	srv := harness.Start(t)
	c := srv.Default
	awsCLI(t, srv, c, "create-table", "--table-name", "cli_bk", "--attribute-definitions", "AttributeName=pk,AttributeType=S",
		"--key-schema", "AttributeName=pk,KeyType=HASH", "--billing-mode", "PAY_PER_REQUEST")
	out := awsCLI(t, srv, c, "update-continuous-backups", "--table-name", "cli_bk",
		"--point-in-time-recovery-specification", "PointInTimeRecoveryEnabled=true,RecoveryPeriodInDays=10")
	pitr := out["ContinuousBackupsDescription"].(map[string]any)["PointInTimeRecoveryDescription"].(map[string]any)
	if pitr["PointInTimeRecoveryStatus"] != "ENABLED" || pitr["RecoveryPeriodInDays"] != float64(10) {
		t.Fatalf("update-continuous-backups: %v", out)
	}
	waitNextSecond()
	waitNextSecond()
	awsCLI(t, srv, c, "put-item", "--table-name", "cli_bk", "--item", `{"pk":{"S":"a"},"v":{"S":"1"}}`)
	waitNextSecond()
	t1 := time.Now().Truncate(time.Second)
	waitNextSecond()
	awsCLI(t, srv, c, "put-item", "--table-name", "cli_bk", "--item", `{"pk":{"S":"a"},"v":{"S":"2"}}`)
	awsCLI(t, srv, c, "put-item", "--table-name", "cli_bk", "--item", `{"pk":{"S":"b"},"v":{"S":"2"}}`)
	out = awsCLI(t, srv, c, "describe-continuous-backups", "--table-name", "cli_bk")
	pitr = out["ContinuousBackupsDescription"].(map[string]any)["PointInTimeRecoveryDescription"].(map[string]any)
	if pitr["EarliestRestorableDateTime"] == nil || pitr["LatestRestorableDateTime"] == nil {
		t.Fatalf("describe-continuous-backups: %v", out)
	}
	awsCLI(t, srv, c, "restore-table-to-point-in-time", "--source-table-name", "cli_bk", "--target-table-name", "cli_bk_t1",
		"--restore-date-time", t1.UTC().Format(time.RFC3339))
	scan := awsCLI(t, srv, c, "scan", "--table-name", "cli_bk_t1")
	if its := items(t, scan); len(its) != 1 || attrS(its[0], "v") != "1" {
		t.Errorf("restored to T1: %v", its)
	}

	out = awsCLI(t, srv, c, "create-backup", "--table-name", "cli_bk", "--backup-name", "cli-backup")
	arn, _ := out["BackupDetails"].(map[string]any)["BackupArn"].(string)
	out = awsCLI(t, srv, c, "list-backups", "--table-name", "cli_bk")
	if sums, _ := out["BackupSummaries"].([]any); len(sums) != 1 || sums[0].(map[string]any)["BackupArn"] != arn {
		t.Errorf("list-backups: %v", out)
	}
	awsCLI(t, srv, c, "describe-backup", "--backup-arn", arn)
	awsCLI(t, srv, c, "restore-table-from-backup", "--target-table-name", "cli_bk_copy", "--backup-arn", arn)
	if its := items(t, awsCLI(t, srv, c, "scan", "--table-name", "cli_bk_copy")); len(its) != 2 {
		t.Errorf("restored from backup: %v", its)
	}
	out = awsCLI(t, srv, c, "delete-backup", "--backup-arn", arn)
	if out["BackupDescription"].(map[string]any)["BackupDetails"].(map[string]any)["BackupStatus"] != "DELETED" {
		t.Errorf("delete-backup: %v", out)
	}
}
