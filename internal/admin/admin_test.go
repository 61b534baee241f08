package admin

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

type harness struct {
	srv   *httptest.Server
	cat   *catalog.Catalog
	auth  *auth.Authenticator
	audit *audit.Log
	op    *Client // the operator
	jwt   *auth.JWTVerifier
}

var hsSecret = []byte("dev-secret-for-tests")

func newHarness(t *testing.T, jwks string) *harness {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sk, err := auth.NewServerKey(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{cat: catalog.Open(kv.NewLocal(db), catalog.Options{})}
	h.audit = audit.Open(kv.NewLocal(db), audit.Options{Logger: quiet})
	h.auth = auth.New(h.cat, sk, auth.Options{Denied: h.audit.Denied, Logger: quiet})
	h.jwt = auth.NewJWTVerifier(auth.JWTOptions{HS256Secret: hsSecret, Issuer: "https://idp.test/"})
	o := Options{Catalog: h.cat, Auth: h.auth, Audit: h.audit, JWT: h.jwt, Logger: quiet}
	if jwks != "" {
		o.JWKS, err = LoadJWKS(ctx, jwks, h.jwt, quiet)
		if err != nil {
			t.Fatal(err)
		}
	}
	ah, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(ah)
	t.Cleanup(func() {
		h.srv.Close()
		h.auth.Close()
		db.Close()
	})
	opKey, _, err := h.auth.EnsureOperator(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	h.op = h.client(opKey.String())
	return h
}

func (h *harness) client(key string) *Client {
	return &Client{Endpoint: h.srv.URL, Key: key, HTTP: h.srv.Client()}
}

// raw sends a request and returns the status and body.
func (h *harness) raw(t *testing.T, method, path, bearer, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func apiCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%d %s", e.Status, e.Code)
	}
	return fmt.Sprint(err)
}

func TestTenantLifecycle(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "")
	a, err := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "Acme Corp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ID) != 32 || a.Name != "Acme Corp" || a.Status != "active" || a.Slug != "acme-corp" {
		t.Fatalf("created %+v", a)
	}
	if _, err := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "ACME corp"}); apiCode(err) != "409 Conflict" {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := h.op.CreateTenant(ctx, CreateTenantRequest{Name: ""}); apiCode(err) != "400 ValidationException" {
		t.Fatalf("empty name: %v", err)
	}
	b, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "Beta"})
	list, err := h.op.Tenants(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %v %v", list, err)
	}
	if got, err := h.op.Tenant(ctx, "acme-corp"); err != nil || got.ID != a.ID {
		t.Fatalf("show by slug: %+v %v", got, err)
	}
	if got, err := h.op.SuspendTenant(ctx, a.ID); err != nil || got.Status != "suspended" {
		t.Fatalf("suspend: %+v %v", got, err)
	}
	if got, err := h.op.ResumeTenant(ctx, a.ID); err != nil || got.Status != "active" {
		t.Fatalf("resume: %+v %v", got, err)
	}
	if _, err := h.op.DeleteTenant(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.op.Tenant(ctx, b.ID); apiCode(err) != "404 NotFound" {
		t.Fatalf("deleted tenant: %v", err)
	}
	page, err := h.op.Audit(ctx, "", AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range page.Records {
		actions = append(actions, r.Action)
	}
	if got := strings.Join(actions, ","); got != "tenant.create,tenant.create,tenant.suspend,tenant.resume,tenant.delete" {
		t.Fatalf("platform audit: %s", got)
	}
	if v, err := h.op.VerifyAudit(ctx, a.ID); err != nil || !v.OK || v.Records != 3 {
		t.Fatalf("verify: %+v %v", v, err)
	}
}

func TestKeys(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "")
	a, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "a"})
	k, err := h.op.CreateKey(ctx, a.ID, CreateKeyRequest{Role: "read", Env: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if k.TenantID != a.ID || k.Role != "read" || k.Env != "test" || !strings.HasPrefix(k.AccessKeyID, "sk_test_"+a.ID+"_") ||
		k.Key != k.AccessKeyID+"_"+k.SecretAccessKey || k.Status != "active" {
		t.Fatalf("created %+v", k)
	}
	// The key works on the admin API for whoami, and never shows its secret again.
	who, err := h.client(k.Key).WhoAmI(ctx)
	if err != nil || who.TenantID != a.ID || who.Role != "read" || who.Env != "test" {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	status, body := h.raw(t, "GET", "/v1/tenants/"+a.ID+"/keys", h.op.Key, "")
	if status != 200 || strings.Contains(body, k.SecretAccessKey) || !strings.Contains(body, k.AccessKeyID) {
		t.Fatalf("list: %d %s", status, body)
	}
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	k2, err := h.op.CreateKey(ctx, a.ID, CreateKeyRequest{ExpiresAt: &exp})
	if err != nil || k2.Role != "app" || k2.Env != "live" || !k2.ExpiresAt.Equal(exp) {
		t.Fatalf("default role/env, expiry: %+v %v", k2, err)
	}
	if _, err := h.op.CreateKey(ctx, a.ID, CreateKeyRequest{Role: "operator"}); apiCode(err) != "400 ValidationException" {
		t.Fatalf("operator role: %v", err)
	}
	if _, err := h.op.CreateKey(ctx, a.ID, CreateKeyRequest{Env: "Bad_Env"}); apiCode(err) != "400 ValidationException" {
		t.Fatalf("bad env: %v", err)
	}
	r, err := h.op.RotateKey(ctx, a.ID, k.AccessKeyID, 0)
	if err != nil || r.SecretAccessKey == "" || r.Role != "read" || r.Env != "test" {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	if _, err := h.client(k.Key).WhoAmI(ctx); apiCode(err) != "401 Unauthorized" {
		t.Fatalf("rotated-away key: %v", err)
	}
	if rv, err := h.op.RevokeKey(ctx, a.ID, r.KeyID); err != nil || rv.Status != "revoked" {
		t.Fatalf("revoke: %+v %v", rv, err)
	}
	if _, err := h.client(r.Key).WhoAmI(ctx); apiCode(err) != "401 Unauthorized" {
		t.Fatalf("revoked key: %v", err)
	}
	if _, err := h.op.RevokeKey(ctx, a.ID, "nosuchkey1"); apiCode(err) != "404 NotFound" {
		t.Fatalf("unknown key: %v", err)
	}
	keys, _ := h.op.Keys(ctx, a.ID)
	if len(keys) != 3 {
		t.Fatalf("%d keys listed, want 3", len(keys))
	}
	page, _ := h.op.Audit(ctx, a.ID, AuditQuery{})
	var actions []string
	for _, r := range page.Records {
		actions = append(actions, r.Action)
	}
	if got := strings.Join(actions, ","); got != "tenant.create,key.create,key.create,key.rotate,auth:bearer,key.revoke,auth:bearer" {
		t.Fatalf("tenant audit: %s", got)
	}
}

// TestCrossTenant: tenant A's admin key on tenant B's endpoints learns
// nothing, changes nothing, and every attempt is audited on A.
func TestCrossTenant(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "")
	a, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "a"})
	b, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "b"})
	aAdmin, _ := h.op.CreateKey(ctx, a.ID, CreateKeyRequest{Role: "admin"})
	aApp, _ := h.op.CreateKey(ctx, a.ID, CreateKeyRequest{Role: "app"})
	bKey, _ := h.op.CreateKey(ctx, b.ID, CreateKeyRequest{Role: "app"})
	bAuditBefore, _ := h.op.Audit(ctx, b.ID, AuditQuery{})
	aAuditBefore, _ := h.op.Audit(ctx, a.ID, AuditQuery{})

	ghost := tenancy.NewTenantID().String()
	tenantRoutes := []struct{ method, path, body string }{
		{"GET", "/v1/tenants/%s", ""},
		{"GET", "/v1/tenants/%s/keys", ""},
		{"POST", "/v1/tenants/%s/keys", `{"role":"admin"}`},
		{"GET", "/v1/tenants/%s/keys/" + bKey.KeyID, ""},
		{"DELETE", "/v1/tenants/%s/keys/" + bKey.KeyID, ""},
		{"POST", "/v1/tenants/%s/keys/" + bKey.KeyID + "/rotate", ""},
		{"POST", "/v1/tenants/%s/sessions", `{"role":"app"}`},
		{"GET", "/v1/tenants/%s/audit", ""},
		{"GET", "/v1/tenants/%s/audit/verify", ""},
		{"POST", "/v1/tenants/%s/invites", `{}`},
	}
	attempts := 0
	for _, rt := range tenantRoutes {
		sb, bb := h.raw(t, rt.method, fmt.Sprintf(rt.path, b.ID), aAdmin.Key, rt.body)
		sg, bg := h.raw(t, rt.method, fmt.Sprintf(rt.path, ghost), aAdmin.Key, rt.body)
		attempts += 2
		if sb != 404 || sb != sg || bb != bg {
			t.Errorf("%s %s: on B %d %s; on a tenant that does not exist %d %s", rt.method, rt.path, sb, bb, sg, bg)
		}
		if strings.Contains(bb, b.ID) || strings.Contains(bb, bKey.KeyID) {
			t.Errorf("%s %s: answer mentions B: %s", rt.method, rt.path, bb)
		}
		// By slug too.
		if s, _ := h.raw(t, rt.method, fmt.Sprintf(rt.path, "b"), aAdmin.Key, rt.body); s != 404 {
			t.Errorf("%s %s by slug: %d", rt.method, rt.path, s)
		}
		attempts++
		// App keys have no admin access at all, even to their own tenant.
		if s, body := h.raw(t, rt.method, fmt.Sprintf(rt.path, a.ID), aApp.Key, rt.body); s != 403 || !strings.Contains(body, "AccessDenied") {
			t.Errorf("app key %s %s: %d %s", rt.method, rt.path, s, body)
		}
		attempts++
	}
	operatorRoutes := []struct{ method, path, body string }{
		{"POST", "/v1/tenants", `{"name":"evil"}`},
		{"GET", "/v1/tenants", ""},
		{"POST", "/v1/tenants/" + b.ID + "/suspend", ""},
		{"POST", "/v1/tenants/" + a.ID + "/resume", ""},
		{"DELETE", "/v1/tenants/" + b.ID, ""},
		{"GET", "/v1/audit", ""},
		{"POST", "/v1/tenants/" + a.ID + "/members", `{"sub":"me"}`},
	}
	for _, rt := range operatorRoutes {
		s, body := h.raw(t, rt.method, rt.path, aAdmin.Key, rt.body)
		attempts++
		if s != 403 || strings.Contains(body, b.ID) {
			t.Errorf("admin key on operator route %s %s: %d %s", rt.method, rt.path, s, body)
		}
	}

	// Nothing changed for B.
	if got, _ := h.op.Tenant(ctx, b.ID); got.Status != "active" {
		t.Fatalf("B's status %s", got.Status)
	}
	if keys, _ := h.op.Keys(ctx, b.ID); len(keys) != 1 || keys[0].Status != "active" {
		t.Fatalf("B's keys %+v", keys)
	}
	if list, _ := h.op.Tenants(ctx); len(list) != 2 {
		t.Fatalf("tenants %v", list)
	}
	bAuditAfter, _ := h.op.Audit(ctx, b.ID, AuditQuery{})
	if len(bAuditAfter.Records) != len(bAuditBefore.Records) {
		t.Fatalf("B's audit log grew by %d records", len(bAuditAfter.Records)-len(bAuditBefore.Records))
	}
	// Every attempt is on A's log, as a denial by the key that tried.
	aAudit, _ := h.op.Audit(ctx, a.ID, AuditQuery{Limit: 1000})
	denied := 0
	for _, r := range aAudit.Records[len(aAuditBefore.Records):] {
		n := audit.DeniedAttempts(audit.Record(r))
		if n == 0 || (r.Actor != aAdmin.AccessKeyID && r.Actor != aApp.AccessKeyID) || !strings.HasPrefix(r.Action, "admin:") {
			t.Errorf("unexpected record %+v", r)
		}
		denied += int(n)
	}
	if denied != attempts {
		t.Fatalf("%d denials audited on A, want %d", denied, attempts)
	}

	// A's admin does work on A, within its env.
	own, err := h.client(aAdmin.Key).CreateKey(ctx, a.ID, CreateKeyRequest{Role: "read"})
	if err != nil || own.Env != "live" {
		t.Fatalf("own key: %+v %v", own, err)
	}
	if _, err := h.client(aAdmin.Key).CreateKey(ctx, a.ID, CreateKeyRequest{Env: "test"}); apiCode(err) != "403 AccessDeniedException" {
		t.Fatalf("other env: %v", err)
	}
	testKey, _ := h.op.CreateKey(ctx, a.ID, CreateKeyRequest{Env: "test"})
	if _, err := h.client(aAdmin.Key).RevokeKey(ctx, a.ID, testKey.KeyID); apiCode(err) != "404 NotFound" {
		t.Fatalf("revoke key of other env: %v", err)
	}
	keys, _ := h.client(aAdmin.Key).Keys(ctx, a.ID)
	for _, k := range keys {
		if k.Env != "live" {
			t.Fatalf("admin key listed a %s key", k.Env)
		}
	}
	if _, err := h.client(aAdmin.Key).Audit(ctx, a.ID, AuditQuery{}); err != nil {
		t.Fatalf("own audit: %v", err)
	}
}

