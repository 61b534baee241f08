package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// browser is a cookie-keeping HTTP client of the console that does not
// follow redirects (tests look at them).
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, s *harness.Server) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: s.Endpoint, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(method, path string, form url.Values) (int, string, http.Header) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindSubmatch(data); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(data), resp.Header
}

func (b *browser) get(path string) (int, string) {
	st, body, _ := b.do("GET", path, nil)
	return st, body
}

// post submits form with the CSRF token of the last page seen.
func (b *browser) post(path string, form url.Values) (int, string, http.Header) {
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	return b.do("POST", path, form)
}

func (b *browser) signIn(key string) {
	b.t.Helper()
	b.get("/console/signin")
	st, body, h := b.post("/console/signin", url.Values{"key": {key}})
	if st != http.StatusSeeOther {
		b.t.Fatalf("sign in: %d %s", st, body)
	}
	b.get(h.Get("Location"))
}

func want(t *testing.T, what string, st int, body string, wantSt int, contains ...string) {
	t.Helper()
	if st != wantSt {
		t.Fatalf("%s: status %d, want %d; body:\n%s", what, st, wantSt, body)
	}
	for _, c := range contains {
		if !strings.Contains(body, c) {
			t.Fatalf("%s: body lacks %q:\n%s", what, c, body)
		}
	}
}

