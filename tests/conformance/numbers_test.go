package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestNumberMessages: DynamoDB's exact messages for numbers that do not
// parse, that carry more than 38 significant digits (sent, or the result
// of + and - or ADD), and that overflow or underflow its range.
func TestNumberMessages(t *testing.T) {
	_, c := start(t)
	createTable(t, c, "Nums", keyDef{"pk", "S"}, nil, nil)
	tbl := aws.String("Nums")
	const (
		unparseable = "A value provided cannot be converted into a number"
		digits      = "Attempting to store more than 38 significant digits in a Number"
		overflow    = "Number overflow. Attempting to store a number with magnitude larger than supported range"
		underflow   = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
	)
	put := func(v types.AttributeValue) error {
		_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: tbl, Item: item("pk", S("a"), "n", v)})
		return err
	}
	for _, tc := range []struct {
		n, msg string
	}{
		{"1e", unparseable}, {"", unparseable}, {" 1", unparseable}, {"0x10", unparseable}, {"NaN", unparseable},
		{"123456789012345678901234567890123456789", digits},
		{"1E126", overflow}, {"-1E126", overflow}, {"1E-131", underflow},
	} {
		wantErr(t, put(N(tc.n)), validation, tc.msg)
	}
	wantErr(t, put(&types.AttributeValueMemberNS{Value: []string{"1", "x"}}), validation, unparseable)
	ok(t, put(N("12345678901234567890123456789012345678")))
	update := func(expr, v string) error {
		_, err := c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("a")),
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: map[string]types.AttributeValue{":v": N(v)}})
		return err
	}
	wantErr(t, update("SET n = n + :v", "0.1"), validation, digits)
	wantErr(t, update("SET n = n - :v", "1E-100"), validation, digits)
	wantErr(t, update("ADD n :v", "0.5"), validation, digits)
	wantErr(t, update("SET m = :v + :v", "9E125"), validation, overflow)
	ok(t, update("SET n = n + :v", "2"))
}

// TestUnknownAttributeValueType: DynamoDB's JSON protocol ignores members
// it does not know, so an attribute value with only unknown members is an
// empty one (ValidationException) and an unknown member beside a known
// type is ignored. Raw requests: no SDK sends unknown members.
func TestUnknownAttributeValueType(t *testing.T) {
	srv := harness.Start(t)
	c := srv.Client(srv.Default)
	createTable(t, c, "Unknown", keyDef{"pk", "S"}, nil, nil)
	call := func(body string) (int, string, string) {
		status, out := signedCall(t, srv, "PutItem", body)
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		json.Unmarshal(out, &e)
		return status, e.Type[strings.LastIndexByte(e.Type, '#')+1:], e.Message
	}
	status, code, msg := call(`{"TableName":"Unknown","Item":{"pk":{"S":"a"},"n":{"X":"1"}}}`)
	if status != 400 || code != validation || msg != "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes" {
		t.Errorf("only an unknown member: %d %s %q", status, code, msg)
	}
	if status, code, msg = call(`{"TableName":"Unknown","Item":{"pk":{"S":"a"},"n":{"N":"1","X":{"any":[true]}}}}`); status != 200 {
		t.Errorf("unknown member beside N: %d %s %q", status, code, msg)
	}
	got, err := c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: aws.String("Unknown"), Key: item("pk", S("a"))})
	ok(t, err)
	if str(got.Item["n"]) != "1" || len(got.Item) != 2 {
		t.Errorf("stored item: %v", got.Item)
	}
}