func TestSessionsAPI(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "")
	a, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "a"})
	s, err := h.op.CreateSession(ctx, a.ID, SessionRequest{Role: "read", Tables: []string{"T"}, DurationSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 1 || !strings.HasPrefix(s.AccessKeyID, "tk_live_"+a.ID) || s.SessionToken == "" || time.Until(s.Expiration) < 59*time.Minute {
		t.Fatalf("session %+v", s)
	}
	var raw map[string]any
	_, body := h.raw(t, "POST", "/v1/tenants/"+a.ID+"/sessions", h.op.Key, `{}`)
	json.Unmarshal([]byte(body), &raw)
	for _, k := range []string{"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"} {
		if raw[k] == nil {
			t.Errorf("session answer lacks %s: %s", k, body)
		}
	}
	if _, err := h.op.CreateSession(ctx, a.ID, SessionRequest{DurationSeconds: 13 * 3600}); apiCode(err) != "400 ValidationException" {
		t.Fatalf("13h: %v", err)
	}
	page, _ := h.op.Audit(ctx, a.ID, AuditQuery{})
	n := 0
	for _, r := range page.Records {
		if r.Action == "session.issue" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d session.issue records, want 2", n)
	}
}

func TestErrorsAndAuth(t *testing.T) {
	h := newHarness(t, "")
	for _, tc := range []struct {
		method, path, bearer, body string
		status                     int
		code                       string
	}{
		{"GET", "/v1/tenants", "", "", 401, "Unauthorized"},
		{"GET", "/v1/tenants", "garbage", "", 401, "Unauthorized"},
		{"GET", "/v1/tenants", auth.NewAPIKey(keyspace.Platform, auth.OperatorEnv).String(), "", 401, "Unauthorized"},
		{"GET", "/v1/nope", h.op.Key, "", 404, "NotFound"},
		{"POST", "/v1/tenants", h.op.Key, `{"name":`, 400, "ValidationException"},
		{"POST", "/v1/tenants", h.op.Key, `{"name":"x","bogus":1}`, 400, "ValidationException"},
		{"POST", "/v1/tenants", h.op.Key, `{"name":"` + strings.Repeat("x", 70000) + `"}`, 413, "RequestEntityTooLarge"},
		{"GET", "/v1/tenants/not-a-tenant", h.op.Key, "", 404, "NotFound"},
		{"GET", "/v1/platform/tenants", h.op.Key, "", 401, "Unauthorized"},
	} {
		status, body := h.raw(t, tc.method, tc.path, tc.bearer, tc.body)
		var eb errorBody
		if err := json.Unmarshal([]byte(body), &eb); err != nil || status != tc.status || eb.Error.Code != tc.code || eb.Error.Message == "" {
			t.Errorf("%s %s: %d %s; want %d %s", tc.method, tc.path, status, apierr.Clip(body), tc.status, tc.code)
		}
	}
}

// JWTs for the platform tests.

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func makeJWT(t *testing.T, alg, kid string, key any, claims map[string]any) string {
	t.Helper()
	hdr := map[string]string{"alg": alg, "typ": "JWT"}
	if kid != "" {
		hdr["kid"] = kid
	}
	hb, _ := json.Marshal(hdr)
	cb, _ := json.Marshal(claims)
	signed := b64(hb) + "." + b64(cb)
	digest := sha256.Sum256([]byte(signed))
	var sig []byte
	switch k := key.(type) {
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(signed))
		sig = m.Sum(nil)
	case *rsa.PrivateKey:
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:]); err != nil {
			t.Fatal(err)
		}
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	}
	return signed + "." + b64(sig)
}