func TestConsoleFlow(t *testing.T) {
	s := harness.Start(t)
	op := newBrowser(t, s)

	st, _, h := op.do("GET", "/console/tenants", nil)
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/signin") {
		t.Fatalf("without a session: %d %q", st, h.Get("Location"))
	}
	op.get("/console/signin")
	st, body, _ := op.post("/console/signin", url.Values{"key": {"sk_live_nonsense"}})
	want(t, "bad key", st, body, http.StatusUnauthorized, "That key was not accepted.")

	op.signIn(s.Operator.Key)
	st, body = op.get("/console/tenants")
	want(t, "tenants", st, body, 200, "Create a tenant")

	st, body, h = op.post("/console/tenants", url.Values{"name": {"Acme Corp"}, "slug": {"acme"}})
	want(t, "create tenant", st, body, http.StatusSeeOther)
	tpath := h.Get("Location")
	st, body = op.get(tpath)
	want(t, "tenant page", st, body, 200, "Created tenant Acme Corp.", "acme", "Suspend tenant")
	id := strings.TrimPrefix(tpath, "/console/tenants/")

	st, body, h = op.post(tpath+"/keys", url.Values{"role": {"admin"}})
	want(t, "create key", st, body, 200, "This is the only time the secret is shown")
	adminKey := regexp.MustCompile(`id="fullkey" readonly value="([^"]+)"`).FindStringSubmatch(body)[1]
	akid := regexp.MustCompile(`id="akid" readonly value="([^"]+)"`).FindStringSubmatch(body)[1]
	secret := regexp.MustCompile(`id="secret" readonly value="([^"]+)"`).FindStringSubmatch(body)[1]
	st, body = op.get(tpath)
	if strings.Contains(body, secret) {
		t.Fatal("the secret is shown again on the tenant page")
	}

	// The tenant admin writes items with the SDK, then browses them.
	db := s.Client(harness.Credential{TenantID: id, AccessKeyID: akid, SecretAccessKey: secret})
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: []string{"alice", "bob", "carol"}[i%3]},
			"sk": &types.AttributeValueMemberN{Value: string(rune('0' + i%10))},
			"n":  &types.AttributeValueMemberS{Value: "order-" + strings.Repeat("x", i)},
		}}); err != nil {
			t.Fatal(err)
		}
	}

	ta := newBrowser(t, s)
	ta.signIn(adminKey)
	st, body = ta.get("/console/")
	st, body = ta.get(tpath)
	want(t, "tenant admin's tenant", st, body, 200, "Acme Corp")
	if strings.Contains(body, "Suspend tenant") {
		t.Fatal("a tenant admin is offered the operator's actions")
	}
	st, body = ta.get("/console/tenants")
	want(t, "tenant admin lists tenants", st, body, http.StatusForbidden)

	st, body = ta.get(tpath + "/tables")
	want(t, "tables", st, body, 200, "orders", "pk (HASH)")
	st, body = ta.get(tpath + "/tables/orders")
	want(t, "scan", st, body, 200, "25 items (scan)", "Next page")
	next := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(body)[1]
	st, body = ta.get(strings.ReplaceAll(next, "&amp;", "&"))
	want(t, "scan page 2", st, body, 200, "items (scan, continued)")
	st, body = ta.get(tpath + "/tables/orders?pk=bob")
	want(t, "query", st, body, 200, "items (query)", `&#34;S&#34;:&#34;bob&#34;`)
	if strings.Contains(body, "alice") {
		t.Fatal("query by bob shows alice")
	}
	// A filter applies to each page read, as DynamoDB's does: follow the pages.
	matched, fpath := 0, tpath+"/tables/orders?fattr=n&ftext="+strings.Repeat("x", 25)
	for pages := 0; fpath != ""; pages++ {
		st, fbody := ta.get(fpath)
		want(t, "filter", st, fbody, 200, "items (scan, filtered")
		matched += strings.Count(fbody, "order-")
		fpath = ""
		if m := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(fbody); m != nil && pages < 5 {
			fpath = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if matched != 5 { // items 25..29 have 25 or more x
		t.Fatalf("filter n contains 25 x: %d items", matched)
	}
	view := regexp.MustCompile(`href="([^"]+/item\?key=[^"]+)"`).FindStringSubmatch(body)[1]
	st, body = ta.get(view)
	want(t, "item", st, body, 200, "Delete item", "bob")
	edited := `{"pk": {"S": "bob"}, "sk": {"N": "99"}, "note": {"S": "edited in the console"}}`
	st, body, h = ta.post(tpath+"/tables/orders/item", url.Values{"item": {edited}})
	want(t, "put item", st, body, http.StatusSeeOther)
	st, body = ta.get(h.Get("Location"))
	want(t, "put item shown", st, body, 200, "Saved the item.", "edited in the console")
	st, body, _ = ta.post(tpath+"/tables/orders/item", url.Values{"item": {`{"note": {"S": "no key"}}`}})
	want(t, "put item without key", st, body, http.StatusBadRequest, "ValidationException")
	st, body, _ = ta.post(tpath+"/tables/orders/item", url.Values{"item": {`not json`}})
	want(t, "put malformed item", st, body, http.StatusBadRequest, "DynamoDB JSON")
	st, body = ta.get(view)
	st, body, _ = ta.post(tpath+"/tables/orders/item/delete", url.Values{"key": {regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(body)[1]}, "confirm": {"yes"}})
	want(t, "delete item", st, body, http.StatusSeeOther)
	st, body = ta.get(view)
	want(t, "deleted item", st, body, http.StatusNotFound)

	// The server samples each active tenant's storage per table once an
	// hour (after a flush of usage, every second): wait for the sample.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rep, err := s.Admin().Usage(ctx, id, time.Now().Add(-time.Hour), time.Now())
		sampled := false
		for _, th := range rep.TableHours {
			sampled = sampled || th.Table == "orders" && th.Sampled && th.Items > 0
		}
		if err == nil && sampled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no storage sample of orders: %+v %v", rep.TableHours, err)
		}
	}
	st, body = ta.get(tpath + "/usage")
	want(t, "usage", st, body, 200, "<svg", "class=\"write\"", "orders", `id="table-orders"`, "Consumed capacity of table orders per hour",
		"Storage of table orders by hour", "Storage of the tenant&#39;s tables by hour", `class="bytes"`, `<circle class="sample"`)
	// The table's own series: its hour has its requests and write units.
	sec := body[strings.Index(body, `id="table-orders"`):]
	row := regexp.MustCompile(`<tr><td>[0-9: -]+Z</td><td>([1-9][0-9]*)</td><td>[0-9.]+</td><td>([1-9][0-9.]*)</td><td>[0-9]+</td><td>([1-9][0-9]*)</td><td>([1-9][0-9]*)</td>`).FindStringSubmatch(sec)
	if row == nil {
		t.Fatalf("the orders table's hours show no requests, write units, items and bytes:\n%s", sec)
	}
	st, body = ta.get(tpath + "/audit?outcome=ok")
	want(t, "audit", st, body, 200, "Chain verified", "key.create")

	st, body = op.get("/console/usage")
	want(t, "top tenants", st, body, 200, "Acme Corp")
	st, body = op.get("/console/health")
	want(t, "health", st, body, 200, "PutItem", "p99", "reload the page", "WAL sync latency", "fsyncs (one per group commit)", "Disk used by the store")
	st, body = op.get("/console/health")
	want(t, "health again", st, body, 200, "per second since the previous look")
	st, body = ta.get("/console/health")
	want(t, "health as tenant admin", st, body, http.StatusForbidden, "operator only")
	st, body = op.get("/console/audit")
	want(t, "platform audit", st, body, 200, "Chain verified", "tenant.create")

	// Quotas: the operator sets them, a tenant admin only reads them.
	st, body, _ = op.post(tpath+"/quota", url.Values{"read_units": {"123"}, "write_units": {""}})
	want(t, "set quota", st, body, http.StatusSeeOther)
	st, body = op.get(tpath + "/quota")
	want(t, "quota", st, body, 200, "Changed the tenant&#39;s quota.", "123.0", "Save quota")
	st, body = ta.get(tpath + "/quota")
	want(t, "quota as tenant admin", st, body, 200, "123.0")
	if strings.Contains(body, "Save quota") {
		t.Fatal("a tenant admin is offered to set its quota")
	}
	st, body, _ = ta.post(tpath+"/quota", url.Values{"read_units": {"100000"}})
	want(t, "tenant admin sets quota", st, body, http.StatusForbidden, "only the operator may set quotas")

	// Rotating a key shows the new secret once; the old key stops working.
	ta.get(tpath)
	st, body, _ = ta.post(tpath+"/keys", url.Values{"role": {"app"}})
	want(t, "create app key", st, body, 200)
	appAkid := regexp.MustCompile(`id="akid" readonly value="([^"]+)"`).FindStringSubmatch(body)[1]
	appSecret := regexp.MustCompile(`id="secret" readonly value="([^"]+)"`).FindStringSubmatch(body)[1]
	_, body = ta.get(tpath)
	var rotPath string
	for _, m := range regexp.MustCompile(`action="([^"]+/keys/([^"/]+)/rotate)"`).FindAllStringSubmatch(body, -1) {
		if strings.HasSuffix(appAkid, "_"+m[2]) {
			rotPath = m[1]
		}
	}
	if rotPath == "" {
		t.Fatalf("no rotate form for %s", appAkid)
	}
	st, body, _ = ta.post(rotPath, url.Values{"grace": {"0"}})
	want(t, "rotate", st, body, 200, "This is the only time the secret is shown")
	if _, err := s.Client(harness.Credential{AccessKeyID: appAkid, SecretAccessKey: appSecret}).ListTables(ctx, &dynamodb.ListTablesInput{}); err == nil {
		t.Fatal("the rotated key still works")
	}

	// Suspend, resume, delete with confirmation.
	st, body, _ = op.post(tpath+"/suspend", nil)
	want(t, "suspend", st, body, http.StatusSeeOther)
	st, body = op.get(tpath)
	want(t, "suspended", st, body, 200, "Resume tenant", "status-suspended")
	st, body, _ = op.post(tpath+"/resume", nil)
	want(t, "resume", st, body, http.StatusSeeOther)
	op.get(tpath + "/delete")
	st, body, _ = op.post(tpath+"/delete", url.Values{"confirm": {"wrong"}})
	want(t, "delete unconfirmed", st, body, http.StatusBadRequest, "Type the tenant")
	st, body, _ = op.post(tpath+"/delete", url.Values{"confirm": {"acme"}})
	want(t, "delete", st, body, http.StatusSeeOther)
	st, body = op.get("/console/tenants")
	want(t, "after delete", st, body, 200, "Deleted tenant Acme Corp")

	// The deleted tenant's admin is signed out: its sessions were deleted
	// with the tenant's records.
	st, body, h = ta.do("GET", tpath, nil)
	want(t, "deleted tenant's admin", st, body, http.StatusSeeOther)
	if !strings.HasPrefix(h.Get("Location"), "/console/signin") {
		t.Fatalf("deleted tenant's admin sent to %q, want the sign-in page", h.Get("Location"))
	}

	// Sign out ends the session.
	st, body, _ = op.post("/console/signout", nil)
	want(t, "sign out", st, body, http.StatusSeeOther)
	st, _, h = op.do("GET", "/console/tenants", nil)
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/signin") {
		t.Fatalf("after sign out: %d %q", st, h.Get("Location"))
	}
}

