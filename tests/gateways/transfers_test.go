package gateways

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// createOwn creates a table of c's tenant keyed by pk and waits until it
// is active.
func createOwn(t *testing.T, c *dynamodb.Client, name string) *types.TableDescription {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, c, name)
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return d.Table
}

// putMany writes items pk=k<i>, v=<prefix><i> for i in [0, n).
func putMany(t *testing.T, c *dynamodb.Client, table, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 25 {
		var reqs []types.WriteRequest
		for j := i; j < min(i+25, n); j++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("k%05d", j)}, "v": &types.AttributeValueMemberS{Value: fmt.Sprintf("%s%d", prefix, j)}}}})
		}
		for len(reqs) > 0 {
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems[table]
		}
	}
}

// exportedItems reads the items of the export under dir as sorted
// "pk=v|" strings, as items does.
func exportedItems(t *testing.T, dir string) []string {
	t.Helper()
	dirs, err := dynexport.Find(dir)
	if err != nil || len(dirs) != 1 {
		t.Fatalf("exports under %s: %v %v", dir, dirs, err)
	}
	x, err := dynexport.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := x.Scan(dynexport.Position{}, func(_ dynexport.Position, item []byte) error {
		s := string(item)
		pk := between(s, `"pk":{"S":"`, `"`)
		v := between(s, `"v":{"S":"`, `"`)
		out = append(out, pk+"="+v+"|")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return "?"
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

func waitExport(t *testing.T, c *dynamodb.Client, arn *string) *types.ExportDescription {
	t.Helper()
	var d *types.ExportDescription
	until(t, "the export's end", time.Minute, func() bool {
		out, err := c.DescribeExport(context.Background(), &dynamodb.DescribeExportInput{ExportArn: arn})
		if err != nil {
			t.Fatal(err)
		}
		d = out.ExportDescription
		return d.ExportStatus != types.ExportStatusInProgress
	})
	return d
}

func waitImport(t *testing.T, c *dynamodb.Client, arn *string, limit time.Duration) *types.ImportTableDescription {
	t.Helper()
	var d *types.ImportTableDescription
	until(t, "the import's end", limit, func() bool {
		out, err := c.DescribeImport(context.Background(), &dynamodb.DescribeImportInput{ImportArn: arn})
		if err != nil {
			t.Fatal(err)
		}
		d = out.ImportTableDescription
		return d.ImportStatus != types.ImportStatusInProgress
	})
	return d
}

// TestTransfersAcrossGateways: with the same export root on both
// gateways, an ExportTableToPointInTime through gateway 0 is described
// and listed (COMPLETED, its item count) through gateway 1, its files
// hold the table's items; an ImportTable of those files through gateway
// 1 is described and listed through gateway 0 and loads exactly those
// items; a ClientToken names one export on every gateway; an export at
// a past time is refused saying why; the tenant's deletion removes its
// export files and its job records from the engine.
func TestTransfersAcrossGateways(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	f := harness.StartCluster(t, 2, harness.Options{ExportRoot: root})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	a := g0.NewTenant(t, "xferfleet", "admin")
	c0, c1 := g0.Client(a), g1.Client(a)
	src := createOwn(t, c0, "src")
	putMany(t, c1, "src", "v", 700)
	want := items(t, c0, "src")

	ex, err := c0.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: src.TableArn,
		S3Bucket: aws.String("fleet-bkt"), S3Prefix: aws.String("daily"), ClientToken: aws.String("tok-1")})
	if err != nil {
		t.Fatal(err)
	}
	d := waitExport(t, c1, ex.ExportDescription.ExportArn)
	if d.ExportStatus != types.ExportStatusCompleted || aws.ToInt64(d.ItemCount) != 700 {
		t.Fatalf("the export through gateway 0, described through gateway 1: %s %d items (%s)", d.ExportStatus, aws.ToInt64(d.ItemCount), aws.ToString(d.FailureMessage))
	}
	again, err := c1.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: src.TableArn,
		S3Bucket: aws.String("fleet-bkt"), S3Prefix: aws.String("daily"), ClientToken: aws.String("tok-1")})
	if err != nil || aws.ToString(again.ExportDescription.ExportArn) != aws.ToString(ex.ExportDescription.ExportArn) {
		t.Fatalf("the same ClientToken through gateway 1: %+v %v", again, err)
	}
	l, err := c1.ListExports(ctx, &dynamodb.ListExportsInput{})
	if err != nil || len(l.ExportSummaries) != 1 || l.ExportSummaries[0].ExportStatus != types.ExportStatusCompleted {
		t.Fatalf("ListExports through gateway 1: %+v %v", l, err)
	}
	bucket, err := filepath.Glob(filepath.Join(root, a.TenantID, "*", "fleet-bkt"))
	if err != nil || len(bucket) != 1 {
		t.Fatalf("the bucket's directory: %v %v", bucket, err)
	}
	if got := exportedItems(t, filepath.Join(bucket[0], "daily")); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the export's files hold %d items, the table %d", len(got), len(want))
	}

	imp, err := c1.ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
		S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("fleet-bkt"), S3KeyPrefix: aws.String("daily")},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("copy"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest}})
	if err != nil {
		t.Fatal(err)
	}
	di := waitImport(t, c0, imp.ImportTableDescription.ImportArn, time.Minute)
	if di.ImportStatus != types.ImportStatusCompleted || di.ImportedItemCount != 700 {
		t.Fatalf("the import through gateway 1, described through gateway 0: %s %d items (%s)", di.ImportStatus, di.ImportedItemCount, aws.ToString(di.FailureMessage))
	}
	li, err := c0.ListImports(ctx, &dynamodb.ListImportsInput{})
	if err != nil || len(li.ImportSummaryList) != 1 || li.ImportSummaryList[0].ImportStatus != types.ImportStatusCompleted {
		t.Fatalf("ListImports through gateway 0: %+v %v", li, err)
	}
	if got := items(t, c0, "copy"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the imported table holds %d items, the source %d", len(got), len(want))
	}

	_, err = c1.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: src.TableArn,
		S3Bucket: aws.String("fleet-bkt"), ExportTime: aws.Time(time.Now().Add(-time.Minute))})
	if errCode(err) != "InvalidExportTimeException" || !strings.Contains(err.Error(), "gateway exports only the current items") {
		t.Fatalf("an export at a past time: %v", err)
	}

	// The tenant's deletion removes its files and its job records.
	if _, err := g1.Admin().DeleteTenant(ctx, a.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, a.TenantID)); !os.IsNotExist(err) {
		t.Fatalf("the deleted tenant's export tree: %v", err)
	}
	if left := engineItemsOf(t, f.EngineClient(t), f.EngineTable(), a.TenantID); len(left) != 0 {
		t.Fatalf("%d items of the deleted tenant are still in the engine:\n%s", len(left), strings.Join(left, "\n"))
	}
}

