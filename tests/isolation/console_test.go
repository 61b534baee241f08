package isolation

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

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// consoleSession is a browser of the web console: a cookie jar, no
// redirects followed, and the CSRF token of the last page it saw.
type consoleSession struct {
	t    *testing.T
	base string
	jar  *cookiejar.Jar
	c    *http.Client
	csrf string
}

func newConsoleSession(t *testing.T, s *harness.Server) *consoleSession {
	jar, _ := cookiejar.New(nil)
	return &consoleSession{t: t, base: s.Endpoint, jar: jar, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *consoleSession) do(method, path string, form url.Values) (int, string, http.Header) {
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
	if m := consoleCSRF.FindSubmatch(data); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(data), resp.Header
}

// post sends form with csrf as its token (the session's own when "").
func (b *consoleSession) post(path string, form url.Values, csrf string) (int, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if csrf == "" {
		csrf = b.csrf
	}
	if csrf != "-" {
		form.Set("csrf", csrf)
	}
	st, body, _ := b.do("POST", path, form)
	return st, body
}

func (b *consoleSession) signIn(key string) {
	b.t.Helper()
	b.do("GET", "/console/signin", nil)
	st, body := b.post("/console/signin", url.Values{"key": {key}}, "")
	if st != http.StatusSeeOther {
		b.t.Fatalf("console sign-in: %d %s", st, body)
	}
	b.do("GET", "/console/", nil)
}

// cookie returns the session cookie's value.
func (b *consoleSession) cookie() string {
	u, _ := url.Parse(b.base + "/console/")
	for _, c := range b.jar.Cookies(u) {
		if c.Name == "tenantdb_console" {
			return c.Value
		}
	}
	return ""
}

// TestConsoleIsolation attacks tenant B through tenant A's admin console
// session: tampered URLs, B's own form posts replayed, B's CSRF token, no
// CSRF token, no session, and a session after sign-out.
func TestConsoleIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := harness.Start(t, harness.Options{AllowPrivateWebhooks: true, ExportRoot: t.TempDir()})
	op := srv.Admin()
	mk := func(name, slug string) (client.Tenant, harness.Credential) {
		tn, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: name, Slug: slug})
		if err != nil {
			t.Fatal(err)
		}
		return tn, srv.NewKey(t, tn.ID, "admin")
	}
	ta, ka := mk("Tenant Alpha", "alpha-console")
	tb, kb := mk("Victim Bravo", "bravo-console")
	const secretTable, secretValue = "bravo-payroll", "bravo-salary-9731"
	dbB := srv.Client(kb)
	if _, err := dbB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(secretTable),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	bItemKey := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "emp-1"}}
	if _, err := dbB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(secretTable), Item: map[string]types.AttributeValue{
		"pk": bItemKey["pk"], "pay": &types.AttributeValueMemberS{Value: secretValue},
	}}); err != nil {
		t.Fatal(err)
	}
	// B's stream, subscription, backup, export and aggregate, for the
	// pages of those features.
	if _, err := dbB.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(secretTable),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}}); err != nil {
		t.Fatal(err)
	}
	apiB := &client.Client{Endpoint: srv.Endpoint, Key: kb.Key}
	bSub, err := apiB.CreateSubscription(ctx, tb.ID, client.CreateSubscriptionRequest{Table: secretTable, URL: "http://127.0.0.1:9/bravo-hook"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apiB.PauseSubscription(ctx, tb.ID, bSub.ID); err != nil {
		t.Fatal(err)
	}
	const bAggregate = "bravo_payroll_by_pay"
	if _, err := apiB.CreateAggregate(ctx, tb.ID, client.CreateAggregateRequest{Name: bAggregate, Table: secretTable, GroupBy: "pay", Count: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := dbB.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String(secretTable), BackupName: aws.String("bravo-backup")}); err != nil {
		t.Fatal(err)
	}
	bDesc, err := dbB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(secretTable)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dbB.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: bDesc.Table.TableArn, S3Bucket: aws.String("bravo-bucket")}); err != nil {
		t.Fatal(err)
	}
	bKeys, err := op.Keys(ctx, tb.ID)
	if err != nil || len(bKeys) == 0 {
		t.Fatal(err)
	}
	bKeyID := bKeys[0].KeyID

	A := newConsoleSession(t, srv)
	A.signIn(ka.Key)
	B := newConsoleSession(t, srv)
	B.signIn(kb.Key)

	// B's own pages work, and yield B's real form values to replay.
	bPath := "/console/tenants/" + tb.ID
	st, body, _ := B.do("GET", bPath+"/tables/"+secretTable+"?pk=emp-1", nil)
	if st != 200 || !strings.Contains(body, secretValue) {
		t.Fatalf("B's own item browser: %d", st)
	}
	itemKey := regexp.MustCompile(`/item\?key=([^"]+)"`).FindStringSubmatch(body)[1]
	// B's own feature pages show B's things (a gateway folds the
	// aggregate from the engine's stream, polled each second: wait for it).
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, body, _ := B.do("GET", bPath+"/aggregates/"+bAggregate, nil)
		if st == 200 && strings.Contains(body, secretValue) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for g, want := range map[string]string{"/streams": secretTable, "/streams/" + secretTable: "NEW_IMAGE", "/subscriptions": bSub.ID,
		"/subscriptions/" + bSub.ID: "bravo-hook", "/backups": "bravo-backup", "/exports": "bravo-bucket", "/aggregates": bAggregate,
		"/aggregates/" + bAggregate: secretValue, "/encryption": "Data key version"} {
		if st, body, _ := B.do("GET", bPath+g, nil); st != 200 || !strings.Contains(body, want) {
			t.Errorf("B's own page %s: %d, want %q on it", g, st, want)
		}
	}
	bCSRF := B.csrf

	secrets := []string{tb.ID, tb.Name, tb.Slug, secretTable, secretValue, kb.AccessKeyID, bKeyID, bSub.ID, "bravo-hook", bAggregate, "bravo-backup", "bravo-bucket"}
	noLeak := func(what, body string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s: A's console page shows B's %q", what, s)
			}
		}
	}
	// The answer for B's pages must be the answer for a tenant that does
	// not exist.
	ghost := strings.Repeat("ab", 16)
	gets := []string{"", "/usage", "/quota", "/audit", "/audit?outcome=denied", "/tables", "/tables/" + secretTable,
		"/tables/" + secretTable + "?pk=emp-1", "/tables/" + secretTable + "/item?key=" + itemKey, "/delete",
		"/streams", "/streams/" + secretTable, "/subscriptions", "/subscriptions/" + bSub.ID, "/backups", "/exports",
		"/aggregates", "/aggregates/" + bAggregate, "/encryption"}
	for _, g := range gets {
		st, body, _ := A.do("GET", bPath+g, nil)
		gst, gbody, _ := A.do("GET", "/console/tenants/"+ghost+g, nil)
		if st != http.StatusNotFound || gst != st {
			t.Errorf("GET %s as A: %d (a tenant that does not exist: %d), want 404", g, st, gst)
		}
		if strings.ReplaceAll(body, tb.ID, "X") != strings.ReplaceAll(gbody, ghost, "X") {
			t.Errorf("GET %s as A: the page differs from a missing tenant's", g)
		}
		noLeak("GET "+g, body)
	}
	// A's own table list and the tenant list.
	for _, g := range []string{"/console/tenants/" + ta.ID + "/tables", "/console/tenants", "/console/usage", "/console/audit", "/console/health"} {
		_, body, _ := A.do("GET", g, nil)
		noLeak("GET "+g, body)
	}

	// B's form posts, replayed by A with A's own CSRF token.
	posts := []struct {
		path string
		form url.Values
		echo bool // the answer may echo the table name A sent
	}{
		{bPath + "/keys/" + bKeyID + "/revoke", nil, false},
		{bPath + "/keys", url.Values{"role": {"admin"}}, false},
		{bPath + "/keys/" + bKeyID + "/rotate", url.Values{"grace": {"0"}}, false},
		{bPath + "/quota", url.Values{"read_units": {"1"}}, false},
		{bPath + "/suspend", nil, false},
		{bPath + "/resume", nil, false},
		{bPath + "/delete", url.Values{"confirm": {tb.Slug}}, false},
		{bPath + "/tables/" + secretTable + "/item/delete", url.Values{"key": {itemKey}, "confirm": {"yes"}}, false},
		{bPath + "/tables/" + secretTable + "/item", url.Values{"item": {`{"pk": {"S": "emp-1"}, "pay": {"S": "0"}}`}}, false},
		{bPath + "/subscriptions/" + bSub.ID + "/resume", nil, false},
		{bPath + "/subscriptions/" + bSub.ID + "/pause", nil, false},
		{bPath + "/backups", url.Values{"table": {secretTable}, "name": {"stolen"}}, false},
		// A's own tenant path with B's subscription id: A has none such.
		{"/console/tenants/" + ta.ID + "/subscriptions/" + bSub.ID + "/resume", nil, true},
		{"/console/tenants/" + ta.ID + "/backups", url.Values{"table": {secretTable}, "name": {"stolen"}}, true},
		// A's own tenant path with B's item key acts on A's tables only.
		{"/console/tenants/" + ta.ID + "/tables/" + secretTable + "/item/delete", url.Values{"key": {itemKey}, "confirm": {"yes"}}, true},
		{"/console/tenants", url.Values{"name": {"made by A"}}, false},
	}
	for _, p := range posts {
		st, body := A.post(p.path, p.form, "")
		if st < 400 {
			t.Errorf("POST %s as A: %d", p.path, st)
		}
		if p.echo {
			// A sent these names itself: the refusal may repeat them.
			body = strings.ReplaceAll(body, secretTable, "")
			body = strings.ReplaceAll(body, bSub.ID, "")
		}
		noLeak("POST "+p.path, body)
		// With B's stolen CSRF token, and with none: refused before anything.
		for _, tok := range []string{bCSRF, "-"} {
			if st, _ := A.post(p.path, p.form, tok); st != http.StatusForbidden {
				t.Errorf("POST %s as A with a foreign or no CSRF token: %d, want 403", p.path, st)
			}
		}
		// B's own CSRF token without B's cookie: no session.
		anon := newConsoleSession(t, srv)
		if st, _ := anon.post(p.path, p.form, bCSRF); st != http.StatusUnauthorized {
			t.Errorf("POST %s without a session: %d, want 401", p.path, st)
		}
	}
	// B is untouched: its key active, tenant active, item there, no tenant made.
	if k, err := op.GetKey(ctx, tb.ID, bKeyID); err != nil || k.Status != "active" {
		t.Errorf("B's key after the attacks: %+v %v", k, err)
	}
	if got, err := op.Tenant(ctx, tb.ID); err != nil || got.Status != "active" {
		t.Errorf("B after the attacks: %+v %v", got, err)
	}
	if out, err := dbB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(secretTable), Key: bItemKey}); err != nil || out.Item == nil {
		t.Errorf("B's item after the attacks: %v", err)
	} else if v, _ := out.Item["pay"].(*types.AttributeValueMemberS); v == nil || v.Value != secretValue {
		t.Errorf("B's item changed by the attacks: %v", out.Item["pay"])
	}
	if got, err := apiB.Subscription(ctx, tb.ID, bSub.ID); err != nil || got.State != "paused" {
		t.Errorf("B's subscription after the attacks: %v %v", got.State, err)
	}
	if ls, err := dbB.ListBackups(ctx, &dynamodb.ListBackupsInput{}); err != nil || len(ls.BackupSummaries) != 1 {
		t.Errorf("B's backups after the attacks: %v %v", ls, err)
	}
	if keys, _ := op.Keys(ctx, tb.ID); len(keys) != len(bKeys) {
		t.Errorf("B has %d keys after the attacks, had %d", len(keys), len(bKeys))
	}
	if ts, _ := op.Tenants(ctx); len(ts) != 3 { // default, A, B
		t.Errorf("%d tenants after the attacks, want 3", len(ts))
	}

	// A's refused attempts are in A's audit log, as the admin API's denials.
	st, body, _ = A.do("GET", "/console/tenants/"+ta.ID+"/audit?outcome=denied", nil)
	if st != 200 || !strings.Contains(body, "outcome-denied") {
		t.Errorf("A's audit view shows no denial: %d", st)
	}

	// No session: every page redirects to sign-in.
	anon := newConsoleSession(t, srv)
	for _, g := range append([]string{"/console/", "/console/tenants", "/console/usage", "/console/audit", "/console/health"}, gets...) {
		if !strings.HasPrefix(g, "/console/") {
			g = bPath + g
		}
		st, _, h := anon.do("GET", g, nil)
		if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/signin") {
			t.Errorf("GET %s without a session: %d %q", g, st, h.Get("Location"))
		}
	}

	// Sign-out ends the session: the old cookie no longer works.
	old := A.cookie()
	if st, _ := A.post("/console/signout", nil, ""); st != http.StatusSeeOther {
		t.Fatalf("sign out: %d", st)
	}
	replay := newConsoleSession(t, srv)
	u, _ := url.Parse(srv.Endpoint + "/console/")
	replay.jar.SetCookies(u, []*http.Cookie{{Name: "tenantdb_console", Value: old, Path: "/console/"}})
	if st, _, h := replay.do("GET", "/console/tenants/"+ta.ID, nil); st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/signin") {
		t.Errorf("the signed-out session's cookie still works: %d", st)
	}
	if st, _ := replay.post("/console/tenants/"+ta.ID+"/keys", url.Values{"role": {"app"}}, A.csrf); st != http.StatusUnauthorized {
		t.Errorf("a POST with the signed-out session: %d, want 401", st)
	}
	// App keys cannot sign in at all.
	app := srv.NewKey(t, ta.ID, "app")
	C := newConsoleSession(t, srv)
	C.do("GET", "/console/signin", nil)
	if st, _ := C.post("/console/signin", url.Values{"key": {app.Key}}, ""); st != http.StatusForbidden {
		t.Errorf("an app key signs in: %d", st)
	}
}
