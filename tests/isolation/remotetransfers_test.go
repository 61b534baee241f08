package isolation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRemoteTransfersIsolation attacks exports and imports on a fleet of
// two gateways sharing one export root (A on one, B on the other, and
// crossed): B cannot describe A's export or import ARNs (through either
// gateway they answer what an ARN that does not exist answers), B's
// listings (by table ARN too) never show A's jobs, B's ClientToken equal
// to A's starts B's own export, B's export of A's own table's ARN is
// TableNotFound, B's import from a bucket and prefix named as A's reads
// nothing of A's files and never writes A's table, and B's export of a
// shared table that A writes too holds B's items only, as does B's
// admin export stream; B's admin routes naming A are refused.
func TestRemoteTransfersIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	root := t.TempDir()
	f := harness.StartCluster(t, 2, harness.Options{ExportRoot: root})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	op := g0.Client(g0.Operator)
	if _, err := op.CreateTable(ctx, isoTable("iso_xfer")); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, op, "iso_xfer")
	a, b := g0.NewTenant(t, "xfvictim", "admin"), g1.NewTenant(t, "xfattacker", "admin")
	clients := map[string][2]*dynamodb.Client{"a": {g0.Client(a), g1.Client(a)}, "b": {g1.Client(b), g0.Client(b)}}
	secret := "SECRET-A-" + randHex(8)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := clients["b"][0].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("iso_xfer"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "same-key"}, "v": &types.AttributeValueMemberS{Value: "mine-B"}}})
		if err == nil {
			break
		}
		if errCode(err) != "ResourceNotFoundException" || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	put(t, clients["a"][0], "iso_xfer", "same-key", secret)
	put(t, clients["a"][1], "iso_xfer", "only-A", secret)
	if _, err := clients["a"][0].CreateTable(ctx, isoTable("a_own")); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, clients["a"][0], "a_own")
	put(t, clients["a"][1], "a_own", "k", secret)
	aOwn, err := clients["a"][0].DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("a_own")})
	if err != nil {
		t.Fatal(err)
	}

	export := func(c *dynamodb.Client, arn *string, bucket, prefix, token string) *types.ExportDescription {
		t.Helper()
		in := &dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String(bucket), S3Prefix: aws.String(prefix)}
		if token != "" {
			in.ClientToken = aws.String(token)
		}
		out, err := c.ExportTableToPointInTime(ctx, in)
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		for {
			d, err := c.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: out.ExportDescription.ExportArn})
			if err != nil {
				t.Fatal(err)
			}
			if d.ExportDescription.ExportStatus != types.ExportStatusInProgress {
				return d.ExportDescription
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A exports its own table and its view of the shared one, and imports
	// its own export into a new table, through gateway 0.
	aEx := export(clients["a"][0], aOwn.Table.TableArn, "shared-name", "pfx", "tok-shared")
	sharedArn := strings.Replace(aws.ToString(aOwn.Table.TableArn), "a_own", "iso_xfer", 1)
	export(clients["a"][0], aws.String(sharedArn), "shared-name", "shared", "")
	importIn := func(table string) *dynamodb.ImportTableInput {
		return &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
			S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("shared-name"), S3KeyPrefix: aws.String("pfx")},
			TableCreationParameters: &types.TableCreationParameters{TableName: aws.String(table),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
				BillingMode:          types.BillingModePayPerRequest}}
	}
	aImp, err := clients["a"][0].ImportTable(ctx, importIn("a_imported"))
	if err != nil {
		t.Fatal(err)
	}

	for i, cb := range clients["b"] {
		// A's ARNs, through either gateway, are not found for B.
		_, err := cb.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: aEx.ExportArn})
		if errCode(err) != "ExportNotFoundException" || strings.Contains(err.Error(), secret) {
			t.Errorf("gateway %d: B describing A's export: %v", i, err)
		}
		_, err = cb.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aImp.ImportTableDescription.ImportArn})
		if errCode(err) != "ImportNotFoundException" {
			t.Errorf("gateway %d: B describing A's import: %v", i, err)
		}
		le, err := cb.ListExports(ctx, &dynamodb.ListExportsInput{})
		if err != nil || len(le.ExportSummaries) != 0 {
			t.Errorf("gateway %d: B's ListExports before any export of B's: %+v %v", i, le, err)
		}
		le, err = cb.ListExports(ctx, &dynamodb.ListExportsInput{TableArn: aOwn.Table.TableArn})
		if err != nil || len(le.ExportSummaries) != 0 {
			t.Errorf("gateway %d: B's ListExports of A's table ARN: %+v %v", i, le, err)
		}
		li, err := cb.ListImports(ctx, &dynamodb.ListImportsInput{})
		if err != nil || len(li.ImportSummaryList) != 0 {
			t.Errorf("gateway %d: B's ListImports: %+v %v", i, li, err)
		}
		// B names A's own table's ARN: B has no such table.
		_, err = cb.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: aOwn.Table.TableArn, S3Bucket: aws.String("shared-name")})
		if errCode(err) != "TableNotFoundException" {
			t.Errorf("gateway %d: B exporting A's own table: %v", i, err)
		}
	}

	// B's ClientToken equal to A's: B's own export of B's view of the
	// shared table, into a bucket and prefix named as A's.
	bEx := export(clients["b"][0], aws.String(sharedArn), "shared-name", "shared", "tok-shared")
	if aws.ToString(bEx.ExportArn) == aws.ToString(aEx.ExportArn) || bEx.ExportStatus != types.ExportStatusCompleted || aws.ToInt64(bEx.ItemCount) != 1 {
		t.Fatalf("B's export with A's ClientToken: %+v", bEx)
	}
	bDirs, err := filepath.Glob(filepath.Join(root, b.TenantID, "*", "shared-name", "shared"))
	if err != nil || len(bDirs) != 1 {
		t.Fatalf("B's bucket: %v %v", bDirs, err)
	}
	assertNoSecret(t, bDirs[0], secret, 1)
	aDirs, _ := filepath.Glob(filepath.Join(root, a.TenantID, "*", "shared-name", "shared"))
	if len(aDirs) != 1 {
		t.Fatalf("A's bucket: %v", aDirs)
	}
	if n := countExported(t, aDirs[0]); n != 2 {
		t.Fatalf("A's export of the shared table holds %d items, A has 2", n)
	}

	// B imports from a bucket and prefix named as A's (A's files hold
	// A's table): B's tree has none, and A's table is untouched.
	bImp, err := clients["b"][1].ImportTable(ctx, importIn("a_own"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, err := clients["b"][0].DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: bImp.ImportTableDescription.ImportArn})
		if err != nil {
			t.Fatal(err)
		}
		if d.ImportTableDescription.ImportStatus != types.ImportStatusInProgress {
			if d.ImportTableDescription.ImportStatus != types.ImportStatusFailed || d.ImportTableDescription.ImportedItemCount != 0 {
				t.Fatalf("B's import from the bucket and prefix named as A's: %+v", d.ImportTableDescription)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := clients["a"][1].Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("a_own"), ConsistentRead: aws.Bool(true)})
	if err != nil || len(got.Items) != 1 {
		t.Fatalf("A's table after B's import of the same name: %+v %v", got, err)
	}
	if _, err := clients["b"][0].DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("a_own")}); err != nil {
		t.Fatalf("B's import created no table of B's own: %v", err)
	}

	// The admin API's export stream: B's own stream of the shared table
	// holds B's item only; B naming A's tenant is refused, on either
	// gateway.
	for i, g := range []*harness.Server{g0, g1} {
		cb := client.New(g.Endpoint, b.Key)
		text := exportText(t, cb, b.TenantID, "iso_xfer")
		if strings.Contains(text, secret) || !strings.Contains(text, "mine-B") {
			t.Errorf("gateway %d: B's export stream of the shared table: %s", i, text)
		}
		err := cb.Export(ctx, a.TenantID, client.ExportRequest{}, func(client.ExportEvent) error { return nil })
		if !client.IsNotFound(err) {
			t.Errorf("gateway %d: B's export stream of A: %v, want 404", i, err)
		}
	}
}

// assertNoSecret checks that the export under dir holds want items and
// none with secret.
func assertNoSecret(t *testing.T, dir, secret string, want int) {
	t.Helper()
	if n := countExported(t, dir); n != want {
		t.Fatalf("the export under %s holds %d items, want %d", dir, n, want)
	}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s names the other tenant's secret", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countExported(t *testing.T, dir string) int {
	t.Helper()
	dirs, err := dynexport.Find(dir)
	if err != nil || len(dirs) != 1 {
		t.Fatalf("exports under %s: %v %v", dir, dirs, err)
	}
	x, err := dynexport.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := x.Scan(dynexport.Position{}, func(dynexport.Position, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
