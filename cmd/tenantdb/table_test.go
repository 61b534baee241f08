package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/cfn"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// tableServer starts a server and writes its operator key to a
// credentials file, as serve does; it returns the flags that point the CLI
// at them.
func tableServer(t *testing.T) (*harness.Server, []string) {
	t.Helper()
	srv := harness.Start(t)
	k, err := auth.ParseKey(srv.Operator.Key)
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "operator-credentials")
	if err := auth.WriteCredentialsFile(creds, auth.OperatorProfile, k, "", ""); err != nil {
		t.Fatal(err)
	}
	return srv, []string{"--endpoint", srv.Endpoint, "--credentials", creds}
}

func writeTemplate(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func applyJSON(t *testing.T, flags []string, args ...string) (applyReport, string, int) {
	t.Helper()
	out, errOut, code := cli(t, append(append([]string{"table", "apply", "--json"}, flags...), args...)...)
	var rep applyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("table apply --json printed %q (stderr %q): %v", out, errOut, err)
	}
	return rep, errOut, code
}

const ticketsTemplate = `Resources:
  Tickets:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: tickets
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - {AttributeName: pk, AttributeType: S}
        - {AttributeName: sk, AttributeType: S}
        - {AttributeName: status, AttributeType: S}
      KeySchema:
        - {AttributeName: pk, KeyType: HASH}
        - {AttributeName: sk, KeyType: RANGE}
      GlobalSecondaryIndexes:
        - IndexName: byStatus
          KeySchema: [{AttributeName: status, KeyType: HASH}]
          Projection: {ProjectionType: KEYS_ONLY}
      TimeToLiveSpecification: {AttributeName: expiresAt, Enabled: true}
      Tags:
        - {Key: tenantdb:isolation, Value: namespace}
        - {Key: team, Value: support}
`

func TestTableApply(t *testing.T) {
	srv, flags := tableServer(t)
	ctx := context.Background()

	// The seed 002 template: created, then unchanged.
	seed := filepath.Join("..", "..", "internal", "cfn", "testdata", "seed002_app_data.yaml")
	out, errOut, code := cli(t, append([]string{"table", "apply", "-f", seed}, flags...)...)
	if code != 0 || !strings.HasPrefix(out, "created") || !strings.Contains(out, "app_data") || !strings.Contains(out, "CreateTable") {
		t.Fatalf("first apply: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	rep, _, code := applyJSON(t, flags, "-f", seed)
	if code != 0 || len(rep.Tables) != 1 || rep.Tables[0].Status != cfn.Unchanged || rep.Tables[0].TableName != "app_data" ||
		rep.Tables[0].TableARN == "" || len(rep.Tables[0].Actions) != 0 {
		t.Fatalf("second apply: code %d, %+v", code, rep)
	}

	// A tenant sees the shared table, its GSIs and tags.
	c := srv.Client(srv.Default)
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("app_data")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.Table.GlobalSecondaryIndexes); n != 3 {
		t.Errorf("app_data has %d GSIs, want 3", n)
	}

	// TTL is enabled after CreateTable; TTL and tags are brought in line
	// later; a changed index is a conflict that changes nothing.
	p := writeTemplate(t, ticketsTemplate)
	rep, _, code = applyJSON(t, flags, "-f", p)
	if code != 0 || rep.Tables[0].Status != cfn.Created || strings.Join(rep.Tables[0].Actions, ",") != "CreateTable,UpdateTimeToLive" {
		t.Fatalf("apply tickets: code %d, %+v", code, rep)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("tickets")})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != "ENABLED" || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "expiresAt" {
		t.Fatalf("DescribeTimeToLive: %+v, %v", ttl, err)
	}
	p = writeTemplate(t, strings.NewReplacer("expiresAt", "ttl", "Value: support", "Value: helpdesk").Replace(ticketsTemplate))
	rep, _, code = applyJSON(t, flags, "-f", p)
	if code != 0 || rep.Tables[0].Status != cfn.Updated ||
		strings.Join(rep.Tables[0].Actions, ",") != "TagResource,UpdateTimeToLive,UpdateTimeToLive" {
		t.Fatalf("apply changed TTL and tag: code %d, %+v", code, rep)
	}
	ttl, _ = c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("tickets")})
	if aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Errorf("TTL attribute %v, want ttl", ttl.TimeToLiveDescription.AttributeName)
	}
	p = writeTemplate(t, strings.NewReplacer("KEYS_ONLY", "ALL", "namespace", "silo").Replace(ticketsTemplate))
	out, errOut, code = cli(t, append([]string{"table", "apply", "-f", p}, flags...)...)
	if code != 1 || !strings.HasPrefix(out, "conflict") ||
		!strings.Contains(out, "global secondary index byStatus projection: the table has KEYS_ONLY, the template ALL") ||
		!strings.Contains(errOut, "1 of 1 tables not applied") {
		t.Fatalf("conflicting apply: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	ttl, _ = c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("tickets")})
	if aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Errorf("a conflicting apply changed TTL to %v", ttl.TimeToLiveDescription.AttributeName)
	}

	// --tenant-key: the table belongs to the tenant, no other tenant sees it.
	other := srv.NewTenant(t, "other", "admin")
	p = writeTemplate(t, strings.ReplaceAll(ticketsTemplate, "TableName: tickets", "TableName: own_tickets"))
	rep, _, code = applyJSON(t, flags, "-f", p, "--tenant-key", srv.Default.Key)
	if code != 0 || rep.Tables[0].Status != cfn.Created {
		t.Fatalf("apply with --tenant-key: code %d, %+v", code, rep)
	}
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("own_tickets")}); err != nil {
		t.Errorf("the owner cannot describe its table: %v", err)
	}
	if _, err := srv.Client(other).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("own_tickets")}); err == nil {
		t.Errorf("another tenant sees a tenant's own table")
	}
	// An app key may not create tables: the server's AccessDenied is shown.
	app := srv.NewKey(t, srv.Default.TenantID, "app")
	p = writeTemplate(t, strings.ReplaceAll(ticketsTemplate, "TableName: tickets", "TableName: app_tickets"))
	out, errOut, code = cli(t, append([]string{"table", "apply", "-f", p, "--tenant-key", app.Key}, flags...)...)
	if code != 1 || !strings.HasPrefix(out, "failed") || !strings.Contains(out, "AccessDeniedException") {
		t.Fatalf("apply with an app key: code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestTableApplyErrors(t *testing.T) {
	_, flags := tableServer(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "-f TEMPLATE is required"},
		{"missing file", []string{"-f", filepath.Join(t.TempDir(), "nope.yaml")}, "no such file"},
		{"malformed", []string{"-f", writeTemplate(t, "Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties:\n      KeySchema: x\n")},
			"template.yaml: cfn: line 5, column 18: Resources.T.Properties.KeySchema: expected a list"},
		{"no tables", []string{"-f", writeTemplate(t, "Resources:\n  Q: {Type: AWS::SQS::Queue}\n")}, "has no AWS::DynamoDB::Table resources"},
		{"bad parameter", []string{"-f", writeTemplate(t, ticketsTemplate), "--parameter", "novalue"}, `want NAME=VALUE, got "novalue"`},
		{"bad key", []string{"-f", writeTemplate(t, ticketsTemplate), "--tenant-key", "sk_nonsense"}, "not a tenantdb key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := cli(t, append(append([]string{"table", "apply"}, flags...), c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Fatalf("code %d, stderr %q; want failure containing %q", code, errOut, c.want)
			}
		})
	}
}

