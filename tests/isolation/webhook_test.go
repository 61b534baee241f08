package isolation

import (
	"context"
	"encoding/json"
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

// TestWebhookIsolation attacks webhook subscriptions: tenant B (and A's
// own test environment) naming A's subscription under its own tenant,
// subscribing to A's own table, and a subscription on a shared table,
// which must deliver only the subscriber's records.
func TestWebhookIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := harness.Start(t, harness.Options{AllowPrivateWebhooks: true})
	op := srv.Admin()
	A := srv.NewTenant(t, "whA", "admin")
	B := srv.NewTenant(t, "whB", "admin")
	aTest, err := op.CreateKey(ctx, A.TenantID, client.CreateKeyRequest{Role: "admin", Env: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := srv.Client(A), srv.Client(B)
	// A shared table (the operator's; namespace isolation) and a table
	// A owns.
	for _, c := range []struct {
		cl   *dynamodb.Client
		name string
	}{{srv.Client(srv.Operator), "wh_shared"}, {ca, "wh_a_private"}} {
		if _, err := c.cl.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(c.name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
		harness.WaitActive(t, ctx, c.cl, c.name)
	}
	rA, rB := harness.StartReceiver(t), harness.StartReceiver(t)
	asA, asB := &client.Client{Endpoint: srv.Endpoint, Key: A.Key}, &client.Client{Endpoint: srv.Endpoint, Key: B.Key}
	subA, err := asA.CreateSubscription(ctx, A.TenantID, client.CreateSubscriptionRequest{Table: "wh_shared", URL: rA.URL})
	if err != nil {
		t.Fatal(err)
	}
	subB, err := asB.CreateSubscription(ctx, B.TenantID, client.CreateSubscriptionRequest{Table: "wh_shared", URL: rB.URL})
	if err != nil {
		t.Fatal(err)
	}
	rA.Trust(subA.Secret)
	rB.Trust(subB.Secret)

	// Both write to the shared table, some keys equal.
	for i := range 20 {
		for _, w := range []struct {
			c     *dynamodb.Client
			owner string
		}{{ca, "A"}, {cb, "B"}} {
			pk := fmt.Sprintf("k%d", i)
			if i%2 == 1 {
				pk = w.owner + pk
			}
			if _, err := w.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("wh_shared"), Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk}, "owner": &types.AttributeValueMemberS{Value: w.owner}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		rc    *harness.Receiver
		owner string
		sub   string
	}{{rA, "A", subA.ID}, {rB, "B", subB.ID}} {
		got := c.rc.WaitFor(t, 20*time.Second, c.owner+"'s 20 records", func(r []harness.Received) bool { return len(r) >= 20 })
		time.Sleep(200 * time.Millisecond)
		got = c.rc.Records()
		if len(got) != 20 {
			t.Errorf("LEAK: %s's subscription delivered %d records, want its own 20", c.owner, len(got))
		}
		for _, r := range got {
			if r.S("owner") != c.owner || r.Subscription != c.sub {
				t.Errorf("LEAK: %s's subscription delivered a record of %s: %+v", c.owner, r.S("owner"), r.Dynamodb.NewImage)
			}
		}
	}

	// B names A's subscription under its own tenant, and A's test
	// environment names it: exactly what a subscription that does not
	// exist answers.
	nobody := "sub_" + randHex(12)
	raw := func(key, method, path, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, srv.Endpoint+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	before, err := op.Subscription(ctx, A.TenantID, subA.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, atk := range []struct {
		label, key, tenant string
	}{{"B", B.Key, B.TenantID}, {"A-test", aTest.Key, A.TenantID}} {
		for _, r := range []struct{ method, suffix, body string }{
			{"GET", "", ""}, {"POST", "/pause", ""}, {"POST", "/resume", ""}, {"DELETE", "", ""},
			{"POST", "/replay", `{"from":"2020-01-01T00:00:00Z"}`}, {"GET", "/deliveries", ""}, {"GET", "/dead-letters", ""},
			{"POST", "/dead-letters/replay", ""}, {"POST", "/rotate-secret", "{}"},
		} {
			base := "/v1/tenants/" + atk.tenant + "/subscriptions/"
			stV, gotV := raw(atk.key, r.method, base+subA.ID+r.suffix, r.body)
			stN, gotN := raw(atk.key, r.method, base+nobody+r.suffix, r.body)
			if stV != http.StatusNotFound || stN != stV || strings.ReplaceAll(gotV, subA.ID, "X") != strings.ReplaceAll(gotN, nobody, "X") {
				t.Errorf("LEAK: %s %s%s as %s: %d %s; for a subscription that does not exist %d %s", r.method, base, r.suffix, atk.label, stV, gotV, stN, gotN)
			}
		}
		st, body := raw(atk.key, "GET", "/v1/tenants/"+atk.tenant+"/subscriptions", "")
		var l client.SubscriptionList
		json.Unmarshal([]byte(body), &l)
		for _, s := range l.Subscriptions {
			if s.ID == subA.ID {
				t.Errorf("LEAK: %s lists A's live subscription (%d %s)", atk.label, st, body)
			}
		}
	}
	after, err := op.Subscription(ctx, A.TenantID, subA.ID)
	if err != nil {
		t.Fatalf("A's subscription is gone after the attacks: %v", err)
	}
	// NB: a gateway's cursor is opaque text (a place in every engine
	// shard), not ordered as text; the embedded one's is.
	if after.State != before.State || !srv.Remote && after.Cursor < before.Cursor || len(after.Secrets) != len(before.Secrets) || after.Updated != before.Updated {
		t.Errorf("LEAK: A's subscription changed under the attacks:\nbefore %+v\nafter  %+v", before, after)
	}

	// B cannot subscribe to A's own table: the same answer as a table
	// that does not exist.
	_, errA := asB.CreateSubscription(ctx, B.TenantID, client.CreateSubscriptionRequest{Table: "wh_a_private", URL: rB.URL})
	_, errN := asB.CreateSubscription(ctx, B.TenantID, client.CreateSubscriptionRequest{Table: "wh_never_was", URL: rB.URL})
	if !client.IsNotFound(errA) || errA == nil || errN == nil ||
		strings.ReplaceAll(errA.Error(), "wh_a_private", "X") != strings.ReplaceAll(errN.Error(), "wh_never_was", "X") {
		t.Errorf("LEAK: B subscribing to A's table: %v; to a table that never existed: %v", errA, errN)
	}
	// A's test environment cannot subscribe to A's live table either.
	asAT := &client.Client{Endpoint: srv.Endpoint, Key: aTest.Key}
	if _, err := asAT.CreateSubscription(ctx, A.TenantID, client.CreateSubscriptionRequest{Table: "wh_a_private", URL: rA.URL}); !client.IsNotFound(err) {
		t.Errorf("LEAK: A's test environment subscribing to A's live table: %v", err)
	}
	if _, err := asAT.CreateSubscription(ctx, A.TenantID, client.CreateSubscriptionRequest{Env: "live", Table: "wh_a_private", URL: rA.URL}); !client.IsForbidden(err) {
		t.Errorf("LEAK: A's test environment naming env live: %v", err)
	}
	// Nor can B name A in the path (the guard's NotFound).
	if _, err := asB.Subscriptions(ctx, A.TenantID); !client.IsNotFound(err) {
		t.Errorf("LEAK: B listing A's subscriptions: %v", err)
	}
	// B's own table named like A's: B's subscription on it delivers B's
	// changes only, never A's writes to A's table of that name.
	if _, err := cb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("wh_a_private"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, cb, "wh_a_private")
	rB2 := harness.StartReceiver(t)
	subB2, err := asB.CreateSubscription(ctx, B.TenantID, client.CreateSubscriptionRequest{Table: "wh_a_private", URL: rB2.URL})
	if err != nil {
		t.Fatal(err)
	}
	rB2.Trust(subB2.Secret)
	for i := range 5 {
		for _, w := range []struct {
			c     *dynamodb.Client
			owner string
		}{{ca, "A"}, {cb, "B"}} {
			if _, err := w.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("wh_a_private"), Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("same%d", i)}, "owner": &types.AttributeValueMemberS{Value: w.owner}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rB2.WaitFor(t, 30*time.Second, "B's 5 records on its own table", func(r []harness.Received) bool { return len(r) >= 5 })
	time.Sleep(1500 * time.Millisecond)
	if got := rB2.Records(); len(got) != 5 {
		t.Errorf("LEAK: B's subscription on its table named like A's delivered %d records, want its own 5", len(got))
	} else {
		for _, r := range got {
			if r.S("owner") != "B" {
				t.Errorf("LEAK: B's subscription delivered A's change %v", r.Dynamodb.NewImage)
			}
		}
	}
	// B's list shows its own subscriptions only: A's count does not show.
	if l, err := asB.Subscriptions(ctx, B.TenantID); err != nil || len(l) != 2 {
		t.Errorf("B lists %d subscriptions (%v), want its own 2", len(l), err)
	}
	if rA.Invalid() != 0 || rB.Invalid() != 0 || rB2.Invalid() != 0 {
		t.Errorf("unverified deliveries: A %d, B %d, %d", rA.Invalid(), rB.Invalid(), rB2.Invalid())
	}
}
