package isolation

import (
	"context"
	"encoding/json"
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

// Attacks on exports and imports: the admin API's export stream and
// import batches, and DynamoDB's ExportTableToPointInTime, DescribeExport,
// ListExports, ImportTable, DescribeImport and ListImports over the export
// root. A's export holds nothing of B; nothing A imports reaches B,
// whatever the file holds; B learns nothing of A's exports and imports;
// no bucket or prefix leaves the caller's own tree of the export root.

func isoTable(name string, tags ...types.Tag) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		Tags:                 tags,
	}
}

func put(t *testing.T, c *dynamodb.Client, table, pk, v string) {
	t.Helper()
	if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
		t.Fatal(err)
	}
}

// exportText returns the export stream of tenant's tables as c sees it.
func exportText(t *testing.T, c *client.Client, tenant string, tables ...string) string {
	t.Helper()
	var b strings.Builder
	err := c.Export(context.Background(), tenant, client.ExportRequest{Tables: tables}, func(ev client.ExportEvent) error {
		j, _ := json.Marshal(ev)
		b.Write(j)
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTransfersIsolation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srv := harness.Start(t, harness.Options{ExportRoot: root})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	op := srv.Client(srv.Operator)
	a, b := srv.NewTenant(t, "xferA", "admin"), srv.NewTenant(t, "xferB", "admin")
	da, db := srv.Client(a), srv.Client(b)
	ca := client.New(srv.Endpoint, a.Key)
	lkTag := []types.Tag{{Key: aws.String("tenantdb:isolation"), Value: aws.String("leading-keys")}, {Key: aws.String("tenantdb:leading-key-pattern"), Value: aws.String("TENANT#{tenant}|*")}}
	for _, in := range []*dynamodb.CreateTableInput{isoTable("xfer_ns"), isoTable("xfer_lk", lkTag...)} {
		if _, err := op.CreateTable(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	put(t, da, "xfer_ns", "same-key", "secret-of-A")
	put(t, db, "xfer_ns", "same-key", "secret-of-B")
	put(t, db, "xfer_ns", "only-B", "secret-of-B-2")
	put(t, da, "xfer_lk", "TENANT#"+a.TenantID+"|1", "secret-of-A-lk")
	put(t, db, "xfer_lk", "TENANT#"+b.TenantID+"|1", "secret-of-B-lk")

	t.Run("export holds nothing of B", func(t *testing.T) {
		text := exportText(t, ca, a.TenantID)
		if strings.Contains(text, "secret-of-B") || strings.Contains(text, "only-B") || strings.Contains(text, b.TenantID) {
			t.Fatalf("A's export shows B's data:\n%s", text)
		}
		if !strings.Contains(text, "secret-of-A") || !strings.Contains(text, "secret-of-A-lk") {
			t.Fatalf("A's export lacks A's data:\n%s", text)
		}
	})

	t.Run("export at a past time holds nothing of B", func(t *testing.T) {
		in := isoTable("xfer_log")
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
		if _, err := op.CreateTable(ctx, in); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // the log's coverage starts a second after its stream
		put(t, da, "xfer_log", "same-key", "secret-of-A")
		put(t, db, "xfer_log", "same-key", "secret-of-B")
		put(t, db, "xfer_log", "only-B", "secret-of-B-2")
		time.Sleep(5 * time.Millisecond)
		at := time.Now()
		time.Sleep(5 * time.Millisecond)
		// B's changes after the time: A's history must not see them.
		put(t, db, "xfer_log", "same-key", "secret-of-B-3")
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("xfer_log"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "only-B"}}}); err != nil {
			t.Fatal(err)
		}
		put(t, db, "xfer_log", "new-B", "secret-of-B-4")
		var items []string
		err := ca.Export(ctx, a.TenantID, client.ExportRequest{Tables: []string{"xfer_log"}, At: &at}, func(ev client.ExportEvent) error {
			if ev.Item != nil {
				items = append(items, string(ev.Item))
			}
			return nil
		})
		if srv.Remote {
			// A gateway exports only current items: refused, naming
			// nothing of B.
			if err == nil || !strings.Contains(err.Error(), "gateway exports only the current items") || len(items) != 0 || strings.Contains(err.Error(), "secret") {
				t.Fatalf("A's export of xfer_log at a past time through a gateway: %v %v", items, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || !strings.Contains(items[0], "secret-of-A") {
			t.Fatalf("A's export of xfer_log at a past time: %v", items)
		}
	})

	t.Run("export at a past time tells nothing of B's point-in-time recovery", func(t *testing.T) {
		// B keeps the log of one shared table with point-in-time recovery;
		// nobody keeps the other's. A's export of a past time must fail
		// alike on both: A may not learn that B keeps a log.
		for _, name := range []string{"xfer_pitr_b", "xfer_pitr_none"} {
			if _, err := op.CreateTable(ctx, isoTable(name)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("xfer_pitr_b"),
			PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // past the log's coverage margin
		put(t, da, "xfer_pitr_b", "k", "v1")
		put(t, da, "xfer_pitr_none", "k", "v1")
		at := time.Now()
		time.Sleep(5 * time.Millisecond)
		put(t, da, "xfer_pitr_b", "k", "v2")
		put(t, da, "xfer_pitr_none", "k", "v2")
		var msgs []string
		for _, name := range []string{"xfer_pitr_b", "xfer_pitr_none"} {
			err := ca.Export(ctx, a.TenantID, client.ExportRequest{Tables: []string{name}, At: &at}, func(client.ExportEvent) error { return nil })
			if err == nil {
				t.Fatalf("A's export of %s at a past time worked: the log B keeps covered A", name)
			}
			msgs = append(msgs, strings.ReplaceAll(err.Error(), name, "TABLE"))
		}
		if msgs[0] != msgs[1] {
			t.Fatalf("A's refusals differ with and without B's point-in-time recovery:\n%s\n%s", msgs[0], msgs[1])
		}
	})

	t.Run("admin routes of another tenant", func(t *testing.T) {
		err := ca.Export(ctx, b.TenantID, client.ExportRequest{}, func(client.ExportEvent) error { return nil })
		if !client.IsNotFound(err) {
			t.Errorf("A exporting B: %v, want 404", err)
		}
		_, err = ca.Import(ctx, b.TenantID, client.ImportRequest{Table: "xfer_ns", Items: []json.RawMessage{json.RawMessage(`{"pk":{"S":"only-B"},"v":{"S":"overwritten"}}`)}})
		if !client.IsNotFound(err) {
			t.Errorf("A importing into B: %v, want 404", err)
		}
		err = srv.Admin().Export(ctx, a.TenantID, client.ExportRequest{}, func(client.ExportEvent) error { return nil })
		if !client.IsForbidden(err) {
			t.Errorf("the operator's key exporting A: %v, want 403 (no access to tenant data)", err)
		}
		appKey := srv.NewKey(t, a.TenantID, "app")
		err = client.New(srv.Endpoint, appKey.Key).Export(ctx, a.TenantID, client.ExportRequest{}, func(client.ExportEvent) error { return nil })
		if !client.IsForbidden(err) {
			t.Errorf("A's app key on the admin export: %v, want 403", err)
		}
	})

	t.Run("import with B's keys lands in A", func(t *testing.T) {
		// Namespace table: B's keys are just keys in A's namespace.
		if _, err := ca.Import(ctx, a.TenantID, client.ImportRequest{Table: "xfer_ns", Begin: true, Done: true, Items: []json.RawMessage{
			json.RawMessage(`{"pk":{"S":"only-B"},"v":{"S":"planted-by-A"}}`), json.RawMessage(`{"pk":{"S":"same-key"},"v":{"S":"planted-by-A"}}`)}}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"only-B", "same-key"} {
			got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("xfer_ns"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k}}})
			if err != nil || got.Item == nil || got.Item["v"].(*types.AttributeValueMemberS).Value == "planted-by-A" {
				t.Errorf("B's %s after A's import: %v %v", k, got, err)
			}
		}
		// Leading-keys table: B's tenant id in the key is refused.
		_, err := ca.Import(ctx, a.TenantID, client.ImportRequest{Table: "xfer_lk", Items: []json.RawMessage{
			json.RawMessage(`{"pk":{"S":"TENANT#` + b.TenantID + `|1"},"v":{"S":"planted-by-A"}}`)}})
		if !client.IsForbidden(err) {
			t.Errorf("A importing B's leading key: %v, want 403", err)
		}
		got, _ := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("xfer_lk"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "TENANT#" + b.TenantID + "|1"}}})
		if got == nil || got.Item["v"].(*types.AttributeValueMemberS).Value != "secret-of-B-lk" {
			t.Errorf("B's leading-keys item after A's import: %v", got)
		}
		// An import that creates a table creates A's own.
		def := json.RawMessage(`{"TableName":"xfer_new","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
		if _, err := ca.Import(ctx, a.TenantID, client.ImportRequest{Table: "xfer_new", Definition: def, Begin: true, Items: []json.RawMessage{json.RawMessage(`{"pk":{"S":"x"}}`)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("xfer_new")}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("B describing the table A's import created: %v", err)
		}
	})

	t.Run("API exports and imports", func(t *testing.T) {
		d, err := da.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("xfer_ns")})
		if err != nil {
			t.Fatal(err)
		}
		arnA := aws.ToString(d.Table.TableArn)
		ex, err := da.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: aws.String(arnA), S3Bucket: aws.String("shared-name")})
		if err != nil {
			t.Fatal(err)
		}
		exportArn := aws.ToString(ex.ExportDescription.ExportArn)
		var desc *dynamodb.DescribeExportOutput
		for deadline := time.Now().Add(30 * time.Second); ; {
			desc, err = da.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: aws.String(exportArn)})
			if err != nil {
				t.Fatal(err)
			}
			if desc.ExportDescription.ExportStatus != types.ExportStatusInProgress || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		sa, err := da.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("xfer_ns")})
		if err != nil {
			t.Fatal(err)
		}
		if desc.ExportDescription.ExportStatus != types.ExportStatusCompleted || aws.ToInt64(desc.ExportDescription.ItemCount) != int64(len(sa.Items)) {
			t.Fatalf("A's export: %s, %d items; A has %d", desc.ExportDescription.ExportStatus, aws.ToInt64(desc.ExportDescription.ItemCount), len(sa.Items))
		}
		// The files are in A's tree only, and hold nothing of B.
		var files []string
		filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		for _, f := range files {
			if !strings.HasPrefix(f, filepath.Join(root, a.TenantID)) {
				t.Errorf("A's export wrote %s, outside A's tree", f)
			}
		}
		dirs, err := dynexport.Find(filepath.Join(root, a.TenantID))
		if err != nil || len(dirs) != 1 {
			t.Fatalf("A's exports: %v %v", dirs, err)
		}
		x, err := dynexport.Open(dirs[0])
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		x.Scan(dynexport.Position{}, func(_ dynexport.Position, item []byte) error {
			n++
			if strings.Contains(string(item), "secret-of-B") {
				t.Errorf("A's export file holds B's item %s", item)
			}
			return nil
		})
		if n != len(sa.Items) {
			t.Errorf("A's export files hold %d items, A has %d", n, len(sa.Items))
		}

		// B sees none of it, whatever it names.
		if _, err := db.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: aws.String(exportArn)}); errCode(err) != "ExportNotFoundException" {
			t.Errorf("B describing A's export: %v", err)
		}
		if l, err := db.ListExports(ctx, &dynamodb.ListExportsInput{}); err != nil || len(l.ExportSummaries) != 0 {
			t.Errorf("B listing exports: %+v %v", l, err)
		}
		if l, err := db.ListExports(ctx, &dynamodb.ListExportsInput{TableArn: aws.String(arnA)}); err != nil || len(l.ExportSummaries) != 0 {
			t.Errorf("B listing exports of the shared table: %+v %v", l, err)
		}
		if l, err := da.ListExports(ctx, &dynamodb.ListExportsInput{}); err != nil || len(l.ExportSummaries) != 1 {
			t.Errorf("A listing its exports: %+v %v", l, err)
		}
		// B importing from a bucket of the same name reads its own (empty) tree.
		imp, err := db.ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
			S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("shared-name")},
			TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("xfer_stolen"), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}})
		if err != nil {
			t.Fatal(err)
		}
		importArn := aws.ToString(imp.ImportTableDescription.ImportArn)
		var di *dynamodb.DescribeImportOutput
		for deadline := time.Now().Add(30 * time.Second); ; {
			if di, err = db.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(importArn)}); err != nil {
				t.Fatal(err)
			}
			if di.ImportTableDescription.ImportStatus != types.ImportStatusInProgress || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if di.ImportTableDescription.ImportStatus != types.ImportStatusFailed || di.ImportTableDescription.ImportedItemCount != 0 {
			t.Errorf("B's import from its own empty bucket: %+v", di.ImportTableDescription)
		}
		if s, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("xfer_stolen")}); err != nil || len(s.Items) != 0 {
			t.Errorf("B's table after the import: %v %v", s, err)
		}
		if _, err := da.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(importArn)}); errCode(err) != "ImportNotFoundException" {
			t.Errorf("A describing B's import: %v", err)
		}
		if l, err := da.ListImports(ctx, &dynamodb.ListImportsInput{}); err != nil || len(l.ImportSummaryList) != 0 {
			t.Errorf("A listing imports: %+v %v", l, err)
		}
	})

	t.Run("export root traversal", func(t *testing.T) {
		d, _ := da.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("xfer_ns")})
		arn := d.Table.TableArn
		for _, c := range []struct{ bucket, prefix string }{
			{"..", ""}, {"../" + b.TenantID, ""}, {"a/b", ""}, {".tenantdb", ""}, {"ok-bucket", "../../" + b.TenantID + "/live"},
			{"ok-bucket", "/etc"}, {"ok-bucket", "a/../../x"}, {"ok-bucket", `a\..\..\x`}, {b.TenantID, "../.."},
		} {
			_, err := da.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String(c.bucket), S3Prefix: aws.String(c.prefix)})
			if errCode(err) != "ValidationException" {
				t.Errorf("export to bucket %q prefix %q: %v, want ValidationException", c.bucket, c.prefix, err)
			}
			_, err = da.ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
				S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String(c.bucket), S3KeyPrefix: aws.String(c.prefix)},
				TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("xfer_trav"), BillingMode: types.BillingModePayPerRequest,
					AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
					KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}})
			if errCode(err) != "ValidationException" {
				t.Errorf("import from bucket %q prefix %q: %v, want ValidationException", c.bucket, c.prefix, err)
			}
		}
		if _, err := da.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("xfer_trav")}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("a refused import created its table: %v", err)
		}
	})

	// B cannot make the server overwrite or delete A's export tree: not
	// with buckets and prefixes spelling A's path, not by deleting A, and
	// not by being deleted itself (which removes B's tree, and only it).
	// Runs last: B is deleted.
	t.Run("deletion removes only the deleted tenant's tree", func(t *testing.T) {
		treeA := filepath.Join(root, a.TenantID)
		before := tree(t, treeA)
		if len(before) == 0 {
			t.Fatal("A has no export files to protect")
		}
		envs, err := os.ReadDir(treeA)
		if err != nil || len(envs) != 1 {
			t.Fatalf("A's environments in the root: %v %v", envs, err)
		}
		env := envs[0].Name()
		d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("xfer_ns")})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ bucket, prefix string }{
			{a.TenantID, env + "/shared-name"}, {a.TenantID, ""}, {"shared-name", ""}, {"shared-name", "AWSDynamoDB"},
		} {
			ex, err := db.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: d.Table.TableArn,
				S3Bucket: aws.String(c.bucket), S3Prefix: aws.String(c.prefix)})
			if err != nil {
				t.Fatalf("B's export to bucket %q prefix %q: %v", c.bucket, c.prefix, err)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				desc, err := db.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: ex.ExportDescription.ExportArn})
				if err != nil {
					t.Fatal(err)
				}
				if st := desc.ExportDescription.ExportStatus; st != types.ExportStatusInProgress || time.Now().After(deadline) {
					if st != types.ExportStatusCompleted {
						t.Fatalf("B's export to bucket %q prefix %q: %s", c.bucket, c.prefix, st)
					}
					break
				}
			}
		}
		if len(tree(t, filepath.Join(root, b.TenantID))) == 0 {
			t.Fatal("B's exports wrote nothing in B's tree")
		}
		assertTree(t, "after B's exports spelling A's paths", treeA, before)

		// B's admin key deleting A is refused, and A's files stay.
		if _, err := client.New(srv.Endpoint, b.Key).DeleteTenant(ctx, a.TenantID); err == nil {
			t.Error("B deleted A")
		}
		assertTree(t, "after B tried to delete A", treeA, before)

		if _, err := srv.Admin().DeleteTenant(ctx, b.TenantID); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(root, b.TenantID)); !os.IsNotExist(err) {
			t.Errorf("B's export tree outlives B: %v", err)
		}
		if got := tree(t, filepath.Join(root, ".deleted")); len(got) != 0 {
			t.Errorf("B's files are still in the root's trash: %v", got)
		}
		assertTree(t, "after B's deletion", treeA, before)
	})
}

// tree returns the files under dir and their contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertTree(t *testing.T, when, dir string, want map[string]string) {
	t.Helper()
	got := tree(t, dir)
	for f, w := range want {
		if g, ok := got[f]; !ok {
			t.Errorf("%s: %s is gone", when, f)
		} else if g != w {
			t.Errorf("%s: %s changed", when, f)
		}
	}
	for f := range got {
		if _, ok := want[f]; !ok {
			t.Errorf("%s: %s appeared in A's tree", when, f)
		}
	}
}
