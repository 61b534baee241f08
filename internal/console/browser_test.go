package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// chromiumEnv names a Chromium binary to use instead of the first of
// chromiumPaths found.
const chromiumEnv = "TENANTDB_CHROMIUM"

var chromiumPaths = []string{"/usr/bin/chromium", "chromium", "chromium-browser"}

// docsEnv, set to the repository's docs directory, makes the browser test
// also write the screenshots the README shows (docs/console-*.png).
const docsEnv = "TENANTDB_CONSOLE_DOCS"

func chromium(t *testing.T) string {
	if p := os.Getenv(chromiumEnv); p != "" {
		return p
	}
	for _, p := range chromiumPaths {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skipf("no Chromium binary (looked for %s; set %s): the console's browser test needs one (Debian: apt-get install chromium)",
		strings.Join(chromiumPaths, ", "), chromiumEnv)
	return ""
}

// TestBrowser drives the console in headless Chromium as an operator and
// as a tenant admin: sign in, create a tenant and a key, see a usage chart
// with data after SDK writes, browse and delete items, see a denial in the
// audit view, sign out. One browser for the whole test; screenshots go to
// the test's artifact directory.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	srv := harness.Start(t)
	shots := t.ArtifactDir()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := boundToTest(t, ctx)
	defer cancelT()

	fail := func(what string, err error) {
		t.Helper()
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v (at %s)\n%s", what, err, loc, body)
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			fail(what, err)
		}
	}
	// until waits for the JavaScript predicate js to hold on the page the
	// browser shows (after a form submission, the next page), once it has
	// loaded.
	until := func(what, js string) {
		t.Helper()
		js = `document.readyState === "complete" && (` + js + `)`
		for {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
			if err == nil && ok {
				return
			}
			if ctx.Err() != nil {
				fail(what, fmt.Errorf("%s never held: %v", js, err))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			fail("screenshot "+name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		if dir := os.Getenv(docsEnv); dir != "" && (name == "usage" || name == "audit-denied") {
			small, err := smallPNG(png)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "console-"+name+".png"), small, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(sel, prop string) string {
		t.Helper()
		v, err := readElement(ctx, sel, prop)
		if err != nil {
			fail("read "+sel, err)
		}
		return v
	}
	text := func(sel string) string { t.Helper(); return read(sel, "innerText") }
	value := func(sel string) string { t.Helper(); return read(sel, "value") }
	signIn := func(key string) {
		t.Helper()
		run("sign in",
			chromedp.Navigate(srv.Endpoint+"/console/"),
			chromedp.WaitVisible(chromedp.CSS("#key")),
			chromedp.SendKeys(chromedp.CSS("#key"), key),
			chromedp.Submit(chromedp.CSS("#key")),
			chromedp.WaitVisible(chromedp.CSS("form.signout")),
		)
	}

	// The operator signs in (by keyboard: the key field has focus) and
	// creates a tenant and an admin key.
	run("sign-in page", chromedp.Navigate(srv.Endpoint+"/console/tenants"), chromedp.WaitVisible(chromedp.CSS("#signin")))
	shot("signin")
	signIn(srv.Operator.Key)
	run("create tenant",
		chromedp.WaitVisible(chromedp.CSS("#create-tenant")),
		chromedp.SendKeys(chromedp.CSS("#name"), "Acme Browser Co"),
		chromedp.SendKeys(chromedp.CSS("#slug"), "acme-browser"),
		chromedp.Submit(chromedp.CSS("#name")),
		chromedp.WaitVisible(chromedp.CSS("#tenant-id")),
	)
	if f := text(".flash"); !strings.Contains(f, "Created tenant Acme Browser Co") {
		t.Fatalf("flash after create: %q", f)
	}
	id := text("#tenant-id")
	run("create key",
		chromedp.SetValue(chromedp.CSS("#role"), "admin"),
		chromedp.Submit(chromedp.CSS("#role")),
		chromedp.WaitVisible(chromedp.CSS("#secret")),
	)
	adminKey, akid, secret := value("#fullkey"), value("#akid"), value("#secret")
	if !strings.HasPrefix(adminKey, akid+"_") || secret == "" {
		t.Fatalf("new key: %q %q", adminKey, akid)
	}
	shot("key-created")
	run("tenants list", chromedp.Navigate(srv.Endpoint+"/console/tenants"), chromedp.WaitVisible(chromedp.CSS("#tenants")))
	if !strings.Contains(text("#tenants"), "Acme Browser Co") {
		t.Fatal("the new tenant is not listed")
	}
	shot("tenants")
	run("health", chromedp.Navigate(srv.Endpoint+"/console/health"), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#ops")))
	if r := text("#health"); !strings.Contains(r, "per second since the previous look") {
		t.Fatalf("health: %q", r)
	}
	shot("health")

	// The application writes items with the SDK; a read key is denied a write.
	ctx2 := context.Background()
	db := srv.Client(harness.Credential{TenantID: id, AccessKeyID: akid, SecretAccessKey: secret})
	if _, err := db.CreateTable(ctx2, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("customer"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("order"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("customer"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("order"), KeyType: types.KeyTypeRange}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := db.PutItem(ctx2, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
			"customer": &types.AttributeValueMemberS{Value: []string{"alice", "bob", "carol", "dave"}[i%4]},
			"order":    &types.AttributeValueMemberN{Value: fmt.Sprint(1000 + i)},
			"total":    &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.%02d", 10+i, i)},
			"status":   &types.AttributeValueMemberS{Value: []string{"paid", "shipped"}[i%2]},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"alice", "bob", "carol", "dave"} {
		if _, err := db.Query(ctx2, &dynamodb.QueryInput{TableName: aws.String("orders"), KeyConditionExpression: aws.String("customer = :c"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: c}}}); err != nil {
			t.Fatal(err)
		}
	}
	rk, err := srv.Admin().CreateKey(ctx2, id, client.CreateKeyRequest{Role: "read"})
	if err != nil {
		t.Fatal(err)
	}
	reader := srv.Client(harness.Credential{TenantID: id, AccessKeyID: rk.AccessKeyID, SecretAccessKey: rk.SecretAccessKey})
	if _, err := reader.PutItem(ctx2, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
		"customer": &types.AttributeValueMemberS{Value: "mallory"}, "order": &types.AttributeValueMemberN{Value: "1"},
	}}); err == nil {
		t.Fatal("a read key wrote an item")
	}

	// The tenant admin signs in: its own tenant, usage with data.
	run("sign out", chromedp.Click(chromedp.CSS("form.signout button")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	signIn(adminKey)
	if got := text("#tenant-id"); got != id {
		t.Fatalf("the tenant admin lands on %q, want %q", got, id)
	}
	run("usage", chromedp.Navigate(srv.Endpoint+"/console/tenants/"+id+"/usage"), chromedp.WaitVisible(chromedp.CSS("#usage-chart svg")))
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Array.from(document.querySelectorAll("#usage-chart rect.write")).filter(r => r.getBBox().height > 0).length`))
	if err != nil {
		fail("usage bars", err)
	}
	if bars == 0 {
		t.Fatal("the usage chart shows no write units after 40 writes")
	}
	shot("usage")

	// Browse: scan with paging, query by partition key, view and delete an item.
	run("tables", chromedp.Navigate(srv.Endpoint+"/console/tenants/"+id+"/tables"), chromedp.WaitVisible(chromedp.CSS("#tables")))
	run("open table", chromedp.Click(chromedp.CSS(`#tables a`)), chromedp.WaitVisible(chromedp.CSS("#items")))
	if c := text("#items caption"); !strings.Contains(c, "25 items (scan)") {
		t.Fatalf("first scan page: %q", c)
	}
	run("next page", chromedp.Click(chromedp.CSS("#next")))
	until("next page", `!!document.querySelector("#items caption") && document.querySelector("#items caption").textContent.includes("continued")`)
	if c := text("#items caption"); !strings.Contains(c, "15 items (scan, continued)") {
		t.Fatalf("second scan page: %q", c)
	}
	run("query",
		chromedp.SendKeys(chromedp.CSS("#pk"), "bob"),
		chromedp.Submit(chromedp.CSS("#pk")),
	)
	until("query", `!!document.querySelector("#items caption") && document.querySelector("#items caption").textContent.includes("(query)")`)
	if c, body := text("#items caption"), text("#items tbody"); !strings.Contains(c, "10 items (query)") || strings.Contains(body, "alice") {
		t.Fatalf("query bob: %q\n%s", c, body)
	}
	shot("items")
	run("view item", chromedp.Click(chromedp.CSS(`#items tbody a`)), chromedp.WaitVisible(chromedp.CSS("#item-json")))
	if j := text("#item-json"); !strings.Contains(j, `"customer": {`) || !strings.Contains(j, `"S": "bob"`) {
		t.Fatalf("item JSON: %s", j)
	}
	shot("item")
	run("delete item",
		chromedp.Click(chromedp.CSS("#confirm-item")),
		chromedp.Submit(chromedp.CSS("#confirm-item")),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	if f := text(".flash"); !strings.Contains(f, "Deleted the item") {
		t.Fatalf("after delete: %q", f)
	}
	out, err := db.Scan(ctx2, &dynamodb.ScanInput{TableName: aws.String("orders"), Select: types.SelectCount})
	if err != nil || out.Count != 39 {
		t.Fatalf("after deleting through the console: %d items, %v", out.Count, err)
	}

	// The audit view shows the read key's denied write, and the chain verifies.
	run("audit",
		chromedp.Navigate(srv.Endpoint+"/console/tenants/"+id+"/audit"),
		chromedp.WaitVisible(chromedp.CSS("#audit-filter")),
		chromedp.SetValue(chromedp.CSS("#outcome"), "denied"),
		chromedp.Submit(chromedp.CSS("#outcome")),
	)
	until("audit filter", `location.search.includes("outcome=denied") && !!document.querySelector("#audit tr.outcome-denied")`)
	if row := text("#audit tr.outcome-denied"); !strings.Contains(row, "dynamodb:PutItem") || !strings.Contains(row, rk.AccessKeyID) {
		t.Fatalf("denied row: %q", row)
	}
	if b := text("#chain"); !strings.Contains(b, "Chain verified") {
		t.Fatalf("chain badge: %q", b)
	}
	shot("audit-denied")

	// Sign out: the console's pages send the browser back to sign-in.
	run("sign out", chromedp.Click(chromedp.CSS("form.signout button")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	run("after sign out", chromedp.Navigate(srv.Endpoint+"/console/tenants/"+id), chromedp.WaitVisible(chromedp.CSS("#signin")))
	t.Logf("screenshots in %s", shots)
}

// boundToTest bounds ctx, the browser's, by the test binary's deadline
// (harness.Deadline).
//
// NB: a bound, not a timing: a fixed one (it was 3 minutes, from before
// the server started) failed the test on overloaded machines, where
// every page load and the set-up's SDK calls take many times their
// usual time; this one only turns a hang into the test's own message.
func boundToTest(t *testing.T, ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := harness.Deadline(t); ok {
		return context.WithDeadline(ctx, d)
	}
	return context.WithCancel(ctx)
}

// smallPNG re-encodes a screenshot for the repository: a palette of its
// 256 most frequent colours (a page has few; anti-aliased edges take the
// nearest) and the best compression, about 40% of Chromium's PNG.
func smallPNG(in []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(count))
	for c := range count {
		colors = append(colors, c)
	}
	slices.SortFunc(colors, func(x, y color.RGBA) int {
		if count[x] != count[y] {
			return count[y] - count[x]
		}
		return int(x.R)<<16 + int(x.G)<<8 + int(x.B) - (int(y.R)<<16 + int(y.G)<<8 + int(y.B))
	})
	var pal color.Palette
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, c)
	}
	p := image.NewPaletted(b, pal)
	draw.Draw(p, b, img, b.Min, draw.Src)
	var out bytes.Buffer
	err = (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, p)
	return out.Bytes(), err
}

// readElement returns the JavaScript property prop of the first element
// sel matches on the page the browser shows, waiting until there is one
// (or ctx ends). For "innerText", an element not laid out (hidden) has
// none, as with chromedp.Text.
//
// NB: evaluated in the page, not through chromedp's node queries: after a
// click or a submit that loads a page, chromedp may find a node in its
// copy of the DOM and then lose it when the document is updated under it
// ("No node with given id found"), however the test waited for the page.
func readElement(ctx context.Context, sel, prop string) (string, error) {
	q, err := json.Marshal(sel)
	if err != nil {
		return "", err
	}
	js := fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		if (!e) return [];
		if (%q === "innerText" && !(e.offsetWidth || e.offsetHeight || e.getClientRects().length)) return [""];
		return [String(e[%[2]q])];
	})()`, q, prop)
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
		if err == nil && len(v) == 1 {
			return v[0], nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("no element %s: %v (%w)", sel, err, ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
