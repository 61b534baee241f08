package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/transfer"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// cli runs the tenantdb command against srv and returns its stdout.
func tcli(t *testing.T, srv *harness.Server, key string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "--endpoint", srv.Endpoint, "--key", key)
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("tenantdb %s: exit %d\n%s%s", strings.Join(args[:2], " "), code, out.String(), errb.String())
	}
	return out.String()
}

// cliErr runs the command and returns its stderr, failing if it succeeds.
func tcliErr(t *testing.T, srv *harness.Server, key string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "--endpoint", srv.Endpoint, "--key", key)
	if code := run(context.Background(), args, &out, &errb); code == 0 {
		t.Fatalf("tenantdb %s succeeded; want an error\n%s", strings.Join(args[:2], " "), out.String())
	}
	return errb.String()
}

// createTickets creates a table with a GSI, an LSI and TTL.
func createTickets(t *testing.T, ddb *dynamodb.Client, name string) {
	t.Helper()
	createTicketsNoTTL(t, ddb, name)
	if _, err := ddb.UpdateTimeToLive(context.Background(), &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires"), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
}

// createTicketsNoTTL creates a table with a GSI and an LSI.
func createTicketsNoTTL(t *testing.T, ddb *dynamodb.Client, name string) {
	t.Helper()
	ctx := context.Background()
	s := types.ScalarAttributeTypeS
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: s}, {AttributeName: aws.String("sk"), AttributeType: s},
			{AttributeName: aws.String("status"), AttributeType: s}, {AttributeName: aws.String("created"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byStatus"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("status"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("created"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"title"}}}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("byCreated"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("created"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// putTickets writes n items of every attribute type into table.
func putTickets(t *testing.T, ddb *dynamodb.Client, table, tag string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		item := map[string]types.AttributeValue{
			"pk":      &types.AttributeValueMemberS{Value: fmt.Sprintf("%s#%d", tag, i%7)},
			"sk":      &types.AttributeValueMemberS{Value: fmt.Sprintf("item#%04d", i)},
			"title":   &types.AttributeValueMemberS{Value: fmt.Sprintf("Ticket \"%d\" <&> ü\n", i)},
			"created": &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.%d", 1700000000+i, i%10)},
			"doc": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"z": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: i%2 == 0}, &types.AttributeValueMemberNULL{Value: true}}},
				"a": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"y": &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}}, "b": &types.AttributeValueMemberB{Value: []byte{0, 1, byte(i)}}}},
			}},
			"tags":    &types.AttributeValueMemberSS{Value: []string{"x", fmt.Sprint(i)}},
			"blobs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, byte(i)}}},
			"expires": &types.AttributeValueMemberN{Value: "4102444800"},
		}
		if i%3 != 0 { // sparse GSI
			item["status"] = &types.AttributeValueMemberS{Value: []string{"OPEN", "CLOSED"}[i%2]}
		}
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
}

// exportLines returns the items of the single export of table under dir,
// sorted, and the export.
func exportLines(t *testing.T, dir string) ([]string, *dynexport.Export) {
	t.Helper()
	dirs, err := dynexport.Find(dir)
	if err != nil || len(dirs) != 1 {
		t.Fatalf("exports under %s: %v, %v", dir, dirs, err)
	}
	x, err := dynexport.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	if err := x.Scan(dynexport.Position{}, func(_ dynexport.Position, item []byte) error {
		lines = append(lines, string(item))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines, x
}

// queryAll returns every page of a Query as canonical JSON lines.
func queryAll(t *testing.T, ddb *dynamodb.Client, in *dynamodb.QueryInput) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewQueryPaginator(ddb, in)
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			b, err := json.Marshal(sdkItem(it))
			if err != nil {
				t.Fatal(err)
			}
			item, err := attr.ParseItemJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(transfer.AppendItem(nil, item)))
		}
	}
	return out
}

// sdkItem converts an SDK item to DynamoDB JSON values.
func sdkItem(it map[string]types.AttributeValue) map[string]any {
	out := map[string]any{}
	for k, v := range it {
		out[k] = sdkValue(v)
	}
	return out
}

func sdkValue(v types.AttributeValue) map[string]any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}
	case *types.AttributeValueMemberL:
		l := []any{}
		for _, e := range v.Value {
			l = append(l, sdkValue(e))
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": sdkItem(v.Value)}
	}
	panic(fmt.Sprintf("unknown attribute value %T", v))
}

