package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// countingStore counts the reads the catalog makes.
type countingStore struct {
	*kv.Local
	db          *storage.DB
	gets, iters atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, k []byte) ([]byte, error) {
	s.gets.Add(1)
	return s.Local.Get(ctx, k)
}

func (s *countingStore) Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error {
	s.iters.Add(1)
	return s.Local.Scan(ctx, lo, hi, f)
}

// clock is a settable clock that starts at the real time (SDK signatures
// carry the real time and must be within 15 minutes of it).
type clock struct {
	mu sync.Mutex
	d  time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.d)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.d += d
	c.mu.Unlock()
}

type env struct {
	store  *countingStore
	cat    *catalog.Catalog
	auth   *Authenticator
	clock  *clock
	denied []string
	mu     sync.Mutex
}

func testKey(t testing.TB) *ServerKey {
	t.Helper()
	sk, err := NewServerKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func newEnv(t testing.TB, dir string, inMemory bool) *env {
	t.Helper()
	db, err := storage.Open(dir, storage.Options{InMemory: inMemory, NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{store: &countingStore{Local: kv.NewLocal(db), db: db}, clock: &clock{}}
	e.cat = catalog.Open(e.store, catalog.Options{Now: e.clock.now})
	e.auth = New(e.cat, testKey(t), Options{Now: e.clock.now, Denied: func(_ context.Context, p tenancy.Principal, _, reason string) {
		e.mu.Lock()
		e.denied = append(e.denied, p.KeyID+": "+reason)
		e.mu.Unlock()
	}})
	t.Cleanup(func() {
		e.auth.Close()
		db.Close()
	})
	return e
}

func (e *env) tenant(t testing.TB, name string) catalog.Tenant {
	t.Helper()
	ten, err := e.cat.CreateTenant(context.Background(), catalog.NewTenant{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return ten
}

func (e *env) key(t testing.TB, ten tenancy.TenantID, role tenancy.Role, envName string) APIKey {
	t.Helper()
	ik, err := e.auth.CreateKey(context.Background(), NewKey{Tenant: ten, Role: role, Env: envName})
	if err != nil {
		t.Fatal(err)
	}
	return ik.Key
}

func TestKeyFormat(t *testing.T) {
	ten := tenancy.NewTenantID()
	for range 100 {
		k := NewAPIKey(ten, "live")
		got, err := ParseKey(k.String())
		if err != nil || got != k {
			t.Fatalf("ParseKey(%q) = %+v, %v; want %+v", k, got, err, k)
		}
		id, session, err := ParseAccessKeyID(k.AccessKeyID())
		if err != nil || session || id.Tenant != ten || id.ID != k.ID || id.Env != "live" || id.Secret != "" {
			t.Fatalf("ParseAccessKeyID(%q) = %+v, %v", k.AccessKeyID(), id, err)
		}
		if len(k.ID) != idLen || len(k.Secret) != secretLen || strings.Count(k.String(), "_") != 4 {
			t.Fatalf("generated key %q has the wrong shape", k)
		}
	}
	op := NewAPIKey(keyspace.Platform, OperatorEnv)
	if got, err := ParseKey(op.String()); err != nil || !got.IsOperator() {
		t.Fatalf("operator key: %+v %v", got, err)
	}

	hex := ten.String()
	secret := strings.Repeat("A", 40)
	bad := []string{
		"",
		"sk_",
		"ak_live_" + hex + "_abcdefgh_" + secret,
		"sk_Live_" + hex + "_abcdefgh_" + secret, // upper-case env
		"sk_1ive_" + hex + "_abcdefgh_" + secret, // env starts with digit
		"sk__" + hex + "_abcdefgh_" + secret,     // empty env
		"sk_live_" + hex[:31] + "_abcdefgh_" + secret, // short tenant
		"sk_live_" + strings.ToUpper(hex) + "_abcdefgh_" + secret,
		"sk_live_" + hex + "_abcdefg_" + secret,                       // id too short
		"sk_live_" + hex + "_abcdefghijklmnopq_" + secret,             // id too long
		"sk_live_" + hex + "_abcDefgh_" + secret,                      // upper-case id
		"sk_live_" + hex + "_abcdefgh_" + secret[:31],                 // secret too short
		"sk_live_" + hex + "_abcdefgh_" + secret + "_",                // trailing _
		"sk_live_" + hex + "_abcdefgh_" + secret[:39] + "-",           // bad secret char
		"sk_live_" + hex + "_abcdefgh",                                // no secret
		"sk_op_" + hex + "_abcdefgh_" + secret,                        // op env with a tenant
		"sk_live_00000000000000000000000000000000_abcdefgh_" + secret, // platform with env
		"sk_live_" + hex + "_abcdefgh_" + strings.Repeat("A", 129),
		"sk_live_" + hex + "-_abcdefgh_" + secret,
	}
	for _, s := range bad {
		if k, err := ParseKey(s); !apierr.Is(err, apierr.UnrecognizedClient) {
			t.Errorf("ParseKey(%q) = %+v, %v; want UnrecognizedClient", s, k, err)
		} else if strings.Contains(err.Error(), "abcdefgh") {
			t.Errorf("error echoes the key: %v", err)
		}
	}
	for _, s := range []string{"AKIAIOSFODNN7EXAMPLE", "sk_live_" + hex, "sk_live_" + hex + "_abcdefgh_x", "tk_live_" + hex + "_abc"} {
		if _, _, err := ParseAccessKeyID(s); !apierr.Is(err, apierr.UnrecognizedClient) {
			t.Errorf("ParseAccessKeyID(%q) = %v; want UnrecognizedClient", s, err)
		}
	}
	if !ValidEnv("test2") || ValidEnv("op") || ValidEnv("a_b") || ValidEnv(strings.Repeat("a", 17)) {
		t.Error("ValidEnv")
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add(NewAPIKey(tenancy.NewTenantID(), "live").String())
	f.Add("sk_op_00000000000000000000000000000000_abcdefgh_" + strings.Repeat("Z", 40))
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		if k.String() != s {
			t.Fatalf("ParseKey(%q).String() = %q", s, k.String())
		}
	})
}

// sign builds a sigv4.Request for a DynamoDB call signed by aws-sdk-go-v2.
func sign(t testing.TB, akid, secret, token string, at time.Time) *sigv4.Request {
	t.Helper()
	body := []byte(`{"TableName":"t","Key":{"pk":{"S":"a"}}}`)
	req, _ := http.NewRequest("POST", "http://127.0.0.1:8000/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret, SessionToken: token}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, sha256hex(body), "dynamodb", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	// What Go's server shows of a request it received.
	req.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return &sigv4.Request{Method: req.Method, Path: req.URL.EscapedPath(), RawQuery: req.URL.RawQuery, Host: req.Host, Header: req.Header, Body: body}
}

func TestAuthenticateSigV4(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, t.TempDir(), true)
	a := e.tenant(t, "a")
	b := e.tenant(t, "b")
	appKey := e.key(t, a.ID, tenancy.RoleApp, "live")
	testKey := e.key(t, a.ID, tenancy.RoleRead, "test")
	bKey := e.key(t, b.ID, tenancy.RoleApp, "live")
	now := time.Now()

	check := func(name string, r *sigv4.Request, wantKind apierr.Kind, want tenancy.Principal) {
		t.Helper()
		p, err := e.auth.Authenticate(ctx, r)
		if wantKind != apierr.Internal || err != nil {
			if !apierr.Is(err, wantKind) {
				t.Errorf("%s: err = %v, want %v", name, err, wantKind)
			}
			return
		}
		if p.Tenant != want.Tenant || p.Role != want.Role || p.Env != want.Env || p.KeyID != want.KeyID {
			t.Errorf("%s: principal %+v, want %+v", name, p, want)
		}
	}
	ok := apierr.Internal // "no error" in check
	check("good", sign(t, appKey.AccessKeyID(), appKey.Secret, "", now), ok,
		tenancy.Principal{Tenant: a.ID, Env: "live", Role: tenancy.RoleApp, KeyID: appKey.AccessKeyID()})
	check("good again (cached)", sign(t, appKey.AccessKeyID(), appKey.Secret, "", now), ok,
		tenancy.Principal{Tenant: a.ID, Env: "live", Role: tenancy.RoleApp, KeyID: appKey.AccessKeyID()})
	check("test env key", sign(t, testKey.AccessKeyID(), testKey.Secret, "", now), ok,
		tenancy.Principal{Tenant: a.ID, Env: "test", Role: tenancy.RoleRead, KeyID: testKey.AccessKeyID()})
	check("tenant b", sign(t, bKey.AccessKeyID(), bKey.Secret, "", now), ok,
		tenancy.Principal{Tenant: b.ID, Env: "live", Role: tenancy.RoleApp, KeyID: bKey.AccessKeyID()})
	check("bad secret", sign(t, appKey.AccessKeyID(), appKey.Secret+"x", "", now), apierr.InvalidSignature, tenancy.Principal{})
	check("other tenant's secret", sign(t, appKey.AccessKeyID(), bKey.Secret, "", now), apierr.InvalidSignature, tenancy.Principal{})

	// The key's id moved to another env or tenant is a different, unknown key.
	otherEnv := appKey
	otherEnv.Env = "test"
	check("key id with other env", sign(t, otherEnv.AccessKeyID(), appKey.Secret, "", now), apierr.UnrecognizedClient, tenancy.Principal{})
	otherTenant := appKey
	otherTenant.Tenant = b.ID
	check("key id with other tenant", sign(t, otherTenant.AccessKeyID(), appKey.Secret, "", now), apierr.UnrecognizedClient, tenancy.Principal{})
	check("unknown key", sign(t, NewAPIKey(a.ID, "live").AccessKeyID(), "x", "", now), apierr.UnrecognizedClient, tenancy.Principal{})
	check("AWS-style key", sign(t, "AKIAIOSFODNN7EXAMPLE", "x", "", now), apierr.UnrecognizedClient, tenancy.Principal{})
	check("token with a long-term key", sign(t, appKey.AccessKeyID(), appKey.Secret, "tdb1.xyz", now), apierr.UnrecognizedClient, tenancy.Principal{})
	check("request 20 minutes old", sign(t, appKey.AccessKeyID(), appKey.Secret, "", now.Add(-20*time.Minute)), apierr.InvalidSignature, tenancy.Principal{})

	// Revocation takes effect on the next request, cache or not.
	if _, err := e.cat.RevokeCredential(ctx, tenancy.SystemScope(a.ID, "test"), appKey.ID); err != nil {
		t.Fatal(err)
	}
	check("revoked", sign(t, appKey.AccessKeyID(), appKey.Secret, "", now), apierr.UnrecognizedClient, tenancy.Principal{})

	// Suspension: refused with a clear error; resume restores.
	if _, err := e.cat.SetStatus(ctx, tenancy.SystemScope(b.ID, "test"), catalog.Suspended); err != nil {
		t.Fatal(err)
	}
	r := sign(t, bKey.AccessKeyID(), bKey.Secret, "", now)
	_, err := e.auth.Authenticate(ctx, r)
	if !apierr.Is(err, apierr.TenantSuspended) || !strings.Contains(err.Error(), "suspended") {
		t.Errorf("suspended tenant: %v", err)
	}
	if _, err := e.cat.SetStatus(ctx, tenancy.SystemScope(b.ID, "test"), catalog.Active); err != nil {
		t.Fatal(err)
	}
	check("resumed", sign(t, bKey.AccessKeyID(), bKey.Secret, "", now), ok,
		tenancy.Principal{Tenant: b.ID, Env: "live", Role: tenancy.RoleApp, KeyID: bKey.AccessKeyID()})

	// Expiry.
	ik, err := e.auth.CreateKey(ctx, NewKey{Tenant: a.ID, Role: tenancy.RoleApp, Expires: e.clock.now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	exp := ik.Key
	check("not yet expired", sign(t, exp.AccessKeyID(), exp.Secret, "", now), ok,
		tenancy.Principal{Tenant: a.ID, Env: "live", Role: tenancy.RoleApp, KeyID: exp.AccessKeyID()})
	e.clock.advance(2 * time.Minute)
	check("expired", sign(t, exp.AccessKeyID(), exp.Secret, "", time.Now()), apierr.ExpiredToken, tenancy.Principal{})

	// Deleted tenant: its keys are unknown.
	if err := e.cat.DeleteTenant(ctx, tenancy.SystemScope(b.ID, "test"), nil); err != nil {
		t.Fatal(err)
	}
	check("deleted tenant", sign(t, bKey.AccessKeyID(), bKey.Secret, "", time.Now()), apierr.UnrecognizedClient, tenancy.Principal{})

	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.denied) < 5 {
		t.Errorf("denied hook called %d times: %q", len(e.denied), e.denied)
	}
}

func TestOneLookup(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, t.TempDir(), true)
	a := e.tenant(t, "a")
	k := e.key(t, a.ID, tenancy.RoleApp, "live")
	// A catalog that has not read tenant a yet: first use reads the
	// credential (one Get) and the tenant record (one Get), no scans.
	cold := catalog.Open(e.store, catalog.Options{})
	au := New(cold, testKey(t), Options{})
	defer au.Close()
	e.store.gets.Store(0)
	e.store.iters.Store(0)
	if _, err := au.Authenticate(ctx, sign(t, k.AccessKeyID(), k.Secret, "", time.Now())); err != nil {
		t.Fatal(err)
	}
	if g, i := e.store.gets.Load(), e.store.iters.Load(); g != 2 || i != 0 {
		t.Fatalf("cold catalog: %d Gets and %d iterators, want 2 and 0", g, i)
	}
	// Another key of a tenant the catalog knows: exactly one Get.
	k2 := e.key(t, a.ID, tenancy.RoleRead, "live")
	e.store.gets.Store(0)
	if _, err := au.Authenticate(ctx, sign(t, k2.AccessKeyID(), k2.Secret, "", time.Now())); err != nil {
		t.Fatal(err)
	}
	if g, i := e.store.gets.Load(), e.store.iters.Load(); g != 1 || i != 0 {
		t.Fatalf("known tenant: %d Gets and %d iterators, want 1 and 0", g, i)
	}
	// Hot path: none.
	e.store.gets.Store(0)
	for range 10 {
		if _, err := au.Authenticate(ctx, sign(t, k2.AccessKeyID(), k2.Secret, "", time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	if g := e.store.gets.Load(); g != 0 {
		t.Fatalf("hot path: %d Gets, want 0", g)
	}
	// Many tenants and keys do not change the cost of a lookup.
	for i := range 50 {
		ten := e.tenant(t, fmt.Sprintf("t%d", i))
		e.key(t, ten.ID, tenancy.RoleApp, "live")
	}
	k3 := e.key(t, a.ID, tenancy.RoleApp, "live")
	e.store.gets.Store(0)
	e.store.iters.Store(0)
	if _, err := au.AuthenticateBearer(ctx, k3.String()); err != nil {
		t.Fatal(err)
	}
	if g, i := e.store.gets.Load(), e.store.iters.Load(); g != 1 || i != 0 {
		t.Fatalf("bearer among 50 tenants: %d Gets and %d iterators, want 1 and 0", g, i)
	}
}

func TestBearer(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, t.TempDir(), true)
	a := e.tenant(t, "a")
	k := e.key(t, a.ID, tenancy.RoleAdmin, "live")
	p, err := e.auth.AuthenticateBearer(ctx, k.String())
	if err != nil || p.Tenant != a.ID || p.Role != tenancy.RoleAdmin {
		t.Fatalf("bearer: %+v %v", p, err)
	}
	wrong := k
	wrong.Secret = strings.Repeat("Q", 40)
	if _, err := e.auth.AuthenticateBearer(ctx, wrong.String()); !apierr.Is(err, apierr.UnrecognizedClient) {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := e.auth.AuthenticateBearer(ctx, k.AccessKeyID()); !apierr.Is(err, apierr.UnrecognizedClient) {
		t.Fatalf("access key id only: %v", err)
	}
	// Rotation: the new key works, the old one stops at once.
	ik, err := e.auth.RotateKey(ctx, tenancy.SystemScope(a.ID, "test"), k.ID, 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.auth.AuthenticateBearer(ctx, k.String()); !apierr.Is(err, apierr.UnrecognizedClient) {
		t.Fatalf("old key after rotation: %v", err)
	}
	if p, err := e.auth.AuthenticateBearer(ctx, ik.Key.String()); err != nil || p.Role != tenancy.RoleAdmin {
		t.Fatalf("new key: %+v %v", p, err)
	}
	// Rotation with grace: the old key works until the grace ends.
	ik2, err := e.auth.RotateKey(ctx, tenancy.SystemScope(a.ID, "test"), ik.Key.ID, time.Hour, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.auth.AuthenticateBearer(ctx, ik.Key.String()); err != nil {
		t.Fatalf("old key within grace: %v", err)
	}
	e.clock.advance(2 * time.Hour)
	if _, err := e.auth.AuthenticateBearer(ctx, ik.Key.String()); !apierr.Is(err, apierr.ExpiredToken) {
		t.Fatalf("old key after grace: %v", err)
	}
	if _, err := e.auth.AuthenticateBearer(ctx, ik2.Key.String()); err != nil {
		t.Fatalf("newest key: %v", err)
	}
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, t.TempDir(), true)
	a := e.tenant(t, "a")
	b := e.tenant(t, "b")
	opKey, created, err := e.auth.EnsureOperator(ctx, "")
	if err != nil || !created {
		t.Fatalf("EnsureOperator: %v %v", created, err)
	}
	op, err := e.auth.AuthenticateBearer(ctx, opKey.String())
	if err != nil || !op.IsOperator() {
		t.Fatalf("operator: %+v %v", op, err)
	}
	adminKey := e.key(t, a.ID, tenancy.RoleAdmin, "live")
	admin, _ := e.auth.AuthenticateBearer(ctx, adminKey.String())
	appKey := e.key(t, a.ID, tenancy.RoleApp, "live")
	app, _ := e.auth.AuthenticateBearer(ctx, appKey.String())

	// Who may mint.
	for _, tc := range []struct {
		name string
		req  SessionRequest
		kind apierr.Kind
	}{
		{"app key", SessionRequest{Tenant: a.ID, Role: tenancy.RoleRead, Issuer: app}, apierr.AccessDenied},
		{"admin for other tenant", SessionRequest{Tenant: b.ID, Role: tenancy.RoleRead, Issuer: admin}, apierr.AccessDenied},
		{"admin for other env", SessionRequest{Tenant: a.ID, Env: "test", Role: tenancy.RoleRead, Issuer: admin}, apierr.AccessDenied},
		{"operator role", SessionRequest{Tenant: a.ID, Role: tenancy.RoleOperator, Issuer: op}, apierr.Validation},
		{"too long", SessionRequest{Tenant: a.ID, Role: tenancy.RoleRead, Duration: 13 * time.Hour, Issuer: op}, apierr.Validation},
		{"bad action", SessionRequest{Tenant: a.ID, Role: tenancy.RoleRead, Policy: &tenancy.Policy{Actions: []string{"Explode"}}, Issuer: op}, apierr.Validation},
		{"carrier action", SessionRequest{Tenant: a.ID, Role: tenancy.RoleRead, Policy: &tenancy.Policy{Actions: []string{"dynamodb:ExecuteStatement"}}, Issuer: op}, apierr.Validation},
		{"unknown tenant", SessionRequest{Tenant: tenancy.NewTenantID(), Role: tenancy.RoleRead, Issuer: op}, apierr.NotFound},
	} {
		if _, err := e.auth.IssueSession(ctx, tc.req); !apierr.Is(err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.kind)
		}
	}

	s, err := e.auth.IssueSession(ctx, SessionRequest{
		Tenant: a.ID, Role: tenancy.RoleApp, Issuer: admin,
		Policy: &tenancy.Policy{Tables: []string{"Orders"}, Actions: []string{"GetItem", "dynamodb:Query"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(s.Expiration); d < 14*time.Minute || d > 16*time.Minute {
		t.Errorf("default expiration in %v, want 15m", d)
	}
	if strings.Contains(s.SessionToken, s.SecretAccessKey) || strings.Contains(s.SessionToken, a.ID.String()) {
		t.Error("session token reveals its contents")
	}
	e.store.gets.Store(0)
	p, err := e.auth.Authenticate(ctx, sign(t, s.AccessKeyID, s.SecretAccessKey, s.SessionToken, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if g := e.store.gets.Load(); g != 0 {
		t.Errorf("session validation made %d storage reads, want 0", g)
	}
	if p.Tenant != a.ID || p.Role != tenancy.RoleApp || p.Env != "live" || p.Policy == nil {
		t.Fatalf("session principal %+v", p)
	}
	// Policy narrowing through the guard.
	var g tenancy.Guard
	if sc, err := g.Admit(p, dynamo.ActionOf("GetItem")); err != nil || !sc.AllowsTable("Orders") || sc.AllowsTable("Users") {
		t.Errorf("GetItem: %v; Orders %v Users %v", err, sc.AllowsTable("Orders"), sc.AllowsTable("Users"))
	}
	if _, err := g.Admit(p, dynamo.ActionOf("PutItem")); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("PutItem outside the policy: %v", err)
	}

	// Tampering with the token, or using it with another id or secret.
	bad := []*sigv4.Request{
		sign(t, s.AccessKeyID, s.SecretAccessKey, s.SessionToken[:len(s.SessionToken)-2]+"AA", time.Now()),
		sign(t, s.AccessKeyID, s.SecretAccessKey, "", time.Now()),
		sign(t, strings.Replace(s.AccessKeyID, a.ID.String(), b.ID.String(), 1), s.SecretAccessKey, s.SessionToken, time.Now()),
	}
	for i, r := range bad {
		if _, err := e.auth.Authenticate(ctx, r); !apierr.Is(err, apierr.UnrecognizedClient) {
			t.Errorf("bad session request %d: %v", i, err)
		}
	}
	if _, err := e.auth.Authenticate(ctx, sign(t, s.AccessKeyID, "wrong", s.SessionToken, time.Now())); !apierr.Is(err, apierr.InvalidSignature) {
		t.Errorf("wrong session secret: %v", err)
	}
	// The valid token still works after a tampered one was tried.
	if _, err := e.auth.Authenticate(ctx, sign(t, s.AccessKeyID, s.SecretAccessKey, s.SessionToken, time.Now())); err != nil {
		t.Fatalf("valid token after tampering attempts: %v", err)
	}

	// Operator-minted read session for tenant b; suspension ends it.
	sb, err := e.auth.IssueSession(ctx, SessionRequest{Tenant: b.ID, Role: tenancy.RoleRead, Duration: time.Hour, Issuer: op})
	if err != nil {
		t.Fatal(err)
	}
	rb := func() error {
		_, err := e.auth.Authenticate(ctx, sign(t, sb.AccessKeyID, sb.SecretAccessKey, sb.SessionToken, time.Now()))
		return err
	}
	if err := rb(); err != nil {
		t.Fatal(err)
	}
	e.cat.SetStatus(ctx, tenancy.SystemScope(b.ID, "test"), catalog.Suspended)
	if err := rb(); !apierr.Is(err, apierr.TenantSuspended) {
		t.Errorf("session of suspended tenant: %v", err)
	}
	e.cat.SetStatus(ctx, tenancy.SystemScope(b.ID, "test"), catalog.Active)
	if err := rb(); err != nil {
		t.Errorf("after resume: %v", err)
	}

	// Revoking the issuing admin key ends its sessions.
	if _, err := e.cat.RevokeCredential(ctx, tenancy.SystemScope(a.ID, "test"), adminKey.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.auth.Authenticate(ctx, sign(t, s.AccessKeyID, s.SecretAccessKey, s.SessionToken, time.Now())); !apierr.Is(err, apierr.UnrecognizedClient) {
		t.Errorf("session of a revoked issuer: %v", err)
	}

	// Expiry.
	e.clock.advance(61 * time.Minute)
	if err := rb(); !apierr.Is(err, apierr.ExpiredToken) {
		t.Errorf("expired session: %v", err)
	}
	// A session cannot mint a session.
	sp := tenancy.Principal{Tenant: a.ID, Env: "live", Role: tenancy.RoleAdmin, KeyID: s.AccessKeyID}
	if _, err := e.auth.IssueSession(ctx, SessionRequest{Tenant: a.ID, Role: tenancy.RoleRead, Issuer: sp}); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("session minting a session: %v", err)
	}
}

// TestSDKClient runs the real DynamoDB client against a loopback server
// that authenticates with the Authenticator, as tenantdb's server does.
func TestSDKClient(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, t.TempDir(), true)
	a := e.tenant(t, "a")
	k := e.key(t, a.ID, tenancy.RoleApp, "live")
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p, err := e.auth.Authenticate(r.Context(), &sigv4.Request{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Host: r.Host, Header: r.Header, Body: body})
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if err != nil {
			var ae *apierr.Error
			errors.As(err, &ae)
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, ae.Kind, ae.Message)
			return
		}
		got.Store(p)
		io.WriteString(w, `{"TableNames":[]}`)
	}))
	defer srv.Close()
	client := func(akid, secret, token string) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{
			Region: "eu-west-3", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider(akid, secret, token),
		})
	}
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return fmt.Sprint(err)
	}
	if _, err := client(k.AccessKeyID(), k.Secret, "").ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("good key: %v", err)
	}
	if p := got.Load().(tenancy.Principal); p.Tenant != a.ID || p.Env != "live" {
		t.Fatalf("principal %+v", p)
	}
	if _, err := client(k.AccessKeyID(), "nope", "").ListTables(ctx, &dynamodb.ListTablesInput{}); code(err) != "InvalidSignatureException" {
		t.Errorf("bad secret: %v", err)
	}
	if _, err := client(NewAPIKey(a.ID, "live").AccessKeyID(), "x", "").ListTables(ctx, &dynamodb.ListTablesInput{}); code(err) != "UnrecognizedClientException" {
		t.Errorf("unknown key: %v", err)
	}
	op, _, _ := e.auth.EnsureOperator(ctx, "")
	opP, _ := e.auth.AuthenticateBearer(ctx, op.String())
	s, err := e.auth.IssueSession(ctx, SessionRequest{Tenant: a.ID, Role: tenancy.RoleRead, Issuer: opP})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client(s.AccessKeyID, s.SecretAccessKey, s.SessionToken).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("session: %v", err)
	}
	if p := got.Load().(tenancy.Principal); p.Role != tenancy.RoleRead || p.KeyID != s.AccessKeyID {
		t.Fatalf("session principal %+v", p)
	}
	e.clock.advance(16 * time.Minute)
	if _, err := client(s.AccessKeyID, s.SecretAccessKey, s.SessionToken).ListTables(ctx, &dynamodb.ListTablesInput{}); code(err) != "ExpiredTokenException" {
		t.Errorf("expired session: %v", err)
	}
}

// TestSecretsSealedOnDisk writes keys to an on-disk store and checks that
// no secret appears in any file of the data directory.
func TestSecretsSealedOnDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := newEnv(t, dir, false)
	var secrets []string
	for i := range 20 {
		ten := e.tenant(t, fmt.Sprintf("t%d", i))
		k := e.key(t, ten.ID, tenancy.RoleApp, "live")
		secrets = append(secrets, k.Secret)
	}
	op, _, err := e.auth.EnsureOperator(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, op.Secret)
	if err := e.store.db.Flush(); err != nil {
		t.Fatal(err)
	}
	// Reading back works, so the secrets are in there somewhere, sealed.
	if _, err := e.auth.AuthenticateBearer(ctx, op.String()); err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) || bytes.Contains(data, []byte(s[:16])) {
				t.Errorf("%s contains a secret in plaintext", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("only %d files in the data directory", files)
	}
}

func TestSealedSecretBoundToCredential(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, t.TempDir(), true)
	a := e.tenant(t, "a")
	k1 := e.key(t, a.ID, tenancy.RoleRead, "live")
	k2 := e.key(t, a.ID, tenancy.RoleAdmin, "live")
	// Copy k1's sealed secret into k2's record: it must not open there.
	c1, _ := e.cat.Credential(ctx, a.ID, k1.ID)
	raw, _ := e.store.db.Get(keyspace.Credential(a.ID, k2.ID))
	c2, _ := e.cat.Credential(ctx, a.ID, k2.ID)
	patched := bytes.Replace(raw, []byte(b64(c2.Sealed)), []byte(b64(c1.Sealed)), 1)
	if bytes.Equal(patched, raw) {
		t.Fatal("could not patch the record")
	}
	b := e.store.db.NewBatch()
	b.Set(keyspace.Credential(a.ID, k2.ID), patched)
	if err := e.store.db.Apply(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	k2.Secret = k1.Secret
	if _, err := e.auth.AuthenticateBearer(ctx, k2.String()); err == nil {
		t.Fatal("a sealed secret moved to another credential opened")
	}
	// Another server key cannot open anything.
	other, _ := NewServerKey(bytes.Repeat([]byte{8}, 32))
	au := New(e.cat, other, Options{})
	if _, err := au.AuthenticateBearer(ctx, k1.String()); !apierr.Is(err, apierr.Internal) {
		t.Fatalf("wrong server key: %v", err)
	}
}

func TestServerKeyFile(t *testing.T) {
	dir := t.TempDir()
	sk, created, err := LoadServerKey(dir, "")
	if err != nil || !created {
		t.Fatalf("first load: %v %v", created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, ServerKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("server.key mode %v, %v", fi.Mode(), err)
	}
	sk2, created, err := LoadServerKey(dir, "")
	if err != nil || created || !bytes.Equal(sk.Check(), sk2.Check()) {
		t.Fatalf("second load: %v %v", created, err)
	}
	fromEnv, _, err := LoadServerKey(t.TempDir(), strings.Repeat("ab", 32))
	if err != nil || bytes.Equal(fromEnv.Check(), sk.Check()) {
		t.Fatalf("env key: %v", err)
	}
	if _, _, err := LoadServerKey(dir, "short"); err == nil {
		t.Fatal("bad env key accepted")
	}
	os.Chmod(filepath.Join(dir, ServerKeyFile), 0o644)
	if _, _, err := LoadServerKey(dir, ""); err == nil {
		t.Fatal("world-readable server.key accepted")
	}
}

// bootstrapOperator does what the node does at start-up: EnsureOperator
// and, if it created or was given a new key, the operator credentials file
// in dir. It returns the file's path if it wrote one.
func bootstrapOperator(ctx context.Context, a *Authenticator, dir, given, region string) (string, error) {
	k, created, err := a.EnsureOperator(ctx, given)
	if err != nil || !created {
		return "", err
	}
	path := filepath.Join(dir, OperatorCredentialsFile)
	if err := WriteCredentialsFile(path, OperatorProfile, k, region, ""); err != nil {
		return "", err
	}
	return path, nil
}

func TestOperatorBootstrap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := newEnv(t, t.TempDir(), true)
	path, err := bootstrapOperator(ctx, e.auth, dir, "", "us-east-1")
	if err != nil || path == "" {
		t.Fatalf("bootstrap: %q %v", path, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"[tenantdb-operator]", "aws_access_key_id = sk_op_", "aws_secret_access_key = ", "region = us-east-1", "--endpoint-url http://127.0.0.1:8000 "} {
		if !strings.Contains(string(data), want) {
			t.Errorf("credentials file lacks %q:\n%s", want, data)
		}
	}
	k, err := ReadCredentialsFile(path, OperatorProfile)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.auth.AuthenticateBearer(ctx, k.String()); err != nil || !p.IsOperator() || !p.Tenant.IsZero() {
		t.Fatalf("operator from file: %+v %v", p, err)
	}
	// A second start creates nothing.
	if path, err := bootstrapOperator(ctx, e.auth, dir, "", ""); err != nil || path != "" {
		t.Fatalf("second bootstrap: %q %v", path, err)
	}
	// A given key is stored, and accepted again on the next start.
	e2 := newEnv(t, t.TempDir(), true)
	given := NewAPIKey(keyspace.Platform, OperatorEnv).String()
	for range 2 {
		if _, err := bootstrapOperator(ctx, e2.auth, t.TempDir(), given, ""); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := e2.auth.AuthenticateBearer(ctx, given); err != nil || !p.IsOperator() {
		t.Fatalf("given operator key: %v", err)
	}
	if _, err := bootstrapOperator(ctx, e2.auth, t.TempDir(), NewAPIKey(tenancy.NewTenantID(), "live").String(), ""); !apierr.Is(err, apierr.Validation) {
		t.Fatalf("tenant key as operator key: %v", err)
	}
}

func TestLastUsedIsLazy(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, t.TempDir(), true)
	a := e.tenant(t, "a")
	k := e.key(t, a.ID, tenancy.RoleApp, "live")
	for range 20 {
		if _, err := e.auth.AuthenticateBearer(ctx, k.String()); err != nil {
			t.Fatal(err)
		}
	}
	e.auth.Close() // wait for the background write
	list, _ := e.cat.Credentials(ctx, tenancy.SystemScope(a.ID, "test"))
	first := list[0].LastUsed
	if first.IsZero() {
		t.Fatal("last used not recorded")
	}
	e.clock.advance(30 * time.Second)
	e.auth.AuthenticateBearer(ctx, k.String())
	e.auth.Close()
	list, _ = e.cat.Credentials(ctx, tenancy.SystemScope(a.ID, "test"))
	if !list[0].LastUsed.Equal(first) {
		t.Fatal("last used written again within a minute")
	}
	e.clock.advance(31 * time.Second)
	e.auth.AuthenticateBearer(ctx, k.String())
	e.auth.Close()
	list, _ = e.cat.Credentials(ctx, tenancy.SystemScope(a.ID, "test"))
	if !list[0].LastUsed.After(first) {
		t.Fatal("last used not updated after a minute")
	}
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
