package gateways

import (
	"context"
	"fmt"
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

// TestWebhookAcrossGateways: a subscription created through one gateway
// delivers, signed, the changes written through another (read from the
// engine table's stream), as the embedded server delivers them: logical
// keys and images, the logical table's ARN, in commit order per key,
// nothing of the gateway's own attributes; every gateway shows it,
// its cursor and its deliveries.
func TestWebhookAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{AllowPrivateWebhooks: true})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := g0.NewTenant(t, "hooked", "admin")
	const table = "hook_t"
	if _, err := g0.Client(app).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, g0.Client(app), table)
	d1 := g1.Client(app)
	put1 := func(pk, v string) {
		t.Helper()
		if _, err := d1.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	put1("before", "0") // made before the subscription: not delivered
	time.Sleep(1100 * time.Millisecond)

	rc := harness.StartReceiver(t)
	a0 := &client.Client{Endpoint: g0.Endpoint, Key: app.Key}
	a1 := &client.Client{Endpoint: g1.Endpoint, Key: app.Key}
	sub, err := a0.CreateSubscription(ctx, app.TenantID, client.CreateSubscriptionRequest{Table: table, URL: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	rc.Trust(sub.Secret)
	if !strings.HasPrefix(sub.Cursor, "r1.") {
		t.Errorf("cursor %q: want a gateway's position", sub.Cursor)
	}
	const n = 30
	for i := range n {
		put1(fmt.Sprintf("k%02d", i%10), fmt.Sprint(i))
	}
	if _, err := d1.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k00"}}}); err != nil {
		t.Fatal(err)
	}
	got := rc.WaitFor(t, 60*time.Second, "31 records", func(r []harness.Received) bool { return len(r) >= n+1 })
	time.Sleep(1500 * time.Millisecond) // nothing more comes
	got = rc.Records()
	if len(got) != n+1 {
		t.Errorf("got %d records, want %d (duplicates without a failure?)", len(got), n+1)
	}
	if rc.Invalid() != 0 {
		t.Errorf("%d deliveries whose signature did not verify", rc.Invalid())
	}
	last := map[string]int{}
	inserts := 0
	for _, r := range got {
		pk, _ := r.Dynamodb.Keys["pk"]["S"].(string)
		if pk == "before" || pk == "" || len(r.Dynamodb.Keys) != 1 {
			t.Errorf("record of keys %v: want only pk of the changes after the subscription", r.Dynamodb.Keys)
		}
		for _, img := range []map[string]map[string]any{r.Dynamodb.NewImage, r.Dynamodb.OldImage} {
			for a := range img {
				if strings.HasPrefix(a, "tenantdb:") {
					t.Errorf("a record shows the gateway's attribute %s", a)
				}
			}
		}
		if !strings.Contains(r.EventSourceARN, ":table/"+table+"/stream/") || r.EventSource != "aws:dynamodb" || r.Subscription != sub.ID {
			t.Errorf("record source %q %q %q", r.EventSourceARN, r.EventSource, r.Subscription)
		}
		if r.EventName == "REMOVE" {
			if pk != "k00" || r.Dynamodb.OldImage["v"]["S"] != "20" {
				t.Errorf("REMOVE of %s with old image %v", pk, r.Dynamodb.OldImage)
			}
			continue
		}
		if r.EventName == "INSERT" {
			inserts++
		}
		var v int
		fmt.Sscan(r.S("v"), &v)
		if p, ok := last[pk]; ok && v <= p {
			t.Errorf("%s: change %d delivered after %d: not in commit order", pk, v, p)
		}
		last[pk] = v
	}
	if inserts != 10 {
		t.Errorf("%d INSERTs, want 10", inserts)
	}
	// Every gateway shows the subscription, where it is and what it did.
	shown, err := a1.Subscription(ctx, app.TenantID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if shown.Cursor == sub.Cursor || shown.State != "active" || shown.DeadLetters != 0 {
		t.Errorf("shown through the other gateway: cursor %q (created at %q), state %s, %d dead letters", shown.Cursor, sub.Cursor, shown.State, shown.DeadLetters)
	}
	ds, err := a1.SubscriptionDeliveries(ctx, app.TenantID, sub.ID, 0)
	if err != nil || len(ds) == 0 || ds[0].Outcome != "delivered" {
		t.Errorf("deliveries through the other gateway: %v %+v", err, ds)
	}

	// Replay from the first record's sequence number, through the other
	// gateway: it and everything after it come again.
	first := got[0]
	if _, err := a1.ReplaySubscription(ctx, app.TenantID, sub.ID, first.Dynamodb.SequenceNumber); err != nil {
		t.Fatal(err)
	}
	rc.WaitFor(t, 60*time.Second, "the replay", func(r []harness.Received) bool { return len(r) >= 2*(n+1) })
	// A time older than the engine stream keeps is refused, saying why.
	if _, err := a1.ReplaySubscription(ctx, app.TenantID, sub.ID, time.Now().Add(-25*time.Hour).UTC().Format(time.RFC3339)); err == nil || !strings.Contains(err.Error(), "trim horizon") {
		t.Errorf("replay from 25 hours ago: %v, want a ValidationException naming the trim horizon", err)
	}
	// Deleted through one gateway, it is gone on both.
	if err := a1.DeleteSubscription(ctx, app.TenantID, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a0.Subscription(ctx, app.TenantID, sub.ID); err == nil {
		t.Error("a deleted subscription is still shown")
	}
}

// TestWebhookTakeoverAfterKill: the gateway delivering a subscription is
// killed with kill -9 mid-stream; the other takes its lease over once it
// expired and delivers every change acknowledged to the writers
// (duplicates allowed, none lost), in commit order per key.
func TestWebhookTakeoverAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and kills a tenantdb process")
	}
	t.Parallel()
	bin := binary(t)
	f := harness.StartCluster(t, 1, harness.Options{AllowPrivateWebhooks: true})
	g0 := f.Gateways[0]
	ctx := context.Background()
	app := g0.NewTenant(t, "takeover", "admin")
	const table = "takeover_t"
	if _, err := g0.Client(app).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, g0.Client(app), table)
	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{AllowPrivateWebhooks: true})
	rc := harness.StartReceiver(t)
	// NB: created through the victim, whose worker takes the lease at
	// once (g0 finds the subscription at its next look at the registry).
	sub, err := (&client.Client{Endpoint: victim.Endpoint, Key: app.Key}).CreateSubscription(ctx, app.TenantID,
		client.CreateSubscriptionRequest{Table: table, URL: rc.URL, BatchSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	rc.Trust(sub.Secret)

	var (
		mu    sync.Mutex
		acked []string
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := g0.Client(app)
			for i := 0; !stop.Load(); i++ {
				pk := fmt.Sprintf("w%d-%03d", w, i)
				if put(ctx, c, table, pk) == nil {
					mu.Lock()
					acked = append(acked, pk)
					mu.Unlock()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	rc.WaitFor(t, 60*time.Second, "deliveries by the victim", func(r []harness.Received) bool { return len(r) >= 20 })
	victim.Kill(t) // kill -9, mid-stream
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	want := append([]string(nil), acked...)
	mu.Unlock()
	start := time.Now()
	rc.WaitFor(t, 90*time.Second, "every acknowledged change", func(r []harness.Received) bool {
		seen := map[string]bool{}
		for _, x := range r {
			pk, _ := x.Dynamodb.Keys["pk"]["S"].(string)
			seen[pk] = true
		}
		for _, pk := range want {
			if !seen[pk] {
				return false
			}
		}
		return true
	})
	got := rc.Records()
	t.Logf("%d acknowledged changes, %d records delivered (%d duplicates); the rest took %v after the kill", len(want), len(got), len(got)-len(want), time.Since(start).Round(time.Second))
	if rc.Invalid() != 0 {
		t.Errorf("%d deliveries whose signature did not verify", rc.Invalid())
	}
}
