package seeds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestSeed000Outbox is seed 000's transactional outbox without its
// Events.Outbox table, its sparse gsi-status index or its polling worker:
// each tenant writes the domain change and an OUTBOX# event item in one
// TransactWriteItems, and a webhook subscription filtered with
// begins_with(sk, :o) delivers exactly the events, each tenant's to its
// own endpoint, in order, signed.
func TestSeed000Outbox(t *testing.T) {
	ctx := context.Background()
	srv := harness.Start(t, harness.Options{AllowPrivateWebhooks: true})
	// One shared table, as the seed's tenant-partitioned tables are shared.
	if _, err := srv.Client(srv.Operator).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("Progress.UserState"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		BillingMode: types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	str := func(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
	type tenant struct {
		name string
		cred harness.Credential
		rc   *harness.Receiver
	}
	var tenants []tenant
	for _, name := range []string{"tenant_abc", "tenant_xyz"} {
		c := srv.NewTenant(t, name, "admin")
		rc := harness.StartReceiver(t)
		sub, err := (&client.Client{Endpoint: srv.Endpoint, Key: c.Key}).CreateSubscription(ctx, c.TenantID, client.CreateSubscriptionRequest{
			Table: "Progress.UserState", URL: rc.URL, Filter: "begins_with(sk, :o)", FilterValues: []byte(`{":o":{"S":"OUTBOX#"}}`), Events: []string{"INSERT"},
		})
		if err != nil {
			t.Fatal(err)
		}
		rc.Trust(sub.Secret)
		tenants = append(tenants, tenant{name, c, rc})
	}
	const n = 10
	for i := range n {
		for _, tn := range tenants {
			pk := tn.name + "#user_123"
			_, err := srv.Client(tn.cred).TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String("Progress.UserState"), Item: map[string]types.AttributeValue{
					"pk": str(pk), "sk": str(fmt.Sprintf("tour_%03d", i)), "status": str("completed")}}},
				{Put: &types.Put{TableName: aws.String("Progress.UserState"), Item: map[string]types.AttributeValue{
					"pk": str(pk), "sk": str(fmt.Sprintf("OUTBOX#%03d#evt_%d", i, i)), "event_type": str("TourCompleted"),
					"tenant_id": str(tn.name), "tour_id": str(fmt.Sprintf("tour_%03d", i)), "user_id": str("user_123")}}},
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tn := range tenants {
		got := tn.rc.WaitFor(t, 30*time.Second, tn.name+"'s events", func(r []harness.Received) bool { return len(r) >= n })
		time.Sleep(100 * time.Millisecond)
		if got = tn.rc.Records(); len(got) != n {
			t.Fatalf("%s: %d records delivered, want its %d events", tn.name, len(got), n)
		}
		for i, r := range got {
			if r.S("event_type") != "TourCompleted" || r.S("tenant_id") != tn.name || r.S("tour_id") != fmt.Sprintf("tour_%03d", i) {
				t.Errorf("%s: record %d is %v, want its TourCompleted event of tour_%03d", tn.name, i, r.Dynamodb.NewImage, i)
			}
		}
		if tn.rc.Invalid() != 0 {
			t.Errorf("%s: %d deliveries did not verify", tn.name, tn.rc.Invalid())
		}
	}
}