// TestExportImportRoundTrip: an export of tenant A (run with the
// operator's key, which mints a session) imported into a new tenant B
// gives byte-identical items, the same definition, and the same Query
// answers on the table and every index.
func TestExportImportRoundTrip(t *testing.T) {
	srv := harness.Start(t)
	a := srv.NewTenant(t, "rt-a", "admin")
	b := srv.NewTenant(t, "rt-b", "admin")
	da, db := srv.Client(a), srv.Client(b)
	createTickets(t, da, "Tickets")
	putTickets(t, da, "Tickets", "A", 240)

	dirA := t.TempDir()
	out := tcli(t, srv, srv.Operator.Key, "tenant", "export", a.TenantID, "--to", dirA, "--json")
	var rep []exportedTable
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep) != 1 || rep[0].Items != 240 || rep[0].Checksum == "" {
		t.Fatalf("export report %s (%v)", out, err)
	}
	linesA, xa := exportLines(t, dirA)
	if xa.Definition == nil || len(xa.Definition.GlobalSecondaryIndexes) != 1 || len(xa.Definition.LocalSecondaryIndexes) != 1 ||
		xa.Definition.TimeToLive == nil || xa.Definition.TimeToLive.AttributeName != "expires" {
		t.Fatalf("definition %+v", xa.Definition)
	}

	// B's own admin key imports it; the table is created from the definition.
	out = tcli(t, srv, b.Key, "tenant", "import", b.TenantID, "--from", dirA, "--json")
	if !strings.Contains(out, `"created_table": true`) || !strings.Contains(out, `"items": 240`) {
		t.Fatalf("import report %s", out)
	}
	// A second run finds the marker and imports nothing again.
	if out = tcli(t, srv, b.Key, "tenant", "import", b.TenantID, "--from", dirA, "--json"); !strings.Contains(out, `"skipped": true`) {
		t.Fatalf("rerun report %s", out)
	}

	dirB := t.TempDir()
	tcli(t, srv, b.Key, "tenant", "export", b.TenantID, "--to", dirB, "--table", "Tickets")
	linesB, xb := exportLines(t, dirB)
	if strings.Join(linesA, "\n") != strings.Join(linesB, "\n") {
		t.Fatalf("items differ after the round trip:\nA %d items, B %d items\nA[0] %s\nB[0] %s", len(linesA), len(linesB), linesA[0], linesB[0])
	}
	da2, _ := json.Marshal(xa.Definition)
	db2, _ := json.Marshal(xb.Definition)
	if string(da2) != string(db2) {
		t.Fatalf("definitions differ:\n%s\n%s", da2, db2)
	}

	// Both are in the tenants' audit logs: the operator's session of A and
	// A's export; B's import, begun and done.
	audited := func(tenant string, actions ...string) {
		t.Helper()
		page, err := srv.Admin().Audit(context.Background(), tenant, client.AuditQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range page.Records {
			seen[r.Action] = true
		}
		for _, a := range actions {
			if !seen[a] {
				t.Errorf("tenant %s's audit log has no %s record", tenant, a)
			}
		}
	}
	audited(a.TenantID, "session.issue", "export")
	audited(b.TenantID, "import.begin", "import.done", "export")

	// The same Query answers on the table and on every index.
	for i := range 7 {
		pk := &types.AttributeValueMemberS{Value: fmt.Sprintf("A#%d", i)}
		for _, ix := range []*string{nil, aws.String("byCreated")} {
			q := &dynamodb.QueryInput{TableName: aws.String("Tickets"), IndexName: ix, KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": pk}}
			if ga, gb := queryAll(t, da, q), queryAll(t, db, q); len(ga) == 0 || !slices.Equal(ga, gb) {
				t.Fatalf("Query %v on %v: A %d items, B %d items", pk.Value, ix, len(ga), len(gb))
			}
		}
	}
	for _, st := range []string{"OPEN", "CLOSED"} {
		q := &dynamodb.QueryInput{TableName: aws.String("Tickets"), IndexName: aws.String("byStatus"), KeyConditionExpression: aws.String("#s = :s"),
			ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: st}}}
		if ga, gb := queryAll(t, da, q), queryAll(t, db, q); len(ga) == 0 || !slices.Equal(ga, gb) {
			t.Fatalf("Query byStatus %s: A %d items, B %d items", st, len(ga), len(gb))
		}
	}
}