func claims(sub string, exp time.Duration) map[string]any {
	return map[string]any{"sub": sub, "iss": "https://idp.test/", "aud": "tenantdb", "exp": time.Now().Add(exp).Unix(), "iat": time.Now().Unix()}
}

func writeJWKS(t *testing.T, rsaKey *rsa.PrivateKey, ecKey *ecdsa.PrivateKey) string {
	t.Helper()
	ecPub, _ := ecKey.PublicKey.Bytes() // uncompressed point
	set := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "rsa1", "use": "sig", "alg": "RS256", "n": b64(rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": "ec1", "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(ecPub[1:33]), "y": b64(ecPub[33:])},
	}}
	data, _ := json.Marshal(set)
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPlatformMemberships(t *testing.T) {
	ctx := context.Background()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	h := newHarness(t, writeJWKS(t, rsaKey, ecKey))

	// alice owns a and b; bob owns c and is seeded into a; carol is invited to c.
	a, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "a", OwnerSub: "alice"})
	b, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "b", OwnerSub: "alice"})
	c, _ := h.op.CreateTenant(ctx, CreateTenantRequest{Name: "c", OwnerSub: "bob"})
	h.op.CreateTenant(ctx, CreateTenantRequest{Name: "d"})
	if _, err := h.op.AddMember(ctx, a.ID, AddMemberRequest{Sub: "bob", Role: "read"}); err != nil {
		t.Fatal(err)
	}
	cAdmin, _ := h.op.CreateKey(ctx, c.ID, CreateKeyRequest{Role: "admin"})
	inv, err := h.client(cAdmin.Key).CreateInvite(ctx, c.ID, InviteRequest{Role: "app", Email: "carol@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	carol := &Client{Endpoint: h.srv.URL, Token: makeJWT(t, "ES256", "ec1", ecKey, claims("carol", time.Hour)), HTTP: h.srv.Client()}
	if m, err := carol.AcceptInvite(ctx, inv.Token); err != nil || m.TenantID != c.ID || m.Role != "app" || m.Via != "invite" {
		t.Fatalf("accept: %+v %v", m, err)
	}
	if _, err := carol.AcceptInvite(ctx, inv.Token); apiCode(err) != "404 NotFound" {
		t.Fatalf("second accept: %v", err)
	}

	want := map[string][]string{
		"alice": {a.ID, b.ID},
		"bob":   {a.ID, c.ID},
		"carol": {c.ID},
		"dave":  {},
	}
	tokens := map[string]func(sub string) string{
		"HS256": func(sub string) string { return makeJWT(t, "HS256", "", hsSecret, claims(sub, time.Hour)) },
		"RS256": func(sub string) string { return makeJWT(t, "RS256", "rsa1", rsaKey, claims(sub, time.Hour)) },
		"ES256": func(sub string) string { return makeJWT(t, "ES256", "ec1", ecKey, claims(sub, time.Hour)) },
	}
	for alg, tok := range tokens {
		for sub, ids := range want {
			cl := &Client{Endpoint: h.srv.URL, Token: tok(sub), HTTP: h.srv.Client()}
			got, err := cl.PlatformTenants(ctx)
			if err != nil {
				t.Fatalf("%s %s: %v", alg, sub, err)
			}
			var gotIDs []string
			for _, m := range got.Tenants {
				gotIDs = append(gotIDs, m.TenantID)
			}
			if got.Sub != sub || !sameSet(gotIDs, ids) {
				t.Errorf("%s %s: tenants %v, want %v", alg, sub, gotIDs, ids)
			}
		}
	}

	// Bad tokens.
	pub := rsaKey.PublicKey
	for name, tok := range map[string]string{
		"expired":             makeJWT(t, "RS256", "rsa1", rsaKey, claims("alice", -time.Hour)),
		"wrong HS secret":     makeJWT(t, "HS256", "", []byte("other"), claims("alice", time.Hour)),
		"unknown kid":         makeJWT(t, "RS256", "rsa9", rsaKey, claims("alice", time.Hour)),
		"ES256 sig as RS256":  makeJWT(t, "RS256", "ec1", ecKey, claims("alice", time.Hour)),
		"HS256 with RSA pub":  makeJWT(t, "HS256", "rsa1", pub.N.Bytes(), claims("alice", time.Hour)),
		"alg none":            makeJWT(t, "none", "", []byte{}, claims("alice", time.Hour)),
		"wrong issuer":        makeJWT(t, "RS256", "rsa1", rsaKey, map[string]any{"sub": "alice", "iss": "evil", "exp": time.Now().Add(time.Hour).Unix()}),
		"no sub":              makeJWT(t, "RS256", "rsa1", rsaKey, map[string]any{"iss": "https://idp.test/", "exp": time.Now().Add(time.Hour).Unix()}),
		"an API key as a JWT": h.op.Key,
	} {
		cl := &Client{Endpoint: h.srv.URL, Token: tok, HTTP: h.srv.Client()}
		if _, err := cl.PlatformTenants(ctx); apiCode(err) != "401 Unauthorized" {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Deleting a tenant removes it from its members' lists.
	if _, err := h.op.DeleteTenant(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	cl := &Client{Endpoint: h.srv.URL, Token: tokens["RS256"]("alice"), HTTP: h.srv.Client()}
	got, _ := cl.PlatformTenants(ctx)
	if len(got.Tenants) != 1 || got.Tenants[0].TenantID != b.ID {
		t.Fatalf("after deleting a: %+v", got.Tenants)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestStatusTable(t *testing.T) {
	// Every kind has a code, and the table's statuses are REST statuses.
	for k := 0; k < apierrKindCount(); k++ {
		if Code(kind(k)) == "" {
			t.Errorf("kind %d has no code", k)
		}
		if s := Status(kind(k)); s < 400 || s > 599 {
			t.Errorf("kind %d has status %d", k, s)
		}
	}
}

func apierrKindCount() int   { return apierr.KindCount }
func kind(k int) apierr.Kind { return apierr.Kind(k) }

func TestJWKSFromURL(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	data, _ := os.ReadFile(writeJWKS(t, rsaKey, ecKey))
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer idp.Close()
	v := auth.NewJWTVerifier(auth.JWTOptions{})
	if _, err := LoadJWKS(context.Background(), idp.URL+"/.well-known/jwks.json", v, nil); err != nil {
		t.Fatal(err)
	}
	if c, err := v.Verify(makeJWT(t, "RS256", "rsa1", rsaKey, claims("u", time.Hour))); err != nil || c.Subject != "u" {
		t.Fatalf("Verify: %+v %v", c, err)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }))
	defer bad.Close()
	if _, err := LoadJWKS(context.Background(), bad.URL, v, nil); err == nil {
		t.Fatal("a failing JWKS URL was accepted")
	}
}
