package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/tests/harness"
)

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// scanAll returns every item of table as "pk/sk=v|g" strings, sorted.
func scanAll(t *testing.T, c *dynamodb.Client, table string) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("Scan %s: %v", table, err)
		}
		for _, it := range pg.Items {
			g := ""
			if v, ok := it["g"].(*types.AttributeValueMemberS); ok {
				g = v.Value
			}
			out = append(out, fmt.Sprintf("%s/%s=%s|%s", it["pk"].(*types.AttributeValueMemberS).Value,
				it["sk"].(*types.AttributeValueMemberN).Value, it["v"].(*types.AttributeValueMemberS).Value, g))
		}
	}
	sort.Strings(out)
	return out
}

// TestBackups: CreateBackup, DescribeBackup, ListBackups (filters and
// paging), RestoreTableFromBackup (indexes, overrides), DeleteBackup
// (in use while restoring is covered by tests/gateways), through a gateway over each engine.
func TestBackups(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { backups(t, start(t)) })
	}
}

func backups(t *testing.T, srv *harness.Server) {
	ctx := context.Background()
	a := srv.Client(srv.Default)
	createByG(t, a, "src") // pitr_test.go
	const items = 250
	for i := range items {
		g := ""
		if i%3 == 0 {
			g = fmt.Sprint("g", i%2)
		}
		putV(t, a, "src", fmt.Sprintf("p%d", i%7), i, fmt.Sprint("v", i), g)
	}
	want := scanAll(t, a, "src")
	// TTL where the engine has it (not dynalite): the restore does not
	// keep it, as DynamoDB's.
	_, ttlErr := a.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("src"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
	if ttlErr != nil && code(ttlErr) != "ValidationException" {
		t.Fatal(ttlErr)
	}
	wantTTL := types.TimeToLiveStatusDisabled

	cb, err := a.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String("first")})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(cb.BackupDetails.BackupArn)
	if cb.BackupDetails.BackupStatus != types.BackupStatusAvailable || aws.ToInt64(cb.BackupDetails.BackupSizeBytes) == 0 {
		t.Fatalf("CreateBackup: %+v", cb.BackupDetails)
	}
	// Written after the backup: not in it.
	if _, err := a.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("src"), Item: map[string]types.AttributeValue{"pk": s("late"), "sk": n("1"), "v": s("x")}}); err != nil {
		t.Fatal(err)
	}
	d, err := a.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount); got != items ||
		len(d.BackupDescription.SourceTableFeatureDetails.GlobalSecondaryIndexes) != 1 {
		t.Errorf("DescribeBackup: %d items, %+v", got, d.BackupDescription.SourceTableFeatureDetails)
	}
	second, err := a.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String("second")})
	if err != nil {
		t.Fatal(err)
	}
	// Listing: both, oldest first; paged by one; by table; by type.
	ls, err := a.ListBackups(ctx, &dynamodb.ListBackupsInput{TableName: aws.String("src")})
	if err != nil || len(ls.BackupSummaries) != 2 || aws.ToString(ls.BackupSummaries[0].BackupArn) != arn {
		t.Fatalf("ListBackups: %+v %v", ls, err)
	}
	p1, err := a.ListBackups(ctx, &dynamodb.ListBackupsInput{Limit: aws.Int32(1)})
	if err != nil || len(p1.BackupSummaries) != 1 || aws.ToString(p1.LastEvaluatedBackupArn) != arn {
		t.Fatalf("ListBackups page 1: %+v %v", p1, err)
	}
	p2, err := a.ListBackups(ctx, &dynamodb.ListBackupsInput{Limit: aws.Int32(1), ExclusiveStartBackupArn: p1.LastEvaluatedBackupArn})
	if err != nil || len(p2.BackupSummaries) != 1 || aws.ToString(p2.BackupSummaries[0].BackupArn) != aws.ToString(second.BackupDetails.BackupArn) {
		t.Fatalf("ListBackups page 2: %+v %v", p2, err)
	}
	if sys, err := a.ListBackups(ctx, &dynamodb.ListBackupsInput{BackupType: types.BackupTypeFilterSystem}); err != nil || len(sys.BackupSummaries) != 0 {
		t.Errorf("ListBackups SYSTEM: %+v %v", sys, err)
	}
	if other, err := a.ListBackups(ctx, &dynamodb.ListBackupsInput{TableName: aws.String("nope")}); err != nil || len(other.BackupSummaries) != 0 {
		t.Errorf("ListBackups of another table: %+v %v", other, err)
	}
	future := time.Now().Add(time.Hour)
	if later, err := a.ListBackups(ctx, &dynamodb.ListBackupsInput{TimeRangeLowerBound: &future}); err != nil || len(later.BackupSummaries) != 0 {
		t.Errorf("ListBackups after an hour from now: %+v %v", later, err)
	}

	// Restore, with the index; and once more without it (an override).
	r, err := a.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("restored"), BackupArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if td := r.TableDescription; td.TableStatus != types.TableStatusActive || td.RestoreSummary == nil || aws.ToString(td.RestoreSummary.SourceBackupArn) != arn || len(td.GlobalSecondaryIndexes) != 1 {
		t.Errorf("RestoreTableFromBackup: %+v", td)
	}
	if got := scanAll(t, a, "restored"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restored items differ: %d, want %d", len(got), len(want))
	}
	q, err := a.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("restored"), IndexName: aws.String("byG"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("g1")}})
	inG1 := 0
	for i := range items {
		if i%3 == 0 && i%2 == 1 {
			inG1++
		}
	}
	if err != nil || len(q.Items) != inG1 {
		t.Errorf("restored index: %d items, %v; want %d", len(q.Items), err, inG1)
	}
	ttl, err := a.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("restored")})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != wantTTL {
		t.Errorf("restored TTL: %+v %v, want %s", ttl, err, wantTTL)
	}
	if _, err := a.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("restored"), BackupArn: aws.String(arn)}); code(err) != "TableAlreadyExistsException" {
		t.Errorf("restore onto an existing table: %v", err)
	}
	r2, err := a.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("noindex"), BackupArn: aws.String(arn),
		GlobalSecondaryIndexOverride: []types.GlobalSecondaryIndex{}, BillingModeOverride: types.BillingModeProvisioned,
		ProvisionedThroughputOverride: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(3), WriteCapacityUnits: aws.Int64(4)}})
	if err != nil {
		t.Fatal(err)
	}
	if td := r2.TableDescription; len(td.GlobalSecondaryIndexes) != 0 || aws.ToInt64(td.ProvisionedThroughput.WriteCapacityUnits) != 4 {
		t.Errorf("restore with overrides: %+v", td)
	}
	if got := scanAll(t, a, "noindex"); len(got) != len(want) {
		t.Errorf("restored without index: %d items, want %d", len(got), len(want))
	}

	// Delete: gone for good.
	if _, err := a.DeleteBackup(ctx, &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)}); code(err) != "BackupNotFoundException" {
		t.Errorf("DescribeBackup after DeleteBackup: %v", err)
	}
	if _, err := a.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("again"), BackupArn: aws.String(arn)}); code(err) != "BackupNotFoundException" {
		t.Errorf("restore of a deleted backup: %v", err)
	}
	if _, err := a.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("none"), BackupName: aws.String("x1x")}); code(err) != "TableNotFoundException" {
		t.Errorf("backup of a missing table: %v", err)
	}
	if _, err := a.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String("bad name")}); code(err) != "ValidationException" {
		t.Errorf("backup with a bad name: %v", err)
	}

	// Charged to the tenant: the copies' engine units (usage is flushed
	// to the engine every second).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		u, err := srv.Admin().Usage(ctx, srv.Default.TenantID, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		cb, rs := u.ByOperation["CreateBackup"], u.ByOperation["RestoreTableFromBackup"]
		if cb.ConsumedReadUnits >= 1 && cb.ConsumedWriteUnits >= 2*items && rs.ConsumedWriteUnits >= 2*items {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage: CreateBackup %+v, RestoreTableFromBackup %+v; want the copies' reads and writes", cb, rs)
		}
	}

	// Point-in-time recovery: pitr_test.go.
}