// TestImportAWSExport imports the hand-written file set in DynamoDB's
// documented format (internal/dynexport/testdata/seed004) into a table
// created first, and exports it again: the same items.
func TestImportAWSExport(t *testing.T) {
	srv := harness.Start(t)
	c := srv.NewTenant(t, "aws-import", "admin")
	ddb := srv.Client(c)
	s := types.ScalarAttributeTypeS
	if _, err := ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String("Tickets2"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: s}, {AttributeName: aws.String("sk"), AttributeType: s}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}}); err != nil {
		t.Fatal(err)
	}
	from := copyDir(t, "../../internal/dynexport/testdata/seed004")
	// Without --table the export's table (SupportTicket) does not exist
	// and AWS's export carries no definition to create it from.
	if e := tcliErr(t, srv, c.Key, "tenant", "import", c.TenantID, "--from", from); !strings.Contains(e, "no table SupportTicket") {
		t.Fatalf("stderr %s", e)
	}
	tcli(t, srv, c.Key, "tenant", "import", c.TenantID, "--from", from, "--table", "Tickets2", "--dry-run")
	dir := t.TempDir()
	tcli(t, srv, c.Key, "tenant", "export", c.TenantID, "--to", dir)
	if lines, _ := exportLines(t, dir); len(lines) != 0 {
		t.Fatalf("the dry run wrote %d items", len(lines))
	}
	tcli(t, srv, c.Key, "tenant", "import", c.TenantID, "--from", from, "--table", "Tickets2")
	dir = t.TempDir()
	tcli(t, srv, c.Key, "tenant", "export", c.TenantID, "--to", dir)
	got, _ := exportLines(t, dir)
	x, err := dynexport.Open(from + "/AWSDynamoDB/01700000000000-5eed0004")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	x.Scan(dynexport.Position{}, func(_ dynexport.Position, raw []byte) error {
		it, err := attr.ParseItemJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(transfer.AppendItem(nil, it)))
		return nil
	})
	slices.Sort(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestExportAt: `tenant export --at` gives the items of a past time, from
// the table's change log (a stream with old images); a table without one
// is refused with a message saying why.
func TestExportAt(t *testing.T) {
	srv := harness.Start(t)
	c := srv.NewTenant(t, "at", "admin")
	ddb := srv.Client(c)
	ctx := context.Background()
	createTickets(t, ddb, "NoLog")
	e := tcliErr(t, srv, c.Key, "tenant", "export", c.TenantID, "--to", t.TempDir(), "--table", "NoLog", "--at", time.Now().Add(-time.Minute).Format(time.RFC3339))
	if !strings.Contains(e, "InvalidExportTime") || !strings.Contains(e, "no change-log history") {
		t.Fatalf("stderr %s", e)
	}
	createTickets(t, ddb, "Logged")
	if _, err := ddb.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("Logged"),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	time.Sleep(1100 * time.Millisecond) // the log's coverage starts a second after its stream
	e = tcliErr(t, srv, c.Key, "tenant", "export", c.TenantID, "--to", t.TempDir(), "--table", "Logged", "--at", before.Add(-time.Second).Format(time.RFC3339Nano))
	if !strings.Contains(e, "history starts at") {
		t.Fatalf("stderr %s", e)
	}
	putTickets(t, ddb, "Logged", "A", 60)
	then := t.TempDir()
	tcli(t, srv, c.Key, "tenant", "export", c.TenantID, "--to", then, "--table", "Logged")
	time.Sleep(5 * time.Millisecond)
	at := time.Now()
	time.Sleep(5 * time.Millisecond)
	// Changes after at: updates, deletes, new items, an item deleted and
	// put again.
	for i := range 60 {
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("A#%d", i%7)}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("item#%04d", i)}}
		switch i % 4 {
		case 0:
			if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("Logged"), Key: key}); err != nil {
				t.Fatal(err)
			}
		case 1:
			if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Logged"), Key: key, UpdateExpression: aws.String("SET title = :t REMOVE doc"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: "changed"}}}); err != nil {
				t.Fatal(err)
			}
		case 2:
			ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("Logged"), Key: key})
			if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Logged"), Item: key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	putTickets(t, ddb, "Logged", "NEW", 20)
	now := t.TempDir()
	tcli(t, srv, c.Key, "tenant", "export", c.TenantID, "--to", now, "--table", "Logged")
	past := t.TempDir()
	tcli(t, srv, c.Key, "tenant", "export", c.TenantID, "--to", past, "--table", "Logged", "--at", at.Format(time.RFC3339Nano))
	want, _ := exportLines(t, then)
	got, x := exportLines(t, past)
	cur, _ := exportLines(t, now)
	if slices.Equal(cur, want) {
		t.Fatal("the changes after the time changed nothing; the test proves nothing")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("export --at has %d items, the state then %d", len(got), len(want))
	}
	if x.Summary.ExportTime != dynexport.FormatTime(at) {
		t.Errorf("exportTime %s, want %s", x.Summary.ExportTime, dynexport.FormatTime(at))
	}
}

