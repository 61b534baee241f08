package conformance

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestStreamsCLIEveryOperation drives streams end to end with the AWS CLI
// alone, for every view type: `aws dynamodb create-table` enables the
// stream, put-item (twice, the same item: the second changes nothing and
// has no record, as on DynamoDB), update-item, delete-item (of
// an item and of none), batch-write-item and transact-write-items write,
// and `aws dynamodbstreams` lists, describes and reads every record back,
// in order, with the images the view type shows, once `update-table` has
// disabled the stream (DISABLED, its shard read to its end: a null
// NextShardIterator). TestStreamsCLI reads an enabled stream.
//
// About 50 CLI runs: skipped with -short.
func TestStreamsCLIEveryOperation(t *testing.T) {
	needAWSCLI(t)
	if testing.Short() {
		t.Skip("runs the AWS CLI about 50 times")
	}
	srv, _ := start(t)
	skipRemoteStreams(t, srv)
	want := map[string]string{
		"NEW_AND_OLD_IMAGES": "INSERT a -->1\nMODIFY a 1->2\nREMOVE a 2->-\nINSERT b -->1\nINSERT t -->1\nMODIFY b 1->2\n",
		"NEW_IMAGE":          "INSERT a -->1\nMODIFY a -->2\nREMOVE a -->-\nINSERT b -->1\nINSERT t -->1\nMODIFY b -->2\n",
		"OLD_IMAGE":          "INSERT a -->-\nMODIFY a 1->-\nREMOVE a 2->-\nINSERT b -->-\nINSERT t -->-\nMODIFY b 1->-\n",
		"KEYS_ONLY":          "INSERT a -->-\nMODIFY a -->-\nREMOVE a -->-\nINSERT b -->-\nINSERT t -->-\nMODIFY b -->-\n",
	}
	for view, expect := range want {
		t.Run(view, func(t *testing.T) {
			t.Parallel()
			tbl := "streams_cli_" + strings.ToLower(view)
			ddb := func(args ...string) map[string]any { t.Helper(); return cliJSON(t, srv, "dynamodb", args...) }
			str := func(args ...string) map[string]any { t.Helper(); return cliJSON(t, srv, "dynamodbstreams", args...) }
			d := ddb("create-table", "--table-name", tbl,
				"--attribute-definitions", "AttributeName=pk,AttributeType=S", "--key-schema", "AttributeName=pk,KeyType=HASH",
				"--billing-mode", "PAY_PER_REQUEST", "--stream-specification", "StreamEnabled=true,StreamViewType="+view)
			arn, _ := d["TableDescription"].(map[string]any)["LatestStreamArn"].(string)
			if arn == "" {
				t.Fatalf("create-table: no LatestStreamArn in %v", d)
			}
			it := func(pk, v string) string { return fmt.Sprintf(`{"pk":{"S":%q},"v":{"S":%q}}`, pk, v) }
			ddb("put-item", "--table-name", tbl, "--item", it("a", "1"))
			ddb("put-item", "--table-name", tbl, "--item", it("a", "1"))
			ddb("update-item", "--table-name", tbl, "--key", `{"pk":{"S":"a"}}`,
				"--update-expression", "SET v = :v", "--expression-attribute-values", `{":v":{"S":"2"}}`)
			ddb("delete-item", "--table-name", tbl, "--key", `{"pk":{"S":"a"}}`)
			ddb("delete-item", "--table-name", tbl, "--key", `{"pk":{"S":"none"}}`)
			ddb("batch-write-item", "--request-items", fmt.Sprintf(`{%q:[{"PutRequest":{"Item":%s}}]}`, tbl, it("b", "1")))
			ddb("transact-write-items", "--transact-items", fmt.Sprintf(
				`[{"Put":{"TableName":%q,"Item":%s}},{"Update":{"TableName":%q,"Key":{"pk":{"S":"b"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"S":"2"}}}}]`,
				tbl, it("t", "1"), tbl))

			ls := str("list-streams", "--table-name", tbl)
			if s, _ := ls["Streams"].([]any); len(s) != 1 || s[0].(map[string]any)["StreamArn"] != arn {
				t.Fatalf("list-streams: %v", ls)
			}
			ddb("update-table", "--table-name", tbl, "--stream-specification", "StreamEnabled=false")
			desc := str("describe-stream", "--stream-arn", arn)["StreamDescription"].(map[string]any)
			if desc["StreamStatus"] != "DISABLED" || desc["StreamViewType"] != view {
				t.Errorf("describe-stream after disabling: %v", desc)
			}
			var got strings.Builder
			for _, sh := range desc["Shards"].([]any) {
				iter, _ := str("get-shard-iterator", "--stream-arn", arn, "--shard-id", sh.(map[string]any)["ShardId"].(string),
					"--shard-iterator-type", "TRIM_HORIZON")["ShardIterator"].(string)
				for n := 0; iter != ""; n++ {
					if n == 10 {
						t.Fatalf("a disabled stream's shard does not end")
					}
					page := str("get-records", "--shard-iterator", iter, "--limit", "1000")
					recs, _ := page["Records"].([]any)
					for _, r := range recs {
						got.WriteString(cliRecord(t, r.(map[string]any), view))
					}
					iter, _ = page["NextShardIterator"].(string)
				}
			}
			if got.String() != expect {
				t.Errorf("records\n%swant\n%s", got.String(), expect)
			}
		})
	}
}

// cliJSON runs `aws <service> --endpoint-url <srv> args...` with the
// default tenant's credential and decodes its JSON output.
func cliJSON(t *testing.T, srv *harness.Server, service string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.CommandContext(ctxT(t), "aws", append([]string{service, "--endpoint-url", srv.Endpoint, "--output", "json"}, args...)...)
	cmd.Env = srv.Env(srv.Default)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("aws %s %s: %v\n%s", service, strings.Join(args, " "), err, stderr)
	}
	v := map[string]any{}
	if len(strings.TrimSpace(string(out))) > 0 {
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("aws %s %s: output is not JSON: %v\n%s", service, args[0], err, out)
		}
	}
	return v
}

// cliRecord formats a record of `aws dynamodbstreams get-records` as
// "EVENT pk old->new\n" (v of each image, "-" without one) and checks its
// shape.
func cliRecord(t *testing.T, r map[string]any, view string) string {
	t.Helper()
	ddb := r["dynamodb"].(map[string]any)
	if r["eventSource"] != "aws:dynamodb" || r["awsRegion"] != harness.Region || r["eventVersion"] == nil || r["eventID"] == nil ||
		ddb["StreamViewType"] != view || ddb["SequenceNumber"] == nil || ddb["SizeBytes"] == nil || ddb["ApproximateCreationDateTime"] == nil {
		t.Errorf("record shape: %v", r)
	}
	img := func(name string) string {
		m, ok := ddb[name].(map[string]any)
		if !ok {
			return "-"
		}
		v, _ := m["v"].(map[string]any)
		s, _ := v["S"].(string)
		return s
	}
	pk := ddb["Keys"].(map[string]any)["pk"].(map[string]any)["S"]
	return fmt.Sprintf("%s %v %s->%s\n", r["eventName"], pk, img("OldImage"), img("NewImage"))
}
