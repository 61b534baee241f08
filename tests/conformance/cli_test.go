package conformance

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// awsCLI runs `aws dynamodb --endpoint-url <srv> args...` with credential c
// and decodes its JSON output (nil for none).
func awsCLI(t *testing.T, srv *harness.Server, c harness.Credential, args ...string) map[string]any {
	t.Helper()
	cmd := exec.CommandContext(ctxT(t), "aws", append([]string{"dynamodb", "--endpoint-url", srv.Endpoint, "--output", "json"}, args...)...)
	cmd.Env = srv.Env(c)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("aws dynamodb %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if len(strings.TrimSpace(string(out))) == 0 {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("aws dynamodb %s: output is not JSON: %v\n%s", args[0], err, out)
	}
	return v
}

func needAWSCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("aws"); err != nil {
		t.Skip("the AWS CLI is not installed (.ci/run installs it)")
	}
}

func items(t *testing.T, out map[string]any) []map[string]any {
	t.Helper()
	raw, _ := out["Items"].([]any)
	var its []map[string]any
	for _, r := range raw {
		its = append(its, r.(map[string]any))
	}
	return its
}

func attrS(it map[string]any, name string) string {
	v, _ := it[name].(map[string]any)
	s, _ := v["S"].(string)
	return s
}

// TestAWSCLI runs the commands of seed 004 ("Amazon DynamoDB data modeling
// for Multi-Tenancy – Part 2") verbatim, with --endpoint-url, on the
// SupportTicket table with GSI1 on tenant_status/resolver.
func TestAWSCLI(t *testing.T) {
	needAWSCLI(t)
	t.Parallel()
	srv := harness.Start(t)
	c := srv.Default

	out := awsCLI(t, srv, c, "create-table", "--table-name", "SupportTicket",
		"--attribute-definitions", "AttributeName=pk,AttributeType=S", "AttributeName=sk,AttributeType=S",
		"AttributeName=tenant_status,AttributeType=S", "AttributeName=resolver,AttributeType=S",
		"--key-schema", "AttributeName=pk,KeyType=HASH", "AttributeName=sk,KeyType=RANGE",
		"--global-secondary-indexes", `[{"IndexName":"GSI1","KeySchema":[{"AttributeName":"tenant_status","KeyType":"HASH"},{"AttributeName":"resolver","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}]`,
		"--billing-mode", "PAY_PER_REQUEST")
	if d, _ := out["TableDescription"].(map[string]any); d["TableStatus"] != "ACTIVE" {
		t.Fatalf("create-table: %v", out)
	}

	// The example data: two tickets of tenant 1 with comments, one ticket of
	// tenant 2, and tenant 1's aggregates.
	var puts []string
	for _, it := range []string{
		`{"pk":{"S":"TENANT#1|TICKET#1"},"sk":{"S":"SUMMARY"},"tenant_status":{"S":"TENANT#1|OPEN"},"resolver":{"S":"johnd"},"title":{"S":"Printer on fire"}}`,
		`{"pk":{"S":"TENANT#1|TICKET#1"},"sk":{"S":"COMMENT#2024-01-01T10:00"},"body":{"S":"It is still burning"}}`,
		`{"pk":{"S":"TENANT#1|TICKET#1"},"sk":{"S":"COMMENT#2024-01-01T11:00"},"body":{"S":"Fire brigade called"}}`,
		`{"pk":{"S":"TENANT#1|TICKET#2"},"sk":{"S":"SUMMARY"},"tenant_status":{"S":"TENANT#1|OPEN"},"resolver":{"S":"janed"},"title":{"S":"Login fails"}}`,
		`{"pk":{"S":"TENANT#2|TICKET#1"},"sk":{"S":"SUMMARY"},"tenant_status":{"S":"TENANT#2|OPEN"},"resolver":{"S":"johnd"},"title":{"S":"Other tenant"}}`,
		`{"pk":{"S":"TENANT#1|AGGREGATE"},"sk":{"S":"STATUS#OPEN"},"count":{"N":"2"}}`,
	} {
		puts = append(puts, `{"PutRequest":{"Item":`+it+`}}`)
	}
	out = awsCLI(t, srv, c, "batch-write-item", "--request-items", `{"SupportTicket":[`+strings.Join(puts, ",")+`]}`)
	if u, _ := out["UnprocessedItems"].(map[string]any); len(u) != 0 {
		t.Fatalf("batch-write-item left %v", u)
	}
	awsCLI(t, srv, c, "put-item", "--table-name", "SupportTicket",
		"--item", `{"pk":{"S":"TENANT#1|AGGREGATE"},"sk":{"S":"STATUS#CLOSED"},"count":{"N":"0"}}`)

	// "get a single ticket and all comments"
	out = awsCLI(t, srv, c, "query",
		"--table-name", "SupportTicket",
		"--key-condition-expression", "pk = :v1",
		"--expression-attribute-values", `{":v1": {"S": "TENANT#1|TICKET#1"}}`,
		"--return-consumed-capacity", "TOTAL")
	if its := items(t, out); len(its) != 3 || attrS(its[0], "sk") != "COMMENT#2024-01-01T10:00" || attrS(its[2], "sk") != "SUMMARY" {
		t.Errorf("ticket and comments: %v", its)
	}
	if cc, _ := out["ConsumedCapacity"].(map[string]any); cc == nil || cc["TableName"] != "SupportTicket" {
		t.Errorf("ConsumedCapacity = %v", out["ConsumedCapacity"])
	}

	// "view a single ticket summary"
	out = awsCLI(t, srv, c, "query",
		"--table-name", "SupportTicket",
		"--key-condition-expression", "pk = :v1 and sk = :v2",
		"--expression-attribute-values", `{":v1": {"S": "TENANT#1|TICKET#1"}, ":v2": {"S": "SUMMARY"}}`,
		"--return-consumed-capacity", "TOTAL")
	if its := items(t, out); len(its) != 1 || attrS(its[0], "title") != "Printer on fire" {
		t.Errorf("summary: %v", its)
	}

	// "get all open tickets"
	out = awsCLI(t, srv, c, "query",
		"--table-name", "SupportTicket",
		"--index-name", "GSI1",
		"--key-condition-expression", "tenant_status = :v1",
		"--expression-attribute-values", `{":v1": {"S": "TENANT#1|OPEN"}}`,
		"--return-consumed-capacity", "TOTAL")
	if its := items(t, out); len(its) != 2 || attrS(its[0], "resolver") != "janed" || attrS(its[1], "resolver") != "johnd" {
		t.Errorf("open tickets: %v", its)
	}

	// "view all open tickets for a given resolver"
	out = awsCLI(t, srv, c, "query",
		"--table-name", "SupportTicket",
		"--index-name", "GSI1",
		"--key-condition-expression", "tenant_status = :v1 AND resolver = :v2",
		"--expression-attribute-values", `{":v1": {"S": "TENANT#1|OPEN"}, ":v2": {"S": "johnd"}}`,
		"--return-consumed-capacity", "TOTAL")
	if its := items(t, out); len(its) != 1 || attrS(its[0], "pk") != "TENANT#1|TICKET#1" {
		t.Errorf("open tickets of johnd: %v", its)
	}

	// "change the status of multiple tickets atomically" (note the seed's
	// leading space in " TENANT#1|CLOSED", kept verbatim).
	awsCLI(t, srv, c, "transact-write-items",
		"--transact-items", `[{"Update": {
                "TableName": "SupportTicket",
                "Key": {
                    "pk": {"S": "TENANT#1|TICKET#1"},
                    "sk": {"S": "SUMMARY"}
                },
                "UpdateExpression": "SET tenant_status = :ts",
                "ExpressionAttributeValues": {
                    ":ts": {"S": " TENANT#1|CLOSED"}
                }
            }},
            {"Update": {
                "TableName": "SupportTicket",
                "Key": {
                    "pk": {"S": "TENANT#1|TICKET#2"},
                    "sk": {"S": "SUMMARY"}
                },
                "UpdateExpression": "SET tenant_status = :ts",
                "ExpressionAttributeValues": {
                    ":ts": {"S": " TENANT#1|CLOSED"}
                }
            }}]`,
		"--return-consumed-capacity", "TOTAL")
	out = awsCLI(t, srv, c, "query", "--table-name", "SupportTicket", "--index-name", "GSI1",
		"--key-condition-expression", "tenant_status = :v1",
		"--expression-attribute-values", `{":v1": {"S": "TENANT#1|OPEN"}}`)
	if its := items(t, out); len(its) != 0 {
		t.Errorf("open tickets after closing both: %v", its)
	}
	out = awsCLI(t, srv, c, "query", "--table-name", "SupportTicket", "--index-name", "GSI1",
		"--key-condition-expression", "tenant_status = :v1",
		"--expression-attribute-values", `{":v1": {"S": " TENANT#1|CLOSED"}}`)
	if its := items(t, out); len(its) != 2 {
		t.Errorf("closed tickets: %v", its)
	}

	// "view an aggregate of the tickets by status"
	out = awsCLI(t, srv, c, "query",
		"--table-name", "SupportTicket",
		"--key-condition-expression", "pk = :v1",
		"--expression-attribute-values", `{":v1": {"S": "TENANT#1|AGGREGATE"}}`,
		"--return-consumed-capacity", "TOTAL")
	if its := items(t, out); len(its) != 2 || attrS(its[0], "sk") != "STATUS#CLOSED" {
		t.Errorf("aggregates: %v", its)
	}

	// get-item and the error path through the CLI.
	out = awsCLI(t, srv, c, "get-item", "--table-name", "SupportTicket",
		"--key", `{"pk":{"S":"TENANT#2|TICKET#1"},"sk":{"S":"SUMMARY"}}`)
	if it, _ := out["Item"].(map[string]any); attrS(it, "title") != "Other tenant" {
		t.Errorf("get-item: %v", out)
	}
	cmd := exec.CommandContext(ctxT(t), "aws", "dynamodb", "--endpoint-url", srv.Endpoint, "describe-table", "--table-name", "NoSuchTable")
	cmd.Env = srv.Env(c)
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "ResourceNotFoundException") {
		t.Errorf("describe-table of a missing table: %v\n%s", err, b)
	}
}