// copyDir copies a directory tree into a temporary one (imports keep
// their progress markers beside the exports).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func errCodeOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// scanAll returns a table's items as sorted canonical JSON lines.
func scanAll(t *testing.T, ddb *dynamodb.Client, table string) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			b, _ := json.Marshal(sdkItem(it))
			item, err := attr.ParseItemJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(transfer.AppendItem(nil, item)))
		}
	}
	slices.Sort(out)
	return out
}

// TestAPIExportImport: DynamoDB's ExportTableToPointInTime into a bucket of
// the export root, then ImportTable of its data files into a new table,
// through aws-sdk-go-v2: the same items; and the operations' refusals.
func TestAPIExportImport(t *testing.T) {
	root := t.TempDir()
	srv := harness.Start(t, harness.Options{ExportRoot: root})
	a := srv.NewTenant(t, "api-xfer", "admin")
	ddb := srv.Client(a)
	ctx := context.Background()
	createTickets(t, ddb, "Tickets")
	putTickets(t, ddb, "Tickets", "A", 120)
	d, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("Tickets")})
	if err != nil {
		t.Fatal(err)
	}
	arn := d.Table.TableArn

	for _, c := range []struct {
		in   *dynamodb.ExportTableToPointInTimeInput
		code string
	}{
		{&dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String("backups"), ExportTime: aws.Time(time.Now().Add(-time.Hour))}, "InvalidExportTimeException"},
		{&dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String("backups"), ExportFormat: types.ExportFormatIon}, "ValidationException"},
		{&dynamodb.ExportTableToPointInTimeInput{TableArn: aws.String(strings.Replace(*arn, "Tickets", "Nope", 1)), S3Bucket: aws.String("backups")}, "TableNotFoundException"},
		{&dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String("Bad_Bucket")}, "ValidationException"},
	} {
		if _, err := ddb.ExportTableToPointInTime(ctx, c.in); errCodeOf(err) != c.code {
			t.Errorf("ExportTableToPointInTime %+v: %v, want %s", c.in, err, c.code)
		}
	}

	ex, err := ddb.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: arn, S3Bucket: aws.String("backups"), S3Prefix: aws.String("daily/1")})
	if err != nil {
		t.Fatal(err)
	}
	if ex.ExportDescription.ExportStatus != types.ExportStatusInProgress {
		t.Fatalf("export answered %s", ex.ExportDescription.ExportStatus)
	}
	var de *types.ExportDescription
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		out, err := ddb.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: ex.ExportDescription.ExportArn})
		if err != nil {
			t.Fatal(err)
		}
		if de = out.ExportDescription; de.ExportStatus != types.ExportStatusInProgress || time.Now().After(deadline) {
			break
		}
	}
	if de.ExportStatus != types.ExportStatusCompleted || aws.ToInt64(de.ItemCount) != 120 || aws.ToString(de.ExportManifest) == "" {
		t.Fatalf("export: %s %d items, manifest %q, %s", de.ExportStatus, aws.ToInt64(de.ItemCount), aws.ToString(de.ExportManifest), aws.ToString(de.FailureMessage))
	}
	id := (*de.ExportArn)[strings.LastIndex(*de.ExportArn, "/")+1:]
	if _, err := os.Stat(filepath.Join(root, a.TenantID, "live", "backups", "daily", "1", "AWSDynamoDB", id, "manifest-summary.json")); err != nil {
		t.Fatal(err)
	}
	if l, err := ddb.ListExports(ctx, &dynamodb.ListExportsInput{TableArn: arn}); err != nil || len(l.ExportSummaries) != 1 {
		t.Fatalf("ListExports: %+v %v", l, err)
	}

	s := types.ScalarAttributeTypeS
	imp, err := ddb.ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson, InputCompressionType: types.InputCompressionTypeGzip,
		S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("backups"), S3KeyPrefix: aws.String("daily/1/AWSDynamoDB/" + id + "/data")},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("Restored"), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: s}, {AttributeName: aws.String("sk"), AttributeType: s}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}}})
	if err != nil {
		t.Fatal(err)
	}
	var di *types.ImportTableDescription
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		out, err := ddb.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: imp.ImportTableDescription.ImportArn})
		if err != nil {
			t.Fatal(err)
		}
		if di = out.ImportTableDescription; di.ImportStatus != types.ImportStatusInProgress || time.Now().After(deadline) {
			break
		}
	}
	if di.ImportStatus != types.ImportStatusCompleted || di.ImportedItemCount != 120 || di.ErrorCount != 0 {
		t.Fatalf("import: %s, %d items, %d errors, %s", di.ImportStatus, di.ImportedItemCount, di.ErrorCount, aws.ToString(di.FailureMessage))
	}
	if got, want := scanAll(t, ddb, "Restored"), scanAll(t, ddb, "Tickets"); !slices.Equal(got, want) {
		t.Fatalf("Restored has %d items, Tickets %d", len(got), len(want))
	}
	if l, err := ddb.ListImports(ctx, &dynamodb.ListImportsInput{}); err != nil || len(l.ImportSummaryList) != 1 {
		t.Fatalf("ListImports: %+v %v", l, err)
	}
	// ImportTable into an existing table is refused, as in DynamoDB.
	_, err = ddb.ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
		S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("backups")},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("Restored"), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: s}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}})
	if errCodeOf(err) != "ResourceInUseException" {
		t.Errorf("ImportTable into an existing table: %v", err)
	}
}

