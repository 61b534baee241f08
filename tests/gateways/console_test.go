package gateways

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// browser is a console client that keeps its cookies itself (a cookie jar
// would not tell two gateways on one host apart anyway) and can send each
// request to any gateway.
type browser struct {
	t       *testing.T
	cookies map[string]string
	csrf    string
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(s *harness.Server, method, path string, form url.Values) (int, string, http.Header) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.Endpoint+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for n, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: n, Value: v})
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.MaxAge < 0 {
			delete(b.cookies, ck.Name)
		} else {
			b.cookies[ck.Name] = ck.Value
		}
	}
	data, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindSubmatch(data); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(data), resp.Header
}

func (b *browser) post(s *harness.Server, path string, form url.Values) (int, string, http.Header) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	return b.do(s, "POST", path, form)
}

// sessionRecords returns the console session records of tenant id in the
// engine, read directly with the engine's key.
func sessionRecords(t *testing.T, f *harness.Cluster, id string) []map[string]types.AttributeValue {
	t.Helper()
	raw, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.EngineClient(t).Query(context.Background(), &dynamodb.QueryInput{
		TableName:                aws.String(f.EngineTable()),
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :s)"),
		ExpressionAttributeNames: map[string]string{"#p": "tenantdb:pk", "#s": "tenantdb:sk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: "ctl#" + hex.EncodeToString(append([]byte{'t'}, raw...))},
			":s": &types.AttributeValueMemberB{Value: append(append([]byte{'t'}, raw...), 'S')},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// TestConsoleAcrossGateways: a console session signed in through gateway
// A serves through gateway B with its CSRF token (its flash message too);
// signed out through B it is refused by A at once; the engine holds the
// session hashed and sealed, never its token or key; a key revoked
// through the API of B ends its session on A.
func TestConsoleAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{})
	gws := f.Gateways
	a, b := gws[0], gws[1]
	ctx := context.Background()
	admin := a.NewTenant(t, "console", "admin")
	other, err := a.Admin().CreateKey(ctx, admin.TenantID, client.CreateKeyRequest{Role: "read"})
	if err != nil {
		t.Fatal(err)
	}
	tpath := "/console/tenants/" + admin.TenantID

	br := &browser{t: t, cookies: map[string]string{}}
	br.do(a, "GET", "/console/signin", nil)
	if st, body, _ := br.post(a, "/console/signin", url.Values{"key": {admin.Key}}); st != http.StatusSeeOther {
		t.Fatalf("sign in through A: %d %s", st, body)
	}
	id := br.cookies["tenantdb_console"]
	if id == "" {
		t.Fatal("no session cookie after signing in")
	}
	st, body, _ := br.do(a, "GET", tpath, nil)
	if st != 200 {
		t.Fatalf("tenant page through A: %d %s", st, body)
	}
	csrfA := br.csrf

	st, body, _ = br.do(b, "GET", tpath, nil)
	if st != 200 || !strings.Contains(body, other.AccessKeyID) {
		t.Fatalf("the session through B: %d %s", st, body)
	}
	if br.csrf != csrfA {
		t.Fatalf("B renders CSRF token %q, A rendered %q", br.csrf, csrfA)
	}
	// A POST through B with A's token; its message shows on A.
	br.csrf = csrfA
	st, body, h := br.post(b, tpath+"/keys/"+other.KeyID+"/revoke", nil)
	if st != http.StatusSeeOther {
		t.Fatalf("revoke through B: %d %s", st, body)
	}
	if st, body, _ = br.do(a, "GET", h.Get("Location"), nil); st != 200 || !strings.Contains(body, "Revoked key "+other.AccessKeyID) {
		t.Fatalf("the message of B's POST on A: %d %s", st, body)
	}
	if st, body, _ = br.do(b, "GET", tpath, nil); strings.Contains(body, "Revoked key ") {
		t.Fatalf("the message shown on A shows again on B: %d %s", st, body)
	}
	// A wrong token is refused on either.
	br.csrf = "x" + csrfA[1:]
	if csrfA[0] == 'x' {
		br.csrf = "y" + csrfA[1:]
	}
	if st, _, _ = br.post(a, tpath+"/keys/"+other.KeyID+"/revoke", nil); st != http.StatusForbidden {
		t.Fatalf("a wrong CSRF token through A: %d, want 403", st)
	}

	// The engine holds one session record: neither the cookie's token, nor
	// the key, nor the CSRF token in it.
	recs := sessionRecords(t, f, admin.TenantID)
	if len(recs) != 1 {
		t.Fatalf("%d session records in the engine, want 1", len(recs))
	}
	_, tok, _ := strings.Cut(id, ".")
	for _, it := range recs {
		for name, v := range it {
			var raw []byte
			switch v := v.(type) {
			case *types.AttributeValueMemberB:
				raw = v.Value
			case *types.AttributeValueMemberS:
				raw = []byte(v.Value)
			}
			for what, secret := range map[string]string{"token": tok, "key secret": admin.SecretAccessKey, "CSRF token": csrfA} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Fatalf("the engine's session record holds the %s in %s", what, name)
				}
			}
		}
	}

	// Sign out through B: refused on A at once.
	br.csrf = csrfA
	if st, body, _ = br.post(b, "/console/signout", nil); st != http.StatusSeeOther {
		t.Fatalf("sign out through B: %d %s", st, body)
	}
	br.cookies["tenantdb_console"] = id
	if st, _, h = br.do(a, "GET", tpath, nil); st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/signin") {
		t.Fatalf("the signed-out session through A: %d %q, want a redirect to sign in", st, h.Get("Location"))
	}
	br.csrf = csrfA
	if st, _, _ = br.post(a, tpath+"/keys/"+other.KeyID+"/revoke", nil); st != http.StatusUnauthorized {
		t.Fatalf("a POST of the signed-out session through A: %d, want 401", st)
	}
	if n := len(sessionRecords(t, f, admin.TenantID)); n != 0 {
		t.Fatalf("%d session records in the engine after sign-out", n)
	}

	// The key behind a session revoked through B's API: the session ends
	// on A at its next use, and its record with it.
	br.do(a, "GET", "/console/signin", nil)
	if st, body, _ = br.post(a, "/console/signin", url.Values{"key": {admin.Key}}); st != http.StatusSeeOther {
		t.Fatalf("sign in again through A: %d %s", st, body)
	}
	op := &client.Client{Endpoint: b.Endpoint, Key: f.Operator.Key}
	if _, err := op.RevokeKey(ctx, admin.TenantID, admin.AccessKeyID[len(admin.AccessKeyID)-12:]); err != nil {
		t.Fatal(err)
	}
	within(t, "the revoked key's session ended on A", func() bool {
		st, _, _ := br.do(a, "GET", tpath, nil)
		return st == http.StatusUnauthorized || st == http.StatusSeeOther
	})
	if n := len(sessionRecords(t, f, admin.TenantID)); n != 0 {
		t.Fatalf("%d session records in the engine after the key's revocation ended the session", n)
	}
}
