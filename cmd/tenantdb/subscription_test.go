package main

import (
	"context"
	"encoding/json"
	"fmt"
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

func createOrders(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, c, name)
}

// placeOrder is seed 000's outbox pattern: the domain change and an
// OUTBOX# event item in one TransactWriteItems.
func placeOrder(t *testing.T, c *dynamodb.Client, table string, i int) {
	t.Helper()
	_, err := c.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": s(fmt.Sprintf("ORDER#%d", i)), "sk": s("ORDER"), "status": s("PLACED")}}},
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": s(fmt.Sprintf("ORDER#%d", i)), "sk": s(fmt.Sprintf("OUTBOX#%04d", i)), "type": s("OrderPlaced")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func subJSON(t *testing.T, out string) client.Subscription {
	t.Helper()
	var v client.Subscription
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	return v
}

// TestSubscriptionCLI drives webhook subscriptions end to end through the
// CLI against a server with private webhooks allowed, delivering to a
// loopback receiver that verifies every signature: seed 000's outbox
// (only the OUTBOX# items of each transaction), pause/resume, replay,
// deliveries, retries into the dead-letter list and its replay, 410 Gone,
// secret rotation, delete, and the audit trail.
func TestSubscriptionCLI(t *testing.T) {
	srv := harness.Start(t, harness.Options{AllowPrivateWebhooks: true})
	admin := srv.NewTenant(t, "shop", "admin")
	ddb := srv.Client(admin)
	createOrders(t, ddb, "Orders")
	rc := harness.StartReceiver(t)
	cli := func(args ...string) string { return qcli(t, srv, admin.Key, false, args...) }

	created := cli("subscription", "create", "--tenant", admin.TenantID, "--table", "Orders", "--url", rc.URL,
		"--filter", "begins_with(sk, :o)", "--filter-values", `{":o":{"S":"OUTBOX#"}}`, "--events", "INSERT,MODIFY,REMOVE", "--json")
	var raw map[string]any
	json.Unmarshal([]byte(created), &raw)
	if raw["id"] == nil || raw["secret"] == nil {
		t.Fatalf("create --json printed %s, want at least id and secret", created)
	}
	sub := subJSON(t, created)
	rc.Trust(sub.Secret)
	start := time.Now()
	for i := 1; i <= 5; i++ {
		placeOrder(t, ddb, "Orders", i)
	}
	got := rc.WaitFor(t, 20*time.Second, "5 outbox events", func(r []harness.Received) bool { return len(r) >= 5 })
	for i, r := range got {
		if r.S("sk") != fmt.Sprintf("OUTBOX#%04d", i+1) || r.EventName != "INSERT" || r.S("type") != "OrderPlaced" {
			t.Errorf("record %d: %s %s %v, want the INSERT of OUTBOX#%04d only", i, r.EventName, r.S("sk"), r.Dynamodb.NewImage, i+1)
		}
		if r.EventSource != "aws:dynamodb" || r.EventVersion != "1.1" || r.AwsRegion != "us-east-1" || r.EventID == "" ||
			!strings.Contains(r.EventSourceARN, ":table/Orders/stream/") || len(r.Dynamodb.SequenceNumber) != 30 || r.Subscription != sub.ID {
			t.Errorf("record %d is not a Lambda DynamoDB record: %+v", i, r)
		}
	}
	if len(got) != 5 || rc.Invalid() != 0 {
		t.Fatalf("got %d records (%d unverified), want exactly the 5 outbox items", len(got), rc.Invalid())
	}

	var dl client.DeliveryList
	json.Unmarshal([]byte(cli("subscription", "deliveries", "--tenant", admin.TenantID, sub.ID, "--json")), &dl)
	if len(dl.Deliveries) == 0 || dl.Deliveries[0].Status != 200 || dl.Deliveries[0].Outcome != "delivered" || dl.Deliveries[0].LatencyMS <= 0 {
		t.Fatalf("deliveries: %+v", dl)
	}
	if human := cli("subscription", "deliveries", "--tenant", admin.TenantID, sub.ID); !strings.Contains(human, "LATENCY MS") || !strings.Contains(human, "delivered") {
		t.Errorf("deliveries table: %s", human)
	}
	var list client.SubscriptionList
	json.Unmarshal([]byte(cli("subscription", "list", "--tenant", admin.TenantID, "--json")), &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != sub.ID || list.Subscriptions[0].Secret != "" {
		t.Fatalf("list: %+v", list)
	}

	// Paused, nothing is delivered; resumed, what was committed meanwhile is.
	if v := subJSON(t, cli("subscription", "pause", "--tenant", admin.TenantID, sub.ID, "--json")); v.State != "paused" {
		t.Fatalf("pause: %+v", v)
	}
	placeOrder(t, ddb, "Orders", 6)
	time.Sleep(300 * time.Millisecond)
	if n := len(rc.Records()); n != 5 {
		t.Fatalf("a paused subscription delivered (%d records)", n)
	}
	if v := subJSON(t, cli("subscription", "resume", "--tenant", admin.TenantID, sub.ID, "--json")); v.State != "active" {
		t.Fatalf("resume: %+v", v)
	}
	rc.WaitFor(t, 20*time.Second, "order 6 after resume", func(r []harness.Received) bool { return len(r) == 6 && r[5].S("sk") == "OUTBOX#0006" })

	// A suspended tenant's changes wait in the log until it is resumed.
	cli("subscription", "pause", "--tenant", admin.TenantID, sub.ID)
	placeOrder(t, ddb, "Orders", 9)
	if _, err := srv.Admin().SuspendTenant(context.Background(), admin.TenantID); err != nil {
		t.Fatal(err)
	}
	qcli(t, srv, srv.Operator.Key, false, "subscription", "resume", "--tenant", admin.TenantID, sub.ID)
	time.Sleep(500 * time.Millisecond)
	if n := len(rc.Records()); n != 6 {
		t.Fatalf("a suspended tenant's change was delivered (%d records)", n)
	}
	if _, err := srv.Admin().ResumeTenant(context.Background(), admin.TenantID); err != nil {
		t.Fatal(err)
	}
	rc.WaitFor(t, 20*time.Second, "order 9 after the tenant's resumption", func(r []harness.Received) bool { return len(r) == 7 && r[6].S("sk") == "OUTBOX#0009" })

	// Replay from a time before the first order delivers everything again
	// (at least once: receivers deduplicate by eventID).
	cli("subscription", "replay", "--tenant", admin.TenantID, sub.ID, "--from", start.Add(-time.Second).UTC().Format(time.RFC3339Nano))
	got = rc.WaitFor(t, 20*time.Second, "the replay", func(r []harness.Received) bool { return len(r) >= 14 })
	for i := range 7 {
		if got[7+i].EventID != got[i].EventID {
			t.Errorf("replayed record %d has eventID %s, first delivered as %s", i, got[7+i].EventID, got[i].EventID)
		}
	}
	// Replay from a SequenceNumber starts at that record.
	cli("subscription", "replay", "--tenant", admin.TenantID, sub.ID, "--from", got[4].Dynamodb.SequenceNumber)
	got = rc.WaitFor(t, 20*time.Second, "the replay by sequence", func(r []harness.Received) bool { return len(r) >= 17 })
	if got[14].S("sk") != "OUTBOX#0005" || got[15].S("sk") != "OUTBOX#0006" || got[16].S("sk") != "OUTBOX#0009" {
		t.Errorf("replay from order 5's sequence number delivered %s, %s, %s", got[14].S("sk"), got[15].S("sk"), got[16].S("sk"))
	}

	// Rotation: the receiver that knows only the new secret verifies.
	rot := subJSON(t, cli("subscription", "rotate-secret", "--tenant", admin.TenantID, sub.ID, "--overlap", "1h", "--json"))
	if rot.Secret == "" || rot.Secret == sub.Secret || len(rot.Secrets) != 2 {
		t.Fatalf("rotate-secret: %+v", rot)
	}
	rc.TrustOnly(rot.Secret)
	placeOrder(t, ddb, "Orders", 7)
	rc.WaitFor(t, 20*time.Second, "order 7 signed with the new secret", func(r []harness.Received) bool { return r[len(r)-1].S("sk") == "OUTBOX#0007" })
	rc.TrustOnly(sub.Secret) // within the overlap the old secret still signs
	placeOrder(t, ddb, "Orders", 8)
	rc.WaitFor(t, 20*time.Second, "order 8 signed with the old secret", func(r []harness.Received) bool { return r[len(r)-1].S("sk") == "OUTBOX#0008" })
	if rc.Invalid() != 0 {
		t.Errorf("%d deliveries did not verify during the rotation", rc.Invalid())
	}

	// Failures: a subscription whose endpoint fails is retried with
	// backoff, then dead-lettered after its retry period; the list replays.
	fail := harness.StartReceiver(t)
	fs := subJSON(t, cli("subscription", "create", "--tenant", admin.TenantID, "--table", "Orders", "--url", fail.URL,
		"--events", "REMOVE", "--retry-period", "2s", "--json"))
	fail.Trust(fs.Secret)
	fail.Respond(func(int64) (int, time.Duration) { return 500, 0 })
	if _, err := ddb.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String("Orders"),
		Key: map[string]types.AttributeValue{"pk": s("ORDER#1"), "sk": s("OUTBOX#0001")}}); err != nil {
		t.Fatal(err)
	}
	var dead client.DeadLetterList
	for deadline := time.Now().Add(30 * time.Second); len(dead.DeadLetters) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing dead-lettered; deliveries:\n%s", cli("subscription", "deliveries", "--tenant", admin.TenantID, fs.ID))
		}
		json.Unmarshal([]byte(cli("subscription", "dead-letters", "--tenant", admin.TenantID, fs.ID, "--json")), &dead)
	}
	var fdl client.DeliveryList
	json.Unmarshal([]byte(cli("subscription", "deliveries", "--tenant", admin.TenantID, fs.ID, "--json")), &fdl)
	retries := 0
	for _, d := range fdl.Deliveries {
		if d.Outcome == "retry" && d.Status == 500 {
			retries++
		}
	}
	if retries < 1 || fdl.Deliveries[0].Outcome != "dead-lettered" || len(dead.DeadLetters[0].Records) != 1 {
		t.Fatalf("deliveries %+v, dead letters %+v", fdl, dead)
	}
	fail.Respond(func(int64) (int, time.Duration) { return 200, 0 })
	cli("subscription", "replay", "--tenant", admin.TenantID, fs.ID, "--dead-letters")
	rd := fail.WaitFor(t, 20*time.Second, "the dead letter replayed", func(r []harness.Received) bool { return len(r) == 1 })
	if rd[0].EventName != "REMOVE" || rd[0].S("sk") != "OUTBOX#0001" {
		t.Errorf("replayed dead letter %+v", rd[0])
	}
	// 410 Gone disables.
	fail.Respond(func(int64) (int, time.Duration) { return 410, 0 })
	if _, err := ddb.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String("Orders"),
		Key: map[string]types.AttributeValue{"pk": s("ORDER#2"), "sk": s("OUTBOX#0002")}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		v := subJSON(t, cli("subscription", "show", "--tenant", admin.TenantID, fs.ID, "--json"))
		if v.State == "disabled" && strings.Contains(v.StateReason, "410") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not disabled by 410: %+v", v)
		}
	}

	// Bad input is refused with a message saying what is wrong.
	for _, c := range [][]string{
		{"--url", "ftp://x/"}, {"--url", rc.URL, "--filter", "begins_with(sk, :o"}, {"--url", rc.URL, "--events", "UPSERT"},
	} {
		args := append([]string{"subscription", "create", "--tenant", admin.TenantID, "--table", "Orders"}, c...)
		if msg := qcli(t, srv, admin.Key, true, args...); !strings.Contains(msg, "Validation") {
			t.Errorf("%v: %s", c, msg)
		}
	}
	if msg := qcli(t, srv, admin.Key, true, "subscription", "create", "--tenant", admin.TenantID, "--table", "Nope", "--url", rc.URL); !strings.Contains(msg, "not found") {
		t.Errorf("unknown table: %s", msg)
	}

	cli("subscription", "delete", "--tenant", admin.TenantID, sub.ID)
	if msg := qcli(t, srv, admin.Key, true, "subscription", "show", "--tenant", admin.TenantID, sub.ID); !strings.Contains(msg, "not found") {
		t.Errorf("show after delete: %s", msg)
	}

	// Delivery is metered per tenant: in its usage and in /metrics.
	if u := usageOf(t, srv, srv.Operator.Key, admin.TenantID); u.ByOperation["WebhookDelivery"].Requests == 0 ||
		u.ByOperation["WebhookDelivery"].ConsumedReadUnits == 0 {
		t.Errorf("usage has no WebhookDelivery: %+v", u.ByOperation)
	}
	mreq, _ := http.NewRequest("GET", srv.Endpoint+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer "+srv.Operator.Key)
	resp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`tenantdb_tenant_webhook_records_total{tenant="` + admin.TenantID + `"}`,
		`tenantdb_tenant_webhook_deliveries_total{outcome="failed",tenant="` + admin.TenantID + `"}`,
		`tenantdb_tenant_webhook_delivery_duration_seconds_count{tenant="` + admin.TenantID + `"}`} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %s:\n%s", m, grepLines(string(metrics), "tenantdb_tenant_webhook"))
		}
	}

	page, err := srv.Admin().Audit(context.Background(), admin.TenantID, client.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range page.Records {
		seen[r.Action] = true
	}
	for _, a := range []string{"subscription.create", "subscription.pause", "subscription.resume", "subscription.replay",
		"subscription.rotate-secret", "subscription.replay-dead-letters", "subscription.delete"} {
		if !seen[a] {
			t.Errorf("audit log has no %s (has %v)", a, seen)
		}
	}
}