// TestAPIExportWithoutRoot: without --export-root the operations say so.
func TestAPIExportWithoutRoot(t *testing.T) {
	srv := harness.Start(t)
	a := srv.NewTenant(t, "no-root", "admin")
	ddb := srv.Client(a)
	_, err := ddb.ListExports(context.Background(), &dynamodb.ListExportsInput{})
	if errCodeOf(err) != "ValidationException" || !strings.Contains(err.Error(), "--export-root") {
		t.Fatalf("ListExports without a root: %v", err)
	}
}

// writeExport writes n items of table name (with its definition) under dir.
func writeExport(t *testing.T, dir, name, tag string, n int) {
	t.Helper()
	now := time.Now()
	def := &dynexport.Definition{TableName: name, BillingMode: "PAY_PER_REQUEST",
		AttributeDefinitions: []dynexport.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		KeySchema:            []dynexport.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}}}
	w, err := dynexport.Create(dir, dynexport.WriterOptions{ExportID: dynexport.NewExportID(now), Start: now, ExportTime: now, Definition: def})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		item := fmt.Sprintf(`{"pk":{"S":"%s-%d"},"v":{"S":"%s"}}`, tag, i, strings.Repeat("x", 100))
		if err := w.Add([]byte(item), int64(len(item))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(now); err != nil {
		t.Fatal(err)
	}
}

