package crash

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestAPITransferJobsResume: an ExportTableToPointInTime and an
// ImportTable running when the server is killed with kill -9 are resumed
// when it starts again: DescribeExport and DescribeImport show them
// IN_PROGRESS and then COMPLETED, the export's files hold every item once,
// and the imported table holds exactly the source's items. Attacks on the
// resumed jobs: another tenant B, with a table of the same name as the
// import's, cannot describe or list A's jobs after the restart, and the
// resumed import (and export) act for A only: B's table keeps exactly its
// own items, and nothing is written under B's export directory.
func TestAPITransferJobsResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := binary(t)
	dir, root := t.TempDir(), t.TempDir()
	args := []string{"--fairness=false", "--export-root", root}
	srv := harness.StartBinary(t, bin, dir, args...)
	ctx := context.Background()
	a := srv.NewTenant(t, "jobs", "admin")
	ddb := srv.Client(a)
	s := types.ScalarAttributeTypeS
	keys := []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}
	defs := []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: s}, {AttributeName: aws.String("sk"), AttributeType: s}}
	if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("Src"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: defs, KeySchema: keys}); err != nil {
		t.Fatal(err)
	}
	const n = 30000
	for i := 0; i < n; i += 25 {
		var reqs []types.WriteRequest
		for j := i; j < i+25; j++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("p%03d", j%300)}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("s%06d", j)},
				"v": &types.AttributeValueMemberS{Value: strings.Repeat("x", 100)}}}})
		}
		if _, err := ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"Src": reqs}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("Src")})
	if err != nil {
		t.Fatal(err)
	}
	arn := d.Table.TableArn
	waitExport := func(ddb *dynamodb.Client, exportArn *string) *types.ExportDescription {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
			out, err := ddb.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: exportArn})
			if err != nil {
				t.Fatal(err)
			}
			if de := out.ExportDescription; de.ExportStatus != types.ExportStatusInProgress || time.Now().After(deadline) {
				return de
			}
		}
	}
	// A first export, completed: the import's source.
	ex1, err := ddb.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String("bkt"), S3Prefix: aws.String("one")})
	if err != nil {
		t.Fatal(err)
	}
	if de := waitExport(ddb, ex1.ExportDescription.ExportArn); de.ExportStatus != types.ExportStatusCompleted {
		t.Fatalf("first export: %s %s", de.ExportStatus, aws.ToString(de.FailureMessage))
	}
	id1 := (*ex1.ExportDescription.ExportArn)[strings.LastIndex(*ex1.ExportDescription.ExportArn, "/")+1:]

	// The import and a second export run when the server is killed.
	imp, err := ddb.ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson, InputCompressionType: types.InputCompressionTypeGzip,
		S3BucketSource:          &types.S3BucketSource{S3Bucket: aws.String("bkt"), S3KeyPrefix: aws.String("one/AWSDynamoDB/" + id1 + "/data")},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("Dst"), BillingMode: types.BillingModePayPerRequest, AttributeDefinitions: defs, KeySchema: keys}})
	if err != nil {
		t.Fatal(err)
	}
	var before int64
	for deadline := time.Now().Add(time.Minute); before == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		out, err := ddb.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: imp.ImportTableDescription.ImportArn})
		if err != nil {
			t.Fatal(err)
		}
		before = out.ImportTableDescription.ImportedItemCount
	}
	ex2, err := ddb.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String("bkt"), S3Prefix: aws.String("two")})
	if err != nil {
		t.Fatal(err)
	}
	ex2d, err := ddb.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: ex2.ExportDescription.ExportArn})
	if err != nil {
		t.Fatal(err)
	}
	// B: a tenant with a table named like the import's destination.
	b := srv.NewTenant(t, "jobs-other", "admin")
	dbB := srv.Client(b)
	if _, err := dbB.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("Dst"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: defs, KeySchema: keys}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := dbB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Dst"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("p%03d", i)}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("s%06d", i)},
			"v": &types.AttributeValueMemberS{Value: "B"}}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Kill(t)
	if ex2d.ExportDescription.ExportStatus != types.ExportStatusInProgress || before >= n {
		t.Fatalf("killed too late: export %s, import at %d of %d", ex2d.ExportDescription.ExportStatus, before, n)
	}
	t.Logf("killed with the import at %d of %d items, the export %s", before, n, ex2d.ExportDescription.ExportStatus)

	srv = harness.StartBinary(t, bin, dir, args...)
	ddb = srv.Client(a)
	de := waitExport(ddb, ex2.ExportDescription.ExportArn)
	if de.ExportStatus != types.ExportStatusCompleted || aws.ToInt64(de.ItemCount) != n {
		t.Fatalf("resumed export: %s, %d items, %s", de.ExportStatus, aws.ToInt64(de.ItemCount), aws.ToString(de.FailureMessage))
	}
	id2 := (*de.ExportArn)[strings.LastIndex(*de.ExportArn, "/")+1:]
	x, err := dynexport.Open(filepath.Join(root, a.TenantID, "live", "bkt", "two", "AWSDynamoDB", id2))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	if err := x.Scan(dynexport.Position{}, func(_ dynexport.Position, item []byte) error {
		if seen[string(item)] {
			return fmt.Errorf("item twice in the export: %s", item)
		}
		seen[string(item)] = true
		return nil
	}); err != nil || len(seen) != n {
		t.Fatalf("resumed export's files: %d items, %v", len(seen), err)
	}

	var di *types.ImportTableDescription
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		out, err := ddb.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: imp.ImportTableDescription.ImportArn})
		if err != nil {
			t.Fatal(err)
		}
		if di = out.ImportTableDescription; di.ImportStatus != types.ImportStatusInProgress || time.Now().After(deadline) {
			break
		}
	}
	if di.ImportStatus != types.ImportStatusCompleted || di.ImportedItemCount != n || di.ProcessedItemCount != n || di.ErrorCount != 0 {
		t.Fatalf("resumed import: %s, %d imported, %d processed, %d errors, %s", di.ImportStatus, di.ImportedItemCount, di.ProcessedItemCount, di.ErrorCount, aws.ToString(di.FailureMessage))
	}
	count := int32(0)
	p := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{TableName: aws.String("Dst"), Select: types.SelectCount})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		count += page.Count
	}
	if count != n {
		t.Fatalf("the imported table holds %d items, want %d", count, n)
	}

	// B after the restart: none of A's jobs, its own table untouched.
	dbB = srv.Client(b)
	if _, err := dbB.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: ex2.ExportDescription.ExportArn}); err == nil {
		t.Error("B describes A's resumed export")
	}
	if _, err := dbB.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: imp.ImportTableDescription.ImportArn}); err == nil {
		t.Error("B describes A's resumed import")
	}
	if le, err := dbB.ListExports(ctx, &dynamodb.ListExportsInput{}); err != nil || len(le.ExportSummaries) != 0 {
		t.Errorf("B lists exports %+v, %v", le, err)
	}
	if li, err := dbB.ListImports(ctx, &dynamodb.ListImportsInput{}); err != nil || len(li.ImportSummaryList) != 0 {
		t.Errorf("B lists imports %+v, %v", li, err)
	}
	sb, err := dbB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("Dst"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range sb.Items {
		if v, ok := it["v"].(*types.AttributeValueMemberS); !ok || v.Value != "B" {
			t.Fatalf("B's table holds an item it never wrote: %v", it)
		}
	}
	if sb.Count != 3 {
		t.Fatalf("B's table holds %d items, want its 3", sb.Count)
	}
	if _, err := os.Stat(filepath.Join(root, b.TenantID)); !os.IsNotExist(err) {
		t.Errorf("something was written under B's export directory: %v", err)
	}
}
