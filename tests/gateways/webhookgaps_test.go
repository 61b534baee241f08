package gateways

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// hookTable creates a table of app's through g and waits for it.
func hookTable(t *testing.T, ctx context.Context, g *harness.Server, app harness.Credential, table string) {
	t.Helper()
	if _, err := g.Client(app).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, g.Client(app), table)
}

func apiCode(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// TestWebhookLimitAcrossGateways: 32 creations racing through two
// gateways (16 each, released at once) leave the tenant with exactly 25
// subscriptions — the limit is kept by the engine's conditional write of
// the tenant's count, not by each gateway's listing — and the others are
// refused with LimitExceeded; after a deletion exactly one of two racing
// creations gets the freed place.
func TestWebhookLimitAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{AllowPrivateWebhooks: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := f.Gateways
	app := g[0].NewTenant(t, "limited", "admin")
	const table = "hook_limit"
	hookTable(t, ctx, g[0], app, table)
	rc := harness.StartReceiver(t)
	admins := []*client.Client{{Endpoint: g[0].Endpoint, Key: app.Key}, {Endpoint: g[1].Endpoint, Key: app.Key}}

	race := func(n int) (ok []string, refused int) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s, err := admins[i%2].CreateSubscription(ctx, app.TenantID, client.CreateSubscriptionRequest{Table: table, URL: rc.URL})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok = append(ok, s.ID)
				case apiCode(err) == "LimitExceededException":
					refused++
					if !strings.Contains(err.Error(), "25 subscriptions") {
						t.Errorf("the limit's message: %v", err)
					}
				default:
					t.Errorf("creation %d: %v", i, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		return ok, refused
	}
	ok, refused := race(32)
	if len(ok) != 25 || refused != 7 {
		t.Fatalf("32 racing creations: %d created, %d refused; want 25 and 7", len(ok), refused)
	}
	for i, a := range admins {
		l, err := a.Subscriptions(ctx, app.TenantID)
		if err != nil || len(l) != 25 {
			t.Fatalf("listed through gateway %d: %d subscriptions, %v; want 25", i, len(l), err)
		}
	}
	// One place freed, two racing for it.
	if err := admins[1].DeleteSubscription(ctx, app.TenantID, ok[0]); err != nil {
		t.Fatal(err)
	}
	// A deletion that finds it gone counts nothing off again.
	if err := admins[0].DeleteSubscription(ctx, app.TenantID, ok[0]); err == nil {
		t.Fatal("a subscription deleted twice")
	}
	ok2, refused2 := race(2)
	if len(ok2) != 1 || refused2 != 1 {
		t.Fatalf("after a deletion, 2 racing creations: %d created, %d refused; want 1 and 1", len(ok2), refused2)
	}
	l, err := admins[0].Subscriptions(ctx, app.TenantID)
	if err != nil || len(l) != 25 {
		t.Fatalf("%d subscriptions at the end, %v; want 25", len(l), err)
	}
}

// TestWebhookDeadLetterCountAcrossGateways: a subscription whose endpoint
// refuses every delivery (400: dead-lettered at once), fed through both
// gateways at once, shows on both gateways the number of dead letters its
// list holds; redriven into an endpoint that accepts, it shows 0.
func TestWebhookDeadLetterCountAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{AllowPrivateWebhooks: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := f.Gateways
	app := g[0].NewTenant(t, "deadcount", "admin")
	const table = "hook_dead"
	hookTable(t, ctx, g[0], app, table)
	rc := harness.StartReceiver(t)
	var accept atomic.Bool
	rc.Respond(func(int64) (int, time.Duration) {
		if accept.Load() {
			return http.StatusOK, 0
		}
		return http.StatusBadRequest, 0
	})
	admins := []*client.Client{{Endpoint: g[0].Endpoint, Key: app.Key}, {Endpoint: g[1].Endpoint, Key: app.Key}}
	sub, err := admins[0].CreateSubscription(ctx, app.TenantID, client.CreateSubscriptionRequest{Table: table, URL: rc.URL, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	rc.Trust(sub.Secret)
	const n = 24
	var wg sync.WaitGroup
	for gi := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 2 {
				if err := put(ctx, g[gi].Client(app), table, fmt.Sprintf("g%d-%02d", gi, i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var dls []client.DeadLetter
	deadline := time.Now().Add(90 * time.Second)
	for {
		if dls, err = admins[1].SubscriptionDeadLetters(ctx, app.TenantID, sub.ID, 0); err != nil {
			t.Fatal(err)
		}
		records := 0
		for _, d := range dls {
			records += len(d.Records)
		}
		if records >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records dead-lettered after 90 s, want %d", records, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for i, a := range admins {
		s, err := a.Subscription(ctx, app.TenantID, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.DeadLetters != len(dls) {
			t.Errorf("gateway %d shows %d dead letters; the list holds %d", i, s.DeadLetters, len(dls))
		}
	}
	accept.Store(true)
	if _, err := admins[1].ReplayDeadLetters(ctx, app.TenantID, sub.ID); err != nil {
		t.Fatal(err)
	}
	rc.WaitFor(t, 90*time.Second, "the redriven records", func(r []harness.Received) bool { return len(r) >= n })
	deadline = time.Now().Add(30 * time.Second)
	for {
		l, err := admins[0].SubscriptionDeadLetters(ctx, app.TenantID, sub.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters left after the redrive", len(l))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for i, a := range admins {
		s, err := a.Subscription(ctx, app.TenantID, sub.ID)
		if err != nil || s.DeadLetters != 0 {
			t.Errorf("after the redrive gateway %d shows %d dead letters (%v), want 0", i, s.DeadLetters, err)
		}
	}
}

// TestWebhookTenantDeletionLeavesNothing: a tenant with subscriptions
// delivering through both gateways — to an endpoint that answers slowly
// and with 503, so that deliveries are in flight and attempts are being
// written — is deleted through one gateway while its writes go on through
// the other; afterwards no item of the engine's table names the tenant
// (no subscription, position, attempt, dead letter, count, registry
// entry).
func TestWebhookTenantDeletionLeavesNothing(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 2, harness.Options{AllowPrivateWebhooks: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b := c.Gateways[0], c.Gateways[1]
	eng, engTable := c.Engine.Client(c.EngineKey), "gw-tenantdb"
	app := a.NewTenant(t, "hookgone", "admin")
	const table = "hook_gone"
	hookTable(t, ctx, a, app, table)
	rc := harness.StartReceiver(t)
	rc.Respond(func(n int64) (int, time.Duration) {
		if n%2 == 0 {
			return http.StatusServiceUnavailable, 300 * time.Millisecond
		}
		return http.StatusBadRequest, 200 * time.Millisecond
	})
	admins := []*client.Client{{Endpoint: a.Endpoint, Key: app.Key}, {Endpoint: b.Endpoint, Key: app.Key}}
	for i := range 6 {
		s, err := admins[i%2].CreateSubscription(ctx, app.TenantID, client.CreateSubscriptionRequest{Table: table, URL: rc.URL, BatchSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		rc.Trust(s.Secret)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			_ = put(ctx, b.Client(app), table, fmt.Sprint("w", i))
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// Deliveries are being attempted (so attempts and dead letters are in
	// the engine) before the deletion.
	deadline := time.Now().Add(60 * time.Second)
	for rc.Calls() < 12 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d deliveries attempted in 60 s", rc.Calls())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := a.Admin().DeleteTenant(ctx, app.TenantID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(bound)
	stop.Store(true)
	wg.Wait()
	// Deliveries in flight end (a delivery's timeout is 10 s), the other
	// gateway's workers notice the deletion, registry entries are
	// forgotten (every 5 s).
	time.Sleep(15 * time.Second)
	if left := engineItemsOf(t, eng, engTable, app.TenantID); len(left) != 0 {
		t.Fatalf("%d items of the deleted tenant are still in the engine:\n%s", len(left), strings.Join(left, "\n"))
	}
}

// TestWebhookLargeDeadLetterAcrossGateways: a record larger than an
// engine item (a MODIFY of a 280 KB item: both images, ≈ 560 KB) that
// its endpoint refuses is dead-lettered — stored in parts — and delivery
// moves on to the next change, as embedded; the dead-letter list read
// through the other gateway holds the records whole, and a redrive
// delivers them whole and empties the list.
func TestWebhookLargeDeadLetterAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{AllowPrivateWebhooks: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := f.Gateways
	app := g[0].NewTenant(t, "bigdead", "admin")
	const table = "hook_big"
	hookTable(t, ctx, g[0], app, table)
	rc := harness.StartReceiver(t)
	var accept atomic.Bool
	rc.Respond(func(int64) (int, time.Duration) {
		if accept.Load() {
			return http.StatusOK, 0
		}
		return http.StatusBadRequest, 0
	})
	admins := []*client.Client{{Endpoint: g[0].Endpoint, Key: app.Key}, {Endpoint: g[1].Endpoint, Key: app.Key}}
	sub, err := admins[0].CreateSubscription(ctx, app.TenantID, client.CreateSubscriptionRequest{Table: table, URL: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.Trust(sub.Secret)
	blob := strings.Repeat("x", 280<<10)
	waitDead := func(n int) []client.DeadLetter {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			dls, err := admins[1].SubscriptionDeadLetters(ctx, app.TenantID, sub.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(dls) >= n {
				return dls
			}
			if time.Now().After(deadline) {
				s, _ := admins[1].SubscriptionDeliveries(ctx, app.TenantID, sub.ID, 3)
				t.Fatalf("%d dead letters after 60 s, want %d (last deliveries %+v)", len(dls), n, s)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if _, err := g[1].Client(app).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "big"}, "blob": &types.AttributeValueMemberS{Value: blob}, "v": &types.AttributeValueMemberS{Value: "1"}}}); err != nil {
		t.Fatal(err)
	}
	waitDead(1)
	if _, err := g[0].Client(app).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "big"}},
		UpdateExpression:          aws.String("SET v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "2"}}}); err != nil {
		t.Fatal(err)
	}
	dls := waitDead(2)
	accept.Store(true)
	if err := put(ctx, g[1].Client(app), table, "after"); err != nil {
		t.Fatal(err)
	}
	rc.WaitFor(t, 60*time.Second, "the change after the large one", func(r []harness.Received) bool { return len(r) >= 1 })
	// The list holds both, whole.
	var modify harness.Received
	if len(dls[1].Records) != 1 || json.Unmarshal(dls[1].Records[0], &modify) != nil || modify.EventName != "MODIFY" ||
		modify.Dynamodb.NewImage["blob"]["S"] != blob || modify.Dynamodb.OldImage["blob"]["S"] != blob || modify.S("v") != "2" {
		t.Fatalf("the large dead letter read back: %d records, event %q, new blob %d bytes", len(dls[1].Records), modify.EventName, len(fmt.Sprint(modify.Dynamodb.NewImage["blob"]["S"])))
	}
	if s, err := admins[0].Subscription(ctx, app.TenantID, sub.ID); err != nil || s.DeadLetters != 2 {
		t.Fatalf("show: %d dead letters (%v), want 2", s.DeadLetters, err)
	}
	if _, err := admins[1].ReplayDeadLetters(ctx, app.TenantID, sub.ID); err != nil {
		t.Fatal(err)
	}
	got := rc.WaitFor(t, 60*time.Second, "the redriven large records", func(r []harness.Received) bool { return len(r) >= 3 })
	var whole int
	for _, r := range got {
		if r.Dynamodb.NewImage["blob"]["S"] == blob {
			whole++
		}
	}
	if whole != 2 {
		t.Errorf("%d redriven records carry the whole item, want 2", whole)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := admins[0].Subscription(ctx, app.TenantID, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.DeadLetters == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters after the redrive", s.DeadLetters)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWebhookDeliveryMeteredOnGateways: deliveries made by a gateway are
// charged to their tenant by the rule the embedded server keeps (package
// quota, MeterDelivery: each attempt ceil(body / 4 KB) read units, under
// WebhookDelivery), and the usage is the fleet's: read through the other
// gateway.
func TestWebhookDeliveryMeteredOnGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{AllowPrivateWebhooks: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := f.Gateways
	app := g[0].NewTenant(t, "metered", "admin")
	other := g[0].NewTenant(t, "unmetered", "admin")
	const table = "hook_meter"
	hookTable(t, ctx, g[0], app, table)
	rc := harness.StartReceiver(t)
	sub, err := (&client.Client{Endpoint: g[0].Endpoint, Key: app.Key}).CreateSubscription(ctx, app.TenantID,
		client.CreateSubscriptionRequest{Table: table, URL: rc.URL, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	rc.Trust(sub.Secret)
	const n = 6
	pad := strings.Repeat("p", 10<<10) // each body over 8 KB: at least 3 read units
	for i := range n {
		if _, err := g[i%2].Client(app).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprint("k", i)}, "pad": &types.AttributeValueMemberS{Value: pad}}}); err != nil {
			t.Fatal(err)
		}
	}
	rc.WaitFor(t, 60*time.Second, "the records", func(r []harness.Received) bool { return len(r) >= n })
	calls := rc.Calls()
	var u struct {
		Requests          int64   `json:"requests"`
		ConsumedReadUnits float64 `json:"consumed_read_units"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var rep struct {
			ByOperation map[string]json.RawMessage `json:"by_operation"`
		}
		if err := g[1].Admin().Do(ctx, "GET", "/v1/tenants/"+app.TenantID+"/usage", nil, &rep); err != nil {
			t.Fatal(err)
		}
		u.Requests, u.ConsumedReadUnits = 0, 0
		if raw, ok := rep.ByOperation["WebhookDelivery"]; ok {
			json.Unmarshal(raw, &u)
		}
		if u.Requests >= calls {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage through the other gateway: %d delivery attempts, %v read units; the receiver had %d", u.Requests, u.ConsumedReadUnits, calls)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if u.Requests != calls || u.ConsumedReadUnits < 3*float64(calls) || u.ConsumedReadUnits > 4*float64(calls) {
		t.Errorf("WebhookDelivery usage %+v for %d attempts of a 10 KB record each: want %d attempts, 3 read units each", u, calls, calls)
	}
	var rep struct {
		ByOperation map[string]json.RawMessage `json:"by_operation"`
	}
	if err := g[1].Admin().Do(ctx, "GET", "/v1/tenants/"+other.TenantID+"/usage", nil, &rep); err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.ByOperation["WebhookDelivery"]; ok {
		t.Errorf("another tenant is charged for the deliveries: %s", rep.ByOperation["WebhookDelivery"])
	}
}