// TestBackupResumesAfterCancel: a CreateBackup whose client goes away
// in the middle of the copy (the gateway's request ends and releases the
// job) is finished in the background — CREATING until then — and holds
// every item, over each engine.
func TestBackupResumesAfterCancel(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { backupResumes(t, start(t)) })
	}
}

func backupResumes(t *testing.T, srv *harness.Server) {
	ctx := context.Background()
	a := srv.Client(srv.Default)
	createTable(t, a, "big")
	const items = 3000
	for i := 0; i < items; i += 25 {
		var reqs []types.WriteRequest
		for k := i; k < i+25; k++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk": s(fmt.Sprint("p", k%13)), "sk": n(fmt.Sprint(k)), "v": s("v")}}})
		}
		for len(reqs) > 0 {
			out, err := a.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"big": reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems["big"]
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := a.CreateBackup(cctx, &dynamodb.CreateBackupInput{TableName: aws.String("big"), BackupName: aws.String("interrupted")})
		done <- err
	}()
	var arn string
	for deadline := time.Now().Add(30 * time.Second); arn == ""; time.Sleep(5 * time.Millisecond) {
		ls, err := a.ListBackups(ctx, &dynamodb.ListBackupsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls.BackupSummaries) == 1 && aws.ToInt64(ls.BackupSummaries[0].BackupSizeBytes) > 0 {
			arn = aws.ToString(ls.BackupSummaries[0].BackupArn)
		}
		if time.Now().After(deadline) {
			t.Fatal("the copy did not begin")
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Log("the copy ended before the request was cancelled")
	} else {
		d, derr := a.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
		if derr != nil {
			t.Fatal(derr)
		}
		t.Logf("cancelled at %s, %d items copied", d.BackupDescription.BackupDetails.BackupStatus, aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount))
	}
	start := time.Now()
	for {
		d, err := a.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if d.BackupDescription.BackupDetails.BackupStatus == types.BackupStatusAvailable {
			if got := aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount); got != items {
				t.Fatalf("the finished backup holds %d items, want %d", got, items)
			}
			t.Logf("AVAILABLE %v after the cancel", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("still %s 30 s after the cancel", d.BackupDescription.BackupDetails.BackupStatus)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := a.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("back"), BackupArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	if got, want := scanAll(t, a, "back"), scanAll(t, a, "big"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restored %d items, the table has %d (or they differ)", len(got), len(want))
	}
}
