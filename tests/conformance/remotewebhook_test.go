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

// TestDynaliteRefusesWebhooks: over an engine without DynamoDB Streams
// (dynalite) a gateway refuses to create a webhook subscription with a
// ValidationException saying why, and keeps none. It skips, saying why,
// without node or dynalite.
func TestDynaliteRefusesWebhooks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run over dynalite")
	}
	harness.RemoteFor(t, harness.StartDynalite(t))
	t.Run("refused", func(t *testing.T) {
		srv, c := start(t)
		ctx := ctxT(t)
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("dl_hooks"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		adm := &client.Client{Endpoint: srv.Endpoint, Key: srv.Default.Key}
		// NB: an address literal the SSRF rules accept, so that the
		// refusal is the engine's, not the URL's.
		_, err := adm.CreateSubscription(ctx, srv.Default.TenantID, client.CreateSubscriptionRequest{Table: "dl_hooks", URL: "https://93.184.216.34/hook"})
		if err == nil || !strings.Contains(err.Error(), "ValidationException") || !strings.Contains(err.Error(), "does not serve DynamoDB Streams") {
			t.Errorf("creating a subscription: %v, want a ValidationException saying the engine has no Streams", err)
		}
		subs, err := adm.Subscriptions(ctx, srv.Default.TenantID)
		if err != nil || len(subs) != 0 {
			t.Errorf("subscriptions after the refusal: %+v %v", subs, err)
		}
	})
}
