package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/chromedp/chromedp"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// chrome is a headless Chromium tab for a test, with helpers that fail
// the test with the page's text.
type chrome struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func newChrome(t *testing.T) *chrome {
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := boundToTest(t, ctx)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	return &chrome{t: t, ctx: ctx, shots: t.ArtifactDir()}
}

func (c *chrome) fail(what string, err error) {
	c.t.Helper()
	loc, _ := chromedp.Run(c.ctx, chromedp.Location())
	body, _ := chromedp.Run(c.ctx, chromedp.Text(chromedp.CSS("body")))
	c.t.Fatalf("%s: %v (at %s)\n%s", what, err, loc, body)
}

func (c *chrome) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, steps...); err != nil {
		c.fail(what, err)
	}
}

func (c *chrome) text(sel string) string {
	c.t.Helper()
	s, err := readElement(c.ctx, sel, "innerText")
	if err != nil {
		c.fail("read "+sel, err)
	}
	return s
}

func (c *chrome) shot(name string) {
	c.t.Helper()
	png, err := chromedp.Run(c.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		c.fail("screenshot "+name, err)
	}
	if err := os.WriteFile(filepath.Join(c.shots, name+".png"), png, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// TestBrowserFeatures drives the pages of streams, webhook
// subscriptions (pause and resume), backups with point-in-time recovery,
// exports and aggregates in headless Chromium as a tenant admin, after
// the application used each feature through the SDK and the admin API.
func TestBrowserFeatures(t *testing.T) {
	c := newChrome(t)
	srv := harness.Start(t, harness.Options{AllowPrivateWebhooks: true, ExportRoot: t.TempDir()})
	ctx := context.Background()
	ten := srv.NewTenant(t, "featuresco", "admin")
	db := srv.Client(ten)
	api := &client.Client{Endpoint: srv.Endpoint, Key: ten.Key}
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, db, "orders")
	if _, err := db.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("orders"),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	rcv := harness.StartReceiver(t)
	sub, err := api.CreateSubscription(ctx, ten.TenantID, client.CreateSubscriptionRequest{Table: "orders", URL: rcv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rcv.Trust(sub.Secret)
	if _, err := api.CreateAggregate(ctx, ten.TenantID, client.CreateAggregateRequest{Name: "by_status", Table: "orders", GroupBy: "status", Count: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
			"pk":     &types.AttributeValueMemberS{Value: fmt.Sprintf("order-%d", i)},
			"status": &types.AttributeValueMemberS{Value: []string{"paid", "shipped", "open"}[i%3]},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: d.Table.TableArn, S3Bucket: aws.String("nightly")}); err != nil {
		t.Fatal(err)
	}
	// Deliveries reach the receiver before the page is looked at.
	for {
		ds, err := api.SubscriptionDeliveries(ctx, ten.TenantID, sub.ID, 10)
		if err == nil && len(ds) > 0 && ds[len(ds)-1].Outcome == "delivered" {
			break
		}
		if c.ctx.Err() != nil {
			t.Fatalf("no delivery: %v %v", ds, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	base := srv.Endpoint + "/console/tenants/" + ten.TenantID
	c.run("sign in",
		chromedp.Navigate(srv.Endpoint+"/console/"),
		chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), ten.Key),
		chromedp.Submit(chromedp.CSS("#key")),
		chromedp.WaitVisible(chromedp.CSS("form.signout")),
	)

	// Streams: the list, then the table's stream with its shards.
	c.run("streams", chromedp.Navigate(base+"/streams"), chromedp.WaitVisible(chromedp.CSS("#streams")))
	if s := c.text("#streams tbody"); !strings.Contains(s, "orders") {
		t.Fatalf("streams list: %q", s)
	}
	c.run("stream", chromedp.Click(chromedp.CSS("#streams tbody a")), chromedp.WaitVisible(chromedp.CSS("#shards")))
	if s, sh := c.text("#stream"), c.text("#shards tbody"); !strings.Contains(s, "ENABLED") || !strings.Contains(s, "NEW_AND_OLD_IMAGES") || !strings.Contains(sh, "open") {
		t.Fatalf("stream: %q\nshards: %q", s, sh)
	}
	c.shot("stream")

	// Subscriptions: the list, the deliveries, pause and resume.
	c.run("subscriptions", chromedp.Navigate(base+"/subscriptions"), chromedp.WaitVisible(chromedp.CSS("#subscriptions")))
	c.run("subscription", chromedp.Click(chromedp.CSS("#subscriptions tbody a")), chromedp.WaitVisible(chromedp.CSS("#deliveries")))
	if s := c.text("#deliveries tbody"); !strings.Contains(s, "delivered") {
		t.Fatalf("deliveries: %q", s)
	}
	c.shot("subscription")
	c.run("pause", chromedp.Click(chromedp.CSS("#pause-sub")), chromedp.WaitVisible(chromedp.CSS("#resume-sub")))
	if s := c.text("#sub-state"); s != "paused" {
		t.Fatalf("after pause: %q", s)
	}
	if got, err := api.Subscription(ctx, ten.TenantID, sub.ID); err != nil || got.State != "paused" {
		t.Fatalf("the API after pausing in the console: %+v %v", got.State, err)
	}
	c.run("resume", chromedp.Click(chromedp.CSS("#resume-sub")), chromedp.WaitVisible(chromedp.CSS("#pause-sub")))
	if s := c.text("#sub-state"); s != "active" {
		t.Fatalf("after resume: %q", s)
	}

	// Backups: point-in-time recovery's window, and a backup made here.
	c.run("backups", chromedp.Navigate(base+"/backups"), chromedp.WaitVisible(chromedp.CSS("#recovery")))
	if s := c.text("#recovery tbody"); !strings.Contains(s, "orders") || !strings.Contains(s, "ENABLED") {
		t.Fatalf("recovery: %q", s)
	}
	c.run("create backup",
		chromedp.SendKeys(chromedp.CSS("#backup-name"), "before-migration"),
		chromedp.Submit(chromedp.CSS("#backup-name")),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	if s := c.text("#backups tbody"); !strings.Contains(s, "before-migration") || !strings.Contains(s, "AVAILABLE") {
		t.Fatalf("backups: %q", s)
	}
	c.shot("backups")

	// Exports: the export made with the SDK.
	c.run("exports", chromedp.Navigate(base+"/exports"), chromedp.WaitVisible(chromedp.CSS("#exports")))
	if s := c.text("#exports tbody"); !strings.Contains(s, "nightly") {
		t.Fatalf("exports: %q", s)
	}

	// Aggregates: the groups and the lag.
	// NB: the lag is 0 also between the fold of a page and the next read
	// of the log, so the wait is for every put counted: 4 in each group.
	for {
		ag, err := api.Aggregate(ctx, ten.TenantID, "by_status")
		counted := 0
		for _, g := range ag.Groups {
			if g.Count != nil && *g.Count == 4 {
				counted++
			}
		}
		if err == nil && ag.State == "ready" && ag.LagMillis == 0 && len(ag.Groups) == 3 && counted == 3 {
			break
		}
		if c.ctx.Err() != nil {
			t.Fatalf("aggregate: %+v %v", ag, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.run("aggregates", chromedp.Navigate(base+"/aggregates"), chromedp.WaitVisible(chromedp.CSS("#aggregates")))
	c.run("aggregate", chromedp.Click(chromedp.CSS("#aggregates tbody a")), chromedp.WaitVisible(chromedp.CSS("#groups")))
	if s := c.text("#groups tbody"); !strings.Contains(s, "paid") || !strings.Contains(s, "shipped") || !strings.Contains(s, "4") {
		t.Fatalf("groups: %q", s)
	}
	if s := c.text("#lag"); s != "0 ms" {
		t.Fatalf("lag: %q", s)
	}
	c.shot("aggregate")
	t.Logf("screenshots in %s", c.shots)
}
