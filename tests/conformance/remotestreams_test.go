package conformance

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestDynaliteRefusesStreams: over an engine without DynamoDB Streams
// (dynalite) a gateway refuses a stream, in CreateTable and UpdateTable,
// with a ValidationException saying why, creates nothing, and lists no
// streams. It skips, saying why, without node or dynalite.
func TestDynaliteRefusesStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run over dynalite")
	}
	harness.RemoteFor(t, harness.StartDynalite(t))
	t.Run("refused", func(t *testing.T) {
		srv, c := start(t)
		ctx := ctxT(t)
		refused := func(what string, err error) {
			t.Helper()
			var ae smithy.APIError
			if err == nil || !strings.Contains(err.Error(), "ValidationException") || !errors.As(err, &ae) ||
				!strings.Contains(ae.ErrorMessage(), "does not serve DynamoDB Streams") {
				t.Errorf("%s: %v, want a ValidationException saying the engine has no Streams", what, err)
			}
		}
		in := &dynamodb.CreateTableInput{
			TableName:            aws.String("dl_streams"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
		}
		_, err := c.CreateTable(ctx, in)
		refused("CreateTable with a stream", err)
		if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}); err == nil {
			t.Error("the refused table was created")
		}
		in.StreamSpecification = nil
		if _, err := c.CreateTable(ctx, in); err != nil {
			t.Fatal(err)
		}
		_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: in.TableName,
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}})
		refused("UpdateTable enabling a stream", err)
		d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		if err != nil || d.Table.LatestStreamArn != nil || d.Table.StreamSpecification != nil {
			t.Errorf("DescribeTable after the refusal: %+v %v", d, err)
		}
		ls, err := srv.Streams(srv.Default).ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})
		if err != nil || len(ls.Streams) != 0 {
			t.Errorf("ListStreams: %+v %v", ls, err)
		}
	})
}
