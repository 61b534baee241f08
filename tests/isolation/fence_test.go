package isolation

import (
	"bytes"
	"context"
	"io"
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

// TestRebornTenantSeesNothingOfFencedWrites: tenant B writes into a
// shared table through gateway 2 with writes still on their way to the
// engine when its deletion through gateway 1 begins (one reaches the
// engine just after the deletion deleted B's items, one after the
// deletion returned). B created again with the same id and slug — the
// same namespace, so the same collection of the shared table — sees none
// of old B's items, through either gateway; tenant A's items are as they
// were.
func TestRebornTenantSeesNothingOfFencedWrites(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	c := harness.StartCluster(t, 1, harness.Options{})
	g1 := c.Gateways[0]
	gates := map[string]chan struct{}{"old-b-early": make(chan struct{}), "old-b-late": make(chan struct{})}
	seen := make(chan string, 8)
	g2 := c.StartGatewayThrough(t, t.TempDir(), func(engine http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			for m, gate := range gates {
				if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".PutItem") && bytes.Contains(body, []byte(`"`+m+`"`)) {
					seen <- m
					select {
					case <-gate:
					case <-r.Context().Done():
						return // the gateway gave up on it: the engine never sees it
					}
				}
			}
			engine.ServeHTTP(w, r)
		})
	})
	ctx := context.Background()
	op := g1.Client(g1.Operator)
	if _, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("commons"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, op, "commons")
	put := func(cl *dynamodb.Client, pk string) error {
		_, err := cl.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("commons"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
		return err
	}
	count := func(cl *dynamodb.Client) []map[string]types.AttributeValue {
		out, err := cl.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("commons"), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Items
	}
	a := g1.NewTenant(t, "victim", "app")
	for _, pk := range []string{"a-1", "a-2"} {
		if err := put(g1.Client(a), pk); err != nil {
			t.Fatal(err)
		}
	}
	id := randHex(16)
	mkB := func() harness.Credential {
		if _, err := g1.Admin().CreateTenant(ctx, client.CreateTenantRequest{Name: "reborn", Slug: "reborn-" + id[:8], ID: id}); err != nil {
			t.Fatal(err)
		}
		return g1.NewKey(t, id, "app")
	}
	oldB := mkB()
	deadline := time.Now().Add(10 * time.Second)
	for put(g2.Client(oldB), "old-b-warm") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the shared table never reached gateway 2")
		}
		time.Sleep(50 * time.Millisecond)
	}
	results := make(chan error, 2)
	for m := range gates {
		go func() { results <- put(g2.Client(oldB), m) }()
	}
	for range gates {
		select {
		case <-seen:
		case <-time.After(10 * time.Second):
			t.Fatal("old B's writes never reached the engine")
		}
	}
	deleted := make(chan error, 1)
	go func() {
		_, err := g1.Admin().DeleteTenant(ctx, id)
		deleted <- err
	}()
	time.Sleep(1500 * time.Millisecond) // past the settle: the deletion is deleting B's items
	close(gates["old-b-early"])
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	close(gates["old-b-late"])
	<-results
	<-results

	newB := mkB()
	for _, g := range []*harness.Server{g1, g2} {
		if items := count(g.Client(newB)); len(items) != 0 {
			t.Errorf("%s: B created again with the deleted B's id and slug sees %d of its items: %v", g.Endpoint, len(items), items)
		}
		if items := count(g.Client(a)); len(items) != 2 {
			t.Errorf("%s: A sees %d items of its 2 after B's deletion: %v", g.Endpoint, len(items), items)
		}
	}
}
