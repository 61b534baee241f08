package remote

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestEngineErrorsInDynamoDBWords: condition and cancellation errors are
// told in DynamoDB's words, never with the engine's text, which can name
// the gateway's physical attributes and table.
func TestEngineErrorsInDynamoDBWords(t *testing.T) {
	strip := func(map[string]types.AttributeValue) attr.Item { return attr.Item{} }
	leaky := "The conditional request failed on tenantdb:pk of table gw-tenantdb"

	err := engineErr(&types.ConditionalCheckFailedException{Message: aws.String(leaky)}, strip)
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Message != "The conditional request failed" {
		t.Fatalf("condition failure: %v", err)
	}

	err = engineErr(&types.TransactionCanceledException{Message: aws.String(leaky), CancellationReasons: []types.CancellationReason{
		{Code: aws.String("None")},
		{Code: aws.String("ConditionalCheckFailed"), Message: aws.String(leaky)},
		{Code: aws.String("ValidationError"), Message: aws.String(leaky)},
	}}, strip)
	if !errors.As(err, &ae) {
		t.Fatalf("cancellation: %v", err)
	}
	want := "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, ValidationError]"
	if ae.Message != want {
		t.Fatalf("cancellation message %q, want %q", ae.Message, want)
	}
	d, _ := ae.Detail.(*wire.TransactionCanceledDetail)
	if d == nil || len(d.CancellationReasons) != 3 {
		t.Fatalf("cancellation reasons: %+v", ae.Detail)
	}
	for _, r := range d.CancellationReasons {
		if strings.Contains(r.Message, "tenantdb") {
			t.Fatalf("reason %s carries the engine's text: %q", r.Code, r.Message)
		}
	}
	if d.CancellationReasons[1].Message != "The conditional request failed" || d.CancellationReasons[0].Message != "" {
		t.Fatalf("reasons: %+v", d.CancellationReasons)
	}
}

// TestEngineValidationScrubbed: the engine's other errors never reach a
// client with a physical name in them (engine table, reserved attributes,
// index slots, collection keys): a message the embedded engine words for
// the same request gets its words, any other physical one a message naming
// nothing physical; kinds DynamoDB words alike for every request get
// DynamoDB's words; a message with nothing physical passes.
func TestEngineValidationScrubbed(t *testing.T) {
	strip := func(map[string]types.AttributeValue) attr.Item { return attr.Item{} }
	api := func(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }
	for _, tc := range []struct {
		err  error
		kind apierr.Kind
		want string // "" : anything without a physical name
	}{
		{api("ValidationException", "One or more parameter values were invalid: Type mismatch for key tenantdb:pk expected: S actual: B"), apierr.Validation, ""},
		{api("ValidationException", "Requested resource not found: Table: gw-tenantdb not found"), apierr.Validation, ""},
		{api("ValidationException", "The update expression attempted to update the secondary index key tenantdb:x1p to an empty string"), apierr.Validation, ""},
		{api("ValidationException", "One or more parameter values were invalid: Index tenantdb-x2 key too long"), apierr.Validation, ""},
		{api("ValidationException", "Invalid key 74a1b2c3d4e5f60718293a4b5c6d7e8f90#1#0"), apierr.Validation, ""},
		{api("ValidationException", "Item size has exceeded the maximum allowed size of the item in tenantdb"), apierr.Validation, "Item size has exceeded the maximum allowed size"},
		{api("ValidationException", "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes (tenantdb:x1s)"), apierr.Validation,
			"One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes"},
		{api("TransactionConflictException", "Transaction is ongoing for the item tenantdb:pk=74ab#1#0 in gw-tenantdb"), apierr.TransactionConflict, "Transaction is ongoing for the item"},
		{api("ProvisionedThroughputExceededException", "Throughput of partition 74ab#1#0 of gw-tenantdb exceeded"), apierr.ProvisionedThroughputExceeded,
			"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."},
		{api("ValidationException", "ExpressionAttributeValues must not be empty"), apierr.Validation, "ExpressionAttributeValues must not be empty"},
	} {
		err := engineErr(tc.err, strip)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Kind != tc.kind {
			t.Fatalf("%v: %v, want kind %v", tc.err, err, tc.kind)
		}
		if m := strings.ToLower(ae.Message); strings.Contains(m, "tenantdb") || strings.Contains(m, "gw-") || strings.Contains(m, "#") {
			t.Errorf("%v: the client is told %q, which names the physical layout", tc.err, ae.Message)
		}
		if tc.want != "" && ae.Message != tc.want {
			t.Errorf("%v: message %q, want %q", tc.err, ae.Message, tc.want)
		}
	}
}