// TestTableApplyRefusesMissingFeatures: a template that enables what
// tenantdb does not have yet (point-in-time recovery, encryption at rest)
// is refused with a message saying so, and creates no table;
// the same properties disabled are accepted.
func TestTableApplyRefusesMissingFeatures(t *testing.T) {
	srv, flags := tableServer(t)
	ctx := context.Background()
	op := srv.Client(srv.Operator)
	for name, c := range map[string]struct{ prop, want string }{
		"pitr": {"      PointInTimeRecoverySpecification: {PointInTimeRecoveryEnabled: true}\n", "point-in-time recovery is per tenant in tenantdb"},
		"sse":  {"      SSESpecification: {SSEEnabled: true, SSEType: KMS}\n", "tenantdb has no KMS keys"},
	} {
		p := writeTemplate(t, ticketsTemplate+c.prop)
		out, errOut, code := cli(t, append([]string{"table", "apply", "-f", p}, flags...)...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "ignored") {
			t.Errorf("%s: code %d, stdout %q, stderr %q; want an error containing %q", name, code, out, errOut, c.want)
		}
		if _, err := op.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("tickets")}); err == nil {
			t.Fatalf("%s: the refused template created table tickets", name)
		}
	}
	p := writeTemplate(t, ticketsTemplate+"      PointInTimeRecoverySpecification: {PointInTimeRecoveryEnabled: false}\n      SSESpecification: {SSEEnabled: false}\n")
	if out, errOut, code := cli(t, append([]string{"table", "apply", "-f", p}, flags...)...); code != 0 || !strings.HasPrefix(out, "created") {
		t.Fatalf("disabled features: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	d, err := op.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("tickets")})
	// NB: every table is encrypted under its tenants' keys, whatever the template says.
	if err != nil || d.Table.SSEDescription == nil || d.Table.SSEDescription.SSEType != "AES256" || d.Table.StreamSpecification != nil {
		t.Fatalf("tickets: %v; SSE %v, stream %v", err, d.Table.SSEDescription, d.Table.StreamSpecification)
	}
}

// TestTableApplyStream: a template's StreamSpecification creates the
// table with a stream.
func TestTableApplyStream(t *testing.T) {
	srv, flags := tableServer(t)
	p := writeTemplate(t, ticketsTemplate+"      StreamSpecification: {StreamViewType: NEW_IMAGE}\n")
	if out, errOut, code := cli(t, append([]string{"table", "apply", "-f", p}, flags...)...); code != 0 || !strings.HasPrefix(out, "created") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
	d, err := srv.Client(srv.Operator).DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("tickets")})
	if err != nil || d.Table.StreamSpecification == nil || d.Table.StreamSpecification.StreamViewType != "NEW_IMAGE" || aws.ToString(d.Table.LatestStreamArn) == "" {
		t.Fatalf("tickets: %v; stream %+v, arn %q", err, d.Table.StreamSpecification, aws.ToString(d.Table.LatestStreamArn))
	}
}
