package verify_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/verify"
	"github.com/tenantdb/tenantdb/tests/harness"
)

func operator(s *harness.Server) verify.Credential {
	return verify.Credential{AccessKeyID: s.Operator.AccessKeyID, SecretAccessKey: s.Operator.SecretAccessKey, Key: s.Operator.Key}
}

// The real server leaks nothing, every family runs attacks, and the run
// leaves nothing behind: the tenants and tables that were there before
// are exactly those there after.
func TestRealServerLeaksNothing(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fairness=%v", fair), func(t *testing.T) {
			leaksNothing(t, harness.Options{Fairness: fair, ExportRoot: t.TempDir()})
		})
	}
}

func leaksNothing(t *testing.T, o harness.Options) {
	srv := harness.Start(t, o)
	ctx := context.Background()
	op := srv.Admin()
	before, err := op.Tenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := verify.Run(ctx, verify.Options{Endpoint: srv.Endpoint, Operator: operator(srv), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Families {
		for _, finding := range f.Findings {
			t.Errorf("%s: %s", f.Name, finding)
		}
		if f.Attempts == 0 || f.Skipped != "" {
			t.Errorf("family %s made %d attempts (skipped: %q)", f.Name, f.Attempts, f.Skipped)
		}
	}
	if rep.Leaks != 0 || rep.Err() != nil {
		t.Errorf("%d leaks in %d attempts against the real server", rep.Leaks, rep.Attempts)
	}
	if len(rep.Families) != len(verify.Families) || rep.Attempts < 300 {
		t.Errorf("%d families, %d attempts", len(rep.Families), rep.Attempts)
	}
	if len(rep.Cleanup) > 0 {
		t.Errorf("cleanup failed: %v", rep.Cleanup)
	}
	t.Logf("%d attempts in %s\n%s", rep.Attempts, rep.Duration, progress.String())

	after, err := op.Tenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("%d tenants after the run, %d before", len(after), len(before))
	}
	assertNoScratchTables(t, srv)
}

func assertNoScratchTables(t *testing.T, srv *harness.Server) {
	t.Helper()
	for _, c := range []harness.Credential{srv.Operator, srv.Default} {
		out, err := srv.Client(c).ListTables(context.Background(), &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range out.TableNames {
			if strings.HasPrefix(n, "tdbverify_") {
				t.Errorf("scratch table %s left behind", n)
			}
		}
	}
}

// A real tenant's data is not touched: its table and item stay, and
// nothing of it reaches the report. Its export under the export root
// stays as it was, and nothing of the scratch tenants' exports remains
// there: deleting them removed their trees.
func TestRealTenantUntouched(t *testing.T) {
	root := t.TempDir()
	srv := harness.Start(t, harness.Options{ExportRoot: root})
	ctx := context.Background()
	db := srv.Client(srv.Default)
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("customers"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	it := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "P0"}, "v": &types.AttributeValueMemberS{Value: "precious"}}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("customers"), Item: it}); err != nil {
		t.Fatal(err)
	}
	exportAndWait(t, db, "customers", "real-bucket")
	exportsBefore := tree(t, root)
	auditBefore, err := srv.Admin().Audit(ctx, srv.Default.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(ctx, verify.Options{Endpoint: srv.Endpoint, Operator: operator(srv)})
	if err != nil || rep.Leaks != 0 {
		t.Fatalf("run: %v, %d leaks", err, rep.Leaks)
	}
	for _, f := range rep.Families {
		if f.Name == "exports" && (f.Attempts == 0 || f.Skipped != "") {
			t.Errorf("the exports family did not run: %+v", f)
		}
	}
	exportsAfter := tree(t, root)
	for f, b := range exportsBefore {
		if exportsAfter[f] != b {
			t.Errorf("the real tenant's export file %s changed or is gone", f)
		}
	}
	for f := range exportsAfter {
		if _, ok := exportsBefore[f]; !ok {
			t.Errorf("the run left %s under the export root", f)
		}
	}
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 1 || ents[0].Name() != strings.ReplaceAll(srv.Default.TenantID, "-", "") {
		t.Errorf("the export root after the run holds %v (%v), want only the real tenant's tree", ents, err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("customers"), Key: map[string]types.AttributeValue{"pk": it["pk"]}, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil || out.Item["v"].(*types.AttributeValueMemberS).Value != "precious" {
		t.Errorf("the real tenant's item after the run: %v %v", out, err)
	}
	auditAfter, err := srv.Admin().Audit(ctx, srv.Default.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// Reading its own audit log and the item are the only changes.
	if len(auditAfter.Records) != len(auditBefore.Records) {
		t.Errorf("the real tenant's audit log grew by %d records during the run", len(auditAfter.Records)-len(auditBefore.Records))
	}
}

// A key that is not the operator's is refused before anything is created.
func TestNeedsTheOperator(t *testing.T) {
	srv := harness.Start(t)
	c := srv.Default
	_, err := verify.Run(context.Background(), verify.Options{Endpoint: srv.Endpoint,
		Operator: verify.Credential{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, Key: c.Key}})
	if err == nil || !strings.Contains(err.Error(), "operator") {
		t.Fatalf("got %v, want a refusal naming the operator", err)
	}
}

// An interrupted run still deletes what it created.
func TestInterruptedRunCleansUp(t *testing.T) {
	srv := harness.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var progress cancelAfter
	progress.n, progress.cancel = 3, cancel
	rep, err := verify.Run(ctx, verify.Options{Endpoint: srv.Endpoint, Operator: operator(srv), Progress: &progress})
	if err == nil {
		t.Fatalf("an interrupted run returned no error: %+v", rep)
	}
	if rep == nil || len(rep.Cleanup) > 0 {
		t.Fatalf("report %+v", rep)
	}
	ts, err := srv.Admin().Tenants(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range ts {
		if strings.HasPrefix(tn.Slug, "tdbverify-") {
			t.Errorf("scratch tenant %s left behind", tn.Slug)
		}
	}
	assertNoScratchTables(t, srv)
}

// cancelAfter cancels after n progress lines (families).
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return len(p), nil
}

// Attempts that get no answer prove nothing: the run says so and fails,
// without calling them leaks.
func TestUnansweredAttemptsAreInconclusive(t *testing.T) {
	srv := harness.Start(t)
	rep, err := verify.Run(context.Background(), verify.Options{Endpoint: srv.Endpoint, Operator: operator(srv), Transport: failGetItem{}, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Leaks != 0 || rep.Inconclusive == 0 || !errors.Is(rep.Err(), verify.ErrInconclusive) {
		for _, f := range rep.Families {
			for _, s := range f.Findings {
				t.Log(f.Name, s)
			}
		}
		t.Fatalf("%d leaks, %d inconclusive, err %v", rep.Leaks, rep.Inconclusive, rep.Err())
	}
}

// failGetItem fails every GetItem request as a network error would.
type failGetItem struct{}

func (failGetItem) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.GetItem" {
		return nil, errors.New("connection reset (injected)")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Against a gateway over a backend (the remote backend over a stand-in
// engine, as in production over DynamoDB or Alternator), given an export
// root: no leak, the exports family runs, and the families whose
// features the gateway does not serve are skipped with the server's
// reason, neither passed nor leaked.
func TestGatewayOverRemoteBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a gateway and an engine")
	}
	srv := harness.Start(t, harness.Options{Remote: true, ExportRoot: t.TempDir()})
	var progress bytes.Buffer
	rep, err := verify.Run(context.Background(), verify.Options{Endpoint: srv.Endpoint, Operator: operator(srv), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d attempts in %s\n%s", rep.Attempts, rep.Duration, progress.String())
	if rep.Leaks != 0 || rep.Inconclusive != 0 || rep.Err() != nil {
		for _, f := range rep.Families {
			for _, finding := range f.Findings {
				t.Errorf("%s: %s", f.Name, finding)
			}
		}
		t.Fatalf("%d leaks, %d inconclusive: %v", rep.Leaks, rep.Inconclusive, rep.Err())
	}
	skipped := map[string]string{}
	for _, f := range rep.Families {
		if f.Skipped != "" {
			skipped[f.Name] = f.Skipped
			if f.Attempts != 0 || f.Leaks != 0 {
				t.Errorf("skipped family %s: %d attempts, %d leaks", f.Name, f.Attempts, f.Leaks)
			}
		} else if f.Attempts == 0 {
			t.Errorf("family %s made no attempt and was not skipped", f.Name)
		}
	}
	for _, run := range []string{"keys", "indexes", "admin-routes", "console", "encryption", "audit", "streams", "backups", "subscriptions", "exports", "aggregates"} {
		if skipped[run] != "" {
			t.Errorf("family %s skipped over the remote backend: %s", run, skipped[run])
		}
	}
	if rep.Skipped != len(skipped) {
		t.Errorf("report: %d skipped, %d families say so", rep.Skipped, len(skipped))
	}
	var text bytes.Buffer
	rep.Write(&text, false)
	for name := range skipped {
		if !strings.Contains(text.String(), "SKIPPED "+name+": ") {
			t.Errorf("the text report does not say why %s was skipped:\n%s", name, text.String())
		}
	}
	assertNoScratchTables(t, srv)
}

// exportAndWait exports table into bucket with c and waits for the
// export to complete.
func exportAndWait(t *testing.T, c *dynamodb.Client, table, bucket string) {
	t.Helper()
	ctx := context.Background()
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := c.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: d.Table.TableArn, S3Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		desc, err := c.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: ex.ExportDescription.ExportArn})
		if err != nil {
			t.Fatal(err)
		}
		if st := desc.ExportDescription.ExportStatus; st != types.ExportStatusInProgress || time.Now().After(deadline) {
			if st != types.ExportStatusCompleted {
				t.Fatalf("export: %s", st)
			}
			return
		}
	}
}

// tree returns the files under dir and their contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
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
