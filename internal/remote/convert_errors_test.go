package remote

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
