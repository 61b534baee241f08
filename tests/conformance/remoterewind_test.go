package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestDynaliteRefusesTenantRestore: over an engine without point-in-time
// recovery (dynalite) a gateway refuses an in-place tenant restore with a
// ValidationException saying why, records none, and leaves the tenant
// served. It skips, saying why, without node or dynalite.
func TestDynaliteRefusesTenantRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run over dynalite")
	}
	harness.RemoteFor(t, harness.StartDynalite(t))
	t.Run("refused", func(t *testing.T) {
		srv, c := start(t)
		ctx := ctxT(t)
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("dl_rewind"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("dl_rewind"), Item: item}); err != nil {
			t.Fatal(err)
		}
		adm := &client.Client{Endpoint: srv.Endpoint, Key: srv.Default.Key}
		_, err := adm.StartRestore(ctx, srv.Default.TenantID, client.RestoreRequest{ToTime: time.Now().Add(-time.Second)})
		if err == nil || !strings.Contains(err.Error(), "ValidationException") || !strings.Contains(err.Error(), "not available on this engine") {
			t.Errorf("tenant restore over dynalite: %v, want a ValidationException saying the engine has no point-in-time recovery", err)
		}
		if _, err := adm.Restore(ctx, srv.Default.TenantID); err == nil || !strings.Contains(err.Error(), "not been restored") {
			t.Errorf("restore status after the refusal: %v", err)
		}
		if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("dl_rewind"), Key: item}); err != nil {
			t.Errorf("the tenant after the refusal: %v", err)
		}
	})
}
