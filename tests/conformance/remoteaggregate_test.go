package conformance

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestDynaliteRefusesAggregates: over an engine without DynamoDB Streams
// (dynalite) a gateway refuses to create an aggregate with a
// ValidationException saying the engine has no Streams, and keeps none.
// It skips, saying why, without node or dynalite.
func TestDynaliteRefusesAggregates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run over dynalite")
	}
	harness.RemoteFor(t, harness.StartDynalite(t))
	t.Run("refused", func(t *testing.T) {
		srv, c := start(t)
		ctx := ctxT(t)
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("dl_aggs"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		adm := &client.Client{Endpoint: srv.Endpoint, Key: srv.Default.Key}
		_, err := adm.CreateAggregate(ctx, srv.Default.TenantID, client.CreateAggregateRequest{Name: "n", Table: "dl_aggs", GroupBy: "g", Count: true})
		if err == nil || !strings.Contains(err.Error(), "ValidationException") || !strings.Contains(err.Error(), "the engine has no Streams") {
			t.Errorf("creating an aggregate: %v, want a ValidationException saying the engine has no Streams", err)
		}
		list, err := adm.Aggregates(ctx, srv.Default.TenantID)
		if err != nil || len(list) != 0 {
			t.Errorf("aggregates after the refusal: %+v %v", list, err)
		}
	})
}