// TestImportSurvivesKilledGateway: an ImportTable running on a gateway
// process killed with kill -9 does not stay IN_PROGRESS: once the dead
// gateway's lease on the job lapses, the other gateway claims it and
// resumes it after the items the record counts, and it ends COMPLETED
// with exactly the files' items in the table.
func TestImportSurvivesKilledGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills a gateway process")
	}
	bin := binary(t)
	root := t.TempDir()
	f := harness.StartCluster(t, 1, harness.Options{ExportRoot: root})
	g0 := f.Gateways[0]
	ctx := context.Background()
	a := g0.NewTenant(t, "xferkill", "admin")
	c0 := g0.Client(a)
	// A first export makes the bucket's directory in A's tree; the data
	// to import is then written beside it.
	seed := createOwn(t, c0, "seed")
	putMany(t, c0, "seed", "s", 1)
	ex, err := c0.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: seed.TableArn, S3Bucket: aws.String("big"), S3Prefix: aws.String("seed")})
	if err != nil {
		t.Fatal(err)
	}
	if d := waitExport(t, c0, ex.ExportDescription.ExportArn); d.ExportStatus != types.ExportStatusCompleted {
		t.Fatalf("the seed export: %s", d.ExportStatus)
	}
	bucket, err := filepath.Glob(filepath.Join(root, a.TenantID, "*", "big"))
	if err != nil || len(bucket) != 1 {
		t.Fatalf("the bucket's directory: %v %v", bucket, err)
	}
	const n = 40000
	now := time.Now()
	w, err := dynexport.Create(bucket[0], dynexport.WriterOptions{ExportID: dynexport.NewExportID(now), Prefix: "data", Start: now, ExportTime: now,
		MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		item := fmt.Sprintf(`{"pk":{"S":"k%05d"},"v":{"S":"v%d-%s"}}`, i, i, strings.Repeat("x", 64))
		if err := w.Add([]byte(item), int64(len(item))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(now); err != nil {
		t.Fatal(err)
	}

	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{ExportRoot: root})
	imp, err := victim.Client(a).ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
		S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("big"), S3KeyPrefix: aws.String("data")},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("loaded"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest}})
	if err != nil {
		t.Fatal(err)
	}
	arn := imp.ImportTableDescription.ImportArn
	describe := func() *types.ImportTableDescription {
		out, err := c0.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: arn})
		if err != nil {
			t.Fatal(err)
		}
		return out.ImportTableDescription
	}
	until(t, "the import's first chunk", time.Minute, func() bool { return describe().ImportedItemCount > 0 })
	victim.Kill(t)
	at := describe()
	if at.ImportStatus != types.ImportStatusInProgress || at.ImportedItemCount >= n {
		t.Fatalf("the import was over at the kill (%s, %d items): the test checks nothing (more items needed)", at.ImportStatus, at.ImportedItemCount)
	}
	t.Logf("kill -9 after %d of %d items", at.ImportedItemCount, n)
	d := waitImport(t, c0, arn, 3*time.Minute)
	if d.ImportStatus != types.ImportStatusCompleted || d.ImportedItemCount != n || d.ErrorCount != 0 {
		t.Fatalf("after the kill: %s, %d items imported, %d errors (%s)", d.ImportStatus, d.ImportedItemCount, d.ErrorCount, aws.ToString(d.FailureMessage))
	}
	var count int32
	p := dynamodb.NewScanPaginator(c0, &dynamodb.ScanInput{TableName: aws.String("loaded"), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		pg, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		count += pg.Count
	}
	if count != n {
		t.Fatalf("the imported table holds %d items, the files %d", count, n)
	}
}
