package console_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// hs256 returns an HS256 JWT for sub.
func hs256(secret, sub string) string {
	h, _ := json.Marshal(map[string]any{"alg": "HS256", "typ": "JWT"})
	c, _ := json.Marshal(map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix()})
	signed := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// TestPlatformUser: a platform user signs in with its OIDC token, sees the
// tenants it is a member of (and no other), accepts an invitation, and is
// kept to its own pages.
func TestPlatformUser(t *testing.T) {
	const secret = "console-test-secret"
	var o harness.Options
	o.Platform.HS256Secret = secret
	s := harness.Start(t, o)
	ctx := context.Background()
	op := s.Admin()
	mine, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "Mine Inc", Slug: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "Other Ltd", Slug: "other"})
	if err != nil {
		t.Fatal(err)
	}
	invited, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "Invited GmbH", Slug: "invited"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.AddMember(ctx, mine.ID, client.AddMemberRequest{Sub: "user-1", Role: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.AddMember(ctx, other.ID, client.AddMemberRequest{Sub: "user-2", Role: "admin"}); err != nil {
		t.Fatal(err)
	}
	inv, err := op.CreateInvite(ctx, invited.ID, client.InviteRequest{Role: "read"})
	if err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, s)
	b.get("/console/signin")
	st, body, _ := b.post("/console/signin", url.Values{"key": {hs256("wrong secret", "user-1")}})
	want(t, "forged token", st, body, http.StatusUnauthorized, "That key was not accepted.")
	b.signIn(hs256(secret, "user-1"))
	st, body = b.get("/console/memberships")
	want(t, "memberships", st, body, 200, "Mine Inc", "user-1")
	if strings.Contains(body, "Other Ltd") || strings.Contains(body, other.ID) {
		t.Fatal("a platform user sees a tenant it is not a member of")
	}
	for _, p := range []string{"/console/", "/console/tenants", "/console/tenants/" + mine.ID, "/console/health"} {
		st, _, h := b.do("GET", p, nil)
		if st != http.StatusSeeOther || h.Get("Location") != "/console/memberships" {
			t.Errorf("GET %s as a platform user: %d %q", p, st, h.Get("Location"))
		}
	}
	b.get("/console/memberships")
	st, body, _ = b.post("/console/invites/accept", url.Values{"invite": {inv.Token}})
	want(t, "accept invite", st, body, http.StatusSeeOther)
	st, body = b.get("/console/memberships")
	want(t, "after accepting", st, body, 200, "You are now a member (read) of Invited GmbH.", "Invited GmbH")

	st, body, _ = b.post("/console/signout", nil)
	want(t, "sign out", st, body, http.StatusSeeOther)
	st, _, h := b.do("GET", "/console/memberships", nil)
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/signin") {
		t.Fatalf("after sign out: %d %q", st, h.Get("Location"))
	}
}