// TestImportQuotas: an import's writes are admitted by the tenant's
// quotas (a tight write quota throttles them, the import waits and
// completes), unless --lift-quotas lifts them for the import.
func TestImportQuotas(t *testing.T) {
	srv := harness.Start(t, harness.Options{Fairness: true})
	c := srv.NewTenant(t, "quota-import", "admin")
	units, burst := 100.0, 1.0
	if _, err := srv.Admin().SetQuota(context.Background(), c.TenantID, "", client.QuotaUpdate{WriteUnits: &units, BurstSeconds: &burst}); err != nil {
		t.Fatal(err)
	}
	throttled := func() int64 {
		t.Helper()
		time.Sleep(1500 * time.Millisecond) // throttles reach usage at the next flush (1 s)
		u, err := srv.Admin().Usage(context.Background(), c.TenantID, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return u.ThrottledRequests
	}
	quoted, lifted := t.TempDir(), t.TempDir()
	writeExport(t, quoted, "Quoted", "a", 500)
	writeExport(t, lifted, "Quoted", "b", 500)
	tcli(t, srv, c.Key, "tenant", "import", c.TenantID, "--from", quoted)
	after := throttled()
	if after == 0 {
		t.Fatal("an import of 500 items at 100 write units/s was never throttled: the quota did not apply")
	}
	tcli(t, srv, c.Key, "tenant", "import", c.TenantID, "--from", lifted, "--lift-quotas")
	if again := throttled(); again != after {
		t.Fatalf("the import with --lift-quotas was throttled %d times", again-after)
	}
	if got := scanAll(t, srv.Client(c), "Quoted"); len(got) != 1000 {
		t.Fatalf("the table holds %d items, want 1000", len(got))
	}
}

// TestImportTableClientToken: ImportTable retried with its ClientToken
// answers the import it started instead of starting another.
func TestImportTableClientToken(t *testing.T) {
	root := t.TempDir()
	srv := harness.Start(t, harness.Options{ExportRoot: root})
	a := srv.NewTenant(t, "import-token", "admin")
	ddb := srv.Client(a)
	writeExport(t, filepath.Join(root, a.TenantID, "live", "src-bucket"), "Tokened", "a", 10)
	in := &dynamodb.ImportTableInput{ClientToken: aws.String("token-1"), InputFormat: types.InputFormatDynamodbJson,
		S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("src-bucket")},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("Tokened"), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}}
	first, err := ddb.ImportTable(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ddb.ImportTable(context.Background(), in)
	if err != nil || aws.ToString(again.ImportTableDescription.ImportArn) != aws.ToString(first.ImportTableDescription.ImportArn) {
		t.Fatalf("retry: %v, %v", again, err)
	}
	if l, err := ddb.ListImports(context.Background(), &dynamodb.ListImportsInput{}); err != nil || len(l.ImportSummaryList) != 1 {
		t.Fatalf("ListImports: %+v %v", l, err)
	}
}

// TestTransfersAcrossGateways: on a fleet of two gateways over a remote
// engine, tenant A's export through gateway 1 (with the operator's key,
// which mints a session) imported into tenant B through gateway 2 gives
// byte-identical items and the same definition, read back by an export of
// B through gateway 1; an export at a past time is refused saying why.
func TestTransfersAcrossGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	g1, g2 := f.Gateways[0], f.Gateways[1]
	a := g1.NewTenant(t, "gw-rt-a", "admin")
	b := g2.NewTenant(t, "gw-rt-b", "admin")
	createTickets(t, g1.Client(a), "Tickets")
	putTickets(t, g2.Client(a), "Tickets", "A", 240)

	dirA := t.TempDir()
	out := tcli(t, g1, f.Operator.Key, "tenant", "export", a.TenantID, "--to", dirA, "--json")
	var rep []exportedTable
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep) != 1 || rep[0].Items != 240 {
		t.Fatalf("export report %s (%v)", out, err)
	}
	linesA, xa := exportLines(t, dirA)
	out = tcli(t, g2, b.Key, "tenant", "import", b.TenantID, "--from", dirA, "--json")
	if !strings.Contains(out, `"created_table": true`) || !strings.Contains(out, `"items": 240`) {
		t.Fatalf("import report %s", out)
	}
	dirB := t.TempDir()
	tcli(t, g1, b.Key, "tenant", "export", b.TenantID, "--to", dirB, "--table", "Tickets")
	linesB, xb := exportLines(t, dirB)
	if strings.Join(linesA, "\n") != strings.Join(linesB, "\n") {
		t.Fatalf("items differ after the round trip across gateways: A %d items, B %d items", len(linesA), len(linesB))
	}
	da, _ := json.Marshal(xa.Definition)
	db, _ := json.Marshal(xb.Definition)
	if string(da) != string(db) {
		t.Fatalf("definitions differ:\n%s\n%s", da, db)
	}
	e := tcliErr(t, g2, a.Key, "tenant", "export", a.TenantID, "--to", t.TempDir(), "--at", time.Now().Add(-time.Minute).Format(time.RFC3339))
	if !strings.Contains(e, "gateway exports only the current items") {
		t.Fatalf("export at a past time: %s", e)
	}
}