// Failed sign-ins are limited per key id and per client address, with a
// message that says so and a Retry-After; a correct key is held back too
// while its address is, and other keys are not held back by one key's
// failures.
func TestSigninRateLimit(t *testing.T) {
	srv := harness.Start(t)
	b := newBrowser(t, srv)
	attempt := func(key string) (int, string, http.Header) {
		b.get("/console/signin")
		return b.post("/console/signin", url.Values{"key": {key}})
	}
	akid := srv.Default.AccessKeyID
	wrong := akid + "_notthesecret"
	for i := range 5 {
		if st, _, _ := attempt(wrong); st != http.StatusUnauthorized {
			t.Fatalf("wrong secret %d: %d, want 401", i, st)
		}
	}
	st, body, h := attempt(wrong)
	if st != http.StatusTooManyRequests || !strings.Contains(body, "Too many failed sign-ins with key "+akid) || h.Get("Retry-After") == "" {
		t.Fatalf("the 6th wrong secret of one key: %d %q, want 429 naming the key", st, h.Get("Retry-After"))
	}
	// Even the right secret of that key waits now.
	if st, _, _ := attempt(srv.Default.Key); st != http.StatusTooManyRequests {
		t.Fatalf("the right secret of the held-back key: %d, want 429", st)
	}
	// Another key id is not held back by that key's failures.
	if st, _, _ := attempt(srv.Operator.Key); st != http.StatusSeeOther {
		t.Fatalf("the operator's key after another key's failures: %d, want a sign-in", st)
	}
	// The address: five more failures (other key ids) and it is held back
	// for every key, with its own message.
	for i := range 5 {
		if st, _, _ := attempt("sk_live_" + strings.Repeat("0", 32) + "_nokey" + string(rune('a'+i)) + "_x"); st != http.StatusUnauthorized {
			t.Fatalf("made-up key %d: %d, want 401", i, st)
		}
	}
	st, body, _ = attempt(srv.Operator.Key)
	if st != http.StatusTooManyRequests || !strings.Contains(body, "Too many failed sign-ins from your address (127.0.0.1)") {
		t.Fatalf("after ten failures from one address: %d, want 429 naming the address\n%s", st, body)
	}
}
