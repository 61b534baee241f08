package conformance

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestTagRules: tag keys have 1-128 and values 0-256 Unicode characters
// (not bytes) of the allowed set, a value is required, a table holds at
// most 50 tags (LimitExceededException), only tables are taggable, and
// malformed and unknown ARNs get DynamoDB's messages. The messages for
// characters and index ARNs are our wording.
func TestTagRules(t *testing.T) {
	srv := harness.Start(t)
	c := srv.Client(srv.Default)
	createTable(t, c, "Tagged", keyDef{"pk", "S"}, nil, nil)
	desc, err := c.DescribeTable(ctxT(t), &dynamodb.DescribeTableInput{TableName: aws.String("Tagged")})
	ok(t, err)
	arn := aws.ToString(desc.Table.TableArn)
	tag := func(tags ...types.Tag) error {
		_, err := c.TagResource(ctxT(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: tags})
		return err
	}
	kv := func(k, v string) types.Tag { return types.Tag{Key: aws.String(k), Value: aws.String(v)} }

	ok(t, tag(kv(strings.Repeat("é", 128), strings.Repeat("é", 256)), kv("a b_.:/=+-@9", ""), kv("ключ", "値")))
	wantErr(t, tag(kv(strings.Repeat("é", 129), "v")), validation, "1 validation error detected: Value '"+strings.Repeat("é", 129)+
		"' at 'tags.1.member.key' failed to satisfy constraint: Member must have length between 1 and 128")
	wantErr(t, tag(kv("k", "v"), kv("k2", strings.Repeat("é", 257))), validation, "1 validation error detected: Value '"+strings.Repeat("é", 257)+
		"' at 'tags.2.member.value' failed to satisfy constraint: Member must have length less than or equal to 256")
	const pattern = `Member must satisfy regular expression pattern: ^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$`
	wantErr(t, tag(kv("k!", "v")), validation, "1 validation error detected: Value 'k!' at 'tags.1.member.key' failed to satisfy constraint: "+pattern)
	wantErr(t, tag(kv("k", "v#")), validation, "1 validation error detected: Value 'v#' at 'tags.1.member.value' failed to satisfy constraint: "+pattern)
	// The SDKs refuse a missing value themselves: a raw request.
	if status, body := signedCall(t, srv, "TagResource", `{"ResourceArn":"`+arn+`","Tags":[{"Key":"k"}]}`); status != 400 ||
		!strings.Contains(string(body), `"1 validation error detected: Value null at 'tags.1.member.value' failed to satisfy constraint: Member must not be null"`) {
		t.Errorf("tag without a value: %d %s", status, body)
	}

	// 50 per resource, counting the tags the table has.
	var many []types.Tag
	for i := 0; i < 47; i++ {
		many = append(many, kv(fmt.Sprint("t", i), "v"))
	}
	ok(t, tag(many...)) // 3 + 47 = 50
	ok(t, tag(kv("t0", "replaced")))
	wantErr(t, tag(kv("one-more", "v")), "LimitExceededException", "The number of tags exceeds the limit of 50")

	_, err = c.TagResource(ctxT(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn + "/index/byX"), Tags: []types.Tag{kv("k", "v")}})
	wantErr(t, err, validation, "Invalid TableArn: Invalid ResourceArn provided as input "+arn+"/index/byX")
	_, err = c.ListTagsOfResource(ctxT(t), &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn + "/index/byX")})
	wantErr(t, err, validation, "Invalid TableArn: Invalid ResourceArn provided as input "+arn+"/index/byX")
	_, err = c.TagResource(ctxT(t), &dynamodb.TagResourceInput{ResourceArn: aws.String("not-an-arn"), Tags: []types.Tag{kv("k", "v")}})
	wantErr(t, err, validation, "Invalid TableArn: Invalid ResourceArn provided as input not-an-arn")
	missing := strings.Replace(arn, "table/Tagged", "table/Missing", 1)
	_, err = c.UntagResource(ctxT(t), &dynamodb.UntagResourceInput{ResourceArn: aws.String(missing), TagKeys: []string{"k"}})
	wantErr(t, err, "ResourceNotFoundException", "Requested resource not found: ResourcArn: "+missing+" not found")

	// TagResource and UntagResource answer 200 with an empty body.
	for _, tc := range []struct{ op, body string }{
		{"TagResource", `{"ResourceArn":"` + arn + `","Tags":[{"Key":"t1","Value":"x"}]}`},
		{"UntagResource", `{"ResourceArn":"` + arn + `","TagKeys":["t1"]}`},
	} {
		status, body := signedCall(t, srv, tc.op, tc.body)
		if status != http.StatusOK || len(body) != 0 {
			t.Errorf("%s: %d %q, want 200 and no body", tc.op, status, body)
		}
	}
}
