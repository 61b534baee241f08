package isolation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestWebhookCountIsolation attacks the per-tenant counts kept beside
// subscriptions (the tenant's subscription count, a subscription's
// dead-letter count): A at its limit of 25, with dead letters, changes
// nothing B can create, see or count — B's creations are refused only at
// B's own 25, with the very message A gets (no count, id or tenant of
// A's), and B's subscriptions show B's dead letters only.
func TestWebhookCountIsolation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := harness.Start(t, harness.Options{AllowPrivateWebhooks: true})
	A := srv.NewTenant(t, "whcA", "admin")
	B := srv.NewTenant(t, "whcB", "admin")
	for _, k := range []harness.Credential{A, B} {
		c := srv.Client(k)
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("whc"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		harness.WaitActive(t, ctx, c, "whc")
	}
	refuse := harness.StartReceiver(t)
	refuse.Respond(func(int64) (int, time.Duration) { return http.StatusBadRequest, 0 })
	asA, asB := &client.Client{Endpoint: srv.Endpoint, Key: A.Key}, &client.Client{Endpoint: srv.Endpoint, Key: B.Key}
	// A: one subscription dead-lettering everything, then up to its limit.
	dead, err := asA.CreateSubscription(ctx, A.TenantID, client.CreateSubscriptionRequest{Table: "whc", URL: refuse.URL, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	refuse.Trust(dead.Secret)
	for i := range 3 {
		if _, err := srv.Client(A).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("whc"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprint("a", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s, err := asA.Subscription(ctx, A.TenantID, dead.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.DeadLetters >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's subscription has %d dead letters after 60 s, want 3", s.DeadLetters)
		}
	}
	for range 24 {
		if _, err := asA.CreateSubscription(ctx, A.TenantID, client.CreateSubscriptionRequest{Table: "whc", URL: refuse.URL}); err != nil {
			t.Fatal(err)
		}
	}
	_, errA := asA.CreateSubscription(ctx, A.TenantID, client.CreateSubscriptionRequest{Table: "whc", URL: refuse.URL})
	var ceA *client.Error
	if !errors.As(errA, &ceA) || ceA.Code != "LimitExceededException" {
		t.Fatalf("A's 26th subscription: %v, want LimitExceededException", errA)
	}

	// B is not at A's limit: it creates its 25, and its subscriptions
	// count none of A's dead letters.
	for i := range 25 {
		s, err := asB.CreateSubscription(ctx, B.TenantID, client.CreateSubscriptionRequest{Table: "whc", URL: refuse.URL})
		if err != nil {
			t.Fatalf("LEAK: B's subscription %d refused while A is at its limit: %v", i+1, err)
		}
		if s.DeadLetters != 0 {
			t.Errorf("LEAK: B's new subscription shows %d dead letters", s.DeadLetters)
		}
	}
	_, errB := asB.CreateSubscription(ctx, B.TenantID, client.CreateSubscriptionRequest{Table: "whc", URL: refuse.URL})
	var ceB *client.Error
	if !errors.As(errB, &ceB) || ceB.Code != ceA.Code || ceB.Message != ceA.Message || ceB.Status != ceA.Status {
		t.Errorf("B's 26th subscription: %v; A's: %v — want the same answer", errB, errA)
	}
	if strings.Contains(ceB.Message, A.TenantID) || strings.Contains(ceB.Message, dead.ID) {
		t.Errorf("LEAK: B's limit message names A: %s", ceB.Message)
	}
	l, err := asB.Subscriptions(ctx, B.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l {
		if s.DeadLetters != 0 || s.ID == dead.ID {
			t.Errorf("LEAK: B lists %s with %d dead letters", s.ID, s.DeadLetters)
		}
	}
	// B naming A's subscription, or A's tenant, counts nothing.
	if _, err := asB.Subscription(ctx, B.TenantID, dead.ID); err == nil {
		t.Error("LEAK: B shows A's subscription under its own tenant")
	}
	if _, err := asB.Subscription(ctx, A.TenantID, dead.ID); err == nil {
		t.Error("LEAK: B shows A's subscription under A's tenant")
	}
	if _, err := asB.CreateSubscription(ctx, A.TenantID, client.CreateSubscriptionRequest{Table: "whc", URL: refuse.URL}); err == nil || strings.Contains(err.Error(), "LimitExceeded") {
		t.Errorf("LEAK: B creating under A's tenant: %v (must be refused without A's limit)", err)
	}
}