// TestAPIExportAt: ExportTableToPointInTime with a past ExportTime exports
// the items of that time, read back from the files.
func TestAPIExportAt(t *testing.T) {
	root := t.TempDir()
	srv := harness.Start(t, harness.Options{ExportRoot: root})
	a := srv.NewTenant(t, "api-at", "admin")
	ddb := srv.Client(a)
	ctx := context.Background()
	in := &dynamodb.CreateTableInput{TableName: aws.String("Hist"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}}
	out, err := ddb.CreateTable(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the log's coverage starts a second after its stream
	put := func(pk, v string) {
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Hist"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "then")
	put("b", "then")
	time.Sleep(5 * time.Millisecond)
	at := time.Now().Truncate(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	put("a", "now")
	put("c", "now")
	ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("Hist"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "b"}}})
	ex, err := ddb.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: out.TableDescription.TableArn, S3Bucket: aws.String("hist"), ExportTime: aws.Time(at)})
	if err != nil {
		t.Fatal(err)
	}
	var de *types.ExportDescription
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		o, err := ddb.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: ex.ExportDescription.ExportArn})
		if err != nil {
			t.Fatal(err)
		}
		if de = o.ExportDescription; de.ExportStatus != types.ExportStatusInProgress || time.Now().After(deadline) {
			break
		}
	}
	if de.ExportStatus != types.ExportStatusCompleted || !aws.ToTime(de.ExportTime).Equal(at) {
		t.Fatalf("export: %s at %v (want %v): %s", de.ExportStatus, aws.ToTime(de.ExportTime), at, aws.ToString(de.FailureMessage))
	}
	got, _ := exportLines(t, filepath.Join(root, a.TenantID, "live", "hist"))
	want := []string{`{"pk":{"S":"a"},"v":{"S":"then"}}`, `{"pk":{"S":"b"},"v":{"S":"then"}}`}
	if !slices.Equal(got, want) {
		t.Fatalf("export at %v: %v, want %v", at, got, want)
	}
}

// TestTransfersDynalite: on a gateway over dynalite (no transactions, no
// streams, no TTL), ExportTableToPointInTime, DescribeExport, ImportTable and
// DescribeImport work and the CLI's export reads the imported table's
// items back, identical to the source's. It skips, saying why, without
// node or dynalite.
func TestTransfersDynalite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts dynalite and a gateway")
	}
	srv := harness.Start(t, harness.Options{Remote: true, RemoteEngine: harness.StartDynalite(t), ExportRoot: t.TempDir()})
	a := srv.NewTenant(t, "dl-xfer", "admin")
	ddb := srv.Client(a)
	ctx := context.Background()
	createTicketsNoTTL(t, ddb, "Tickets") // dynalite has no TTL
	putTickets(t, ddb, "Tickets", "A", 60)
	d, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("Tickets")})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := ddb.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: d.Table.TableArn, S3Bucket: aws.String("dl-bucket"), S3Prefix: aws.String("p")})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		out, err := ddb.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: ex.ExportDescription.ExportArn})
		if err != nil {
			t.Fatal(err)
		}
		if e := out.ExportDescription; e.ExportStatus != types.ExportStatusInProgress {
			if e.ExportStatus != types.ExportStatusCompleted || aws.ToInt64(e.ItemCount) != 60 {
				t.Fatalf("export: %s %d (%s)", e.ExportStatus, aws.ToInt64(e.ItemCount), aws.ToString(e.FailureMessage))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the export did not end")
		}
	}
	imp, err := ddb.ImportTable(ctx, &dynamodb.ImportTableInput{InputFormat: types.InputFormatDynamodbJson,
		S3BucketSource: &types.S3BucketSource{S3Bucket: aws.String("dl-bucket"), S3KeyPrefix: aws.String("p")},
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("Copy"), KeySchema: d.Table.KeySchema, BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}}}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		out, err := ddb.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: imp.ImportTableDescription.ImportArn})
		if err != nil {
			t.Fatal(err)
		}
		if i := out.ImportTableDescription; i.ImportStatus != types.ImportStatusInProgress {
			if i.ImportStatus != types.ImportStatusCompleted || i.ImportedItemCount != 60 {
				t.Fatalf("import: %s %d (%s)", i.ImportStatus, i.ImportedItemCount, aws.ToString(i.FailureMessage))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the import did not end")
		}
	}
	src, copied := t.TempDir(), t.TempDir()
	tcli(t, srv, a.Key, "tenant", "export", a.TenantID, "--to", src, "--table", "Tickets")
	tcli(t, srv, a.Key, "tenant", "export", a.TenantID, "--to", copied, "--table", "Copy")
	l1, _ := exportLines(t, src)
	l2, _ := exportLines(t, copied)
	if strings.Join(l1, "\n") != strings.Join(l2, "\n") {
		t.Fatalf("the imported table's items differ from the source's (%d and %d items)", len(l1), len(l2))
	}
}
