package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/rekey"
	"github.com/tenantdb/tenantdb/internal/webhook"
)

// The types the server encodes from its own packages have exactly the
// client's JSON shapes: the same members, in the same order, with the
// same tags and kinds, so that decoding an answer and encoding it again
// (as the CLI's --json does) reproduces it byte for byte.
func TestShapesMatchTheServers(t *testing.T) {
	for _, c := range []struct{ server, client any }{
		{admin.AuditPage{}, client.AuditPage{}},
		{audit.Record{}, client.AuditRecord{}},
		{quota.Quota{}, client.Quota{}},
		{quota.Update{}, client.QuotaUpdate{}},
		{quota.Report{}, client.UsageReport{}},
		{webhook.CreateInput{}, client.CreateSubscriptionRequest{}},
		{webhook.View{}, client.Subscription{}},
		{admin.SubscriptionList{}, client.SubscriptionList{}},
		{admin.DeliveryList{}, client.DeliveryList{}},
		{admin.DeadLetterList{}, client.DeadLetterList{}},
		{rekey.Status{}, client.Encryption{}},
	} {
		if err := sameShape(reflect.TypeOf(c.server), reflect.TypeOf(c.client), 0); err != nil {
			t.Errorf("%T and %T: %v", c.server, c.client, err)
		}
	}
}

func sameShape(a, b reflect.Type, depth int) error {
	if depth > 8 {
		return nil
	}
	if a.Kind() != b.Kind() {
		return fmt.Errorf("kind %v, client %v", a.Kind(), b.Kind())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Slice:
		return sameShape(a.Elem(), b.Elem(), depth+1)
	case reflect.Map:
		if err := sameShape(a.Key(), b.Key(), depth+1); err != nil {
			return err
		}
		return sameShape(a.Elem(), b.Elem(), depth+1)
	case reflect.Struct:
		if a.PkgPath() == "time" || b.PkgPath() == "time" {
			if a != b {
				return fmt.Errorf("%v, client %v", a, b)
			}
			return nil
		}
		if a.NumField() != b.NumField() {
			return fmt.Errorf("%d members, client %d", a.NumField(), b.NumField())
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			// NB: a member without a JSON name is encoded under its Go name.
			if fa.Tag.Get("json") != fb.Tag.Get("json") || fa.Anonymous != fb.Anonymous || jsonName(fa) != jsonName(fb) {
				return fmt.Errorf("member %d: %s %q, client %s %q", i, fa.Name, fa.Tag.Get("json"), fb.Name, fb.Tag.Get("json"))
			}
			if err := sameShape(fa.Type, fb.Type, depth+1); err != nil {
				return fmt.Errorf("%s: %w", fa.Name, err)
			}
		}
	}
	return nil
}

func TestErrorClasses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/tenants/gone":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"NotFound","message":"tenant not found"}}`))
		case "/v1/tenants/busy":
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte("slow down\n"))
		default:
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":{"code":"AccessDeniedException","message":"no"}}`))
		}
	}))
	defer srv.Close()
	c := client.New(srv.URL, "sk_x")
	ctx := context.Background()

	_, err := c.Tenant(ctx, "gone")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "NotFound" || e.Message != "tenant not found" {
		t.Fatalf("got %#v, want a 404 NotFound *Error", err)
	}
	if !client.IsNotFound(err) || !errors.Is(err, client.ErrNotFound) || client.IsForbidden(err) || client.StatusOf(err) != 404 {
		t.Errorf("%v: classified wrongly", err)
	}
	_, err = c.Tenant(ctx, "busy")
	if !client.IsThrottled(err) || !errors.As(err, &e) || e.Code != "Too Many Requests" || e.Message != "slow down" {
		t.Errorf("got %#v, want a 429 with the body as message", err)
	}
	_, err = c.Tenants(ctx)
	if !client.IsForbidden(err) || client.IsNotFound(err) || client.IsUnauthorized(err) {
		t.Errorf("got %v, want forbidden", err)
	}
	if client.StatusOf(errors.New("x")) != 0 || client.IsNotFound(nil) {
		t.Errorf("non-API errors are classified")
	}
}

// Credentials caches a session until the expiry window before its end,
// then mints a new one.
func TestCredentialsRenewBeforeExpiry(t *testing.T) {
	ctx := context.Background()
	op := client.New(endpoint, operatorKey)
	tn, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "renewed", Slug: "test-renewed"})
	if err != nil {
		t.Fatal(err)
	}
	req := client.SessionRequest{Role: "read", DurationSeconds: 60}

	cached := op.Credentials(tn.ID, req)
	c1, err := cached.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := cached.Retrieve(ctx)
	if c1.AccessKeyID != c2.AccessKeyID || !c1.CanExpire || c1.SessionToken == "" || c1.Source != client.CredentialSource {
		t.Fatalf("second Retrieve %+v, want the cached %+v", c2, c1)
	}

	// A window longer than the session: every Retrieve finds the cached
	// session due for renewal and mints a new one.
	renewing := op.Credentials(tn.ID, req, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 61e9 })
	r1, err := renewing.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := renewing.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r1.AccessKeyID == r2.AccessKeyID {
		t.Errorf("a session due for renewal was reused: %s", r1.AccessKeyID)
	}

	// Minting fails with the API's error.
	_, err = client.New(endpoint, "sk_nope").Credentials(tn.ID, req).Retrieve(ctx)
	if !client.IsUnauthorized(err) {
		t.Errorf("bad key: got %v, want 401", err)
	}
}

// jsonName is the name encoding/json gives member f.
func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}

// VerifyWebhook accepts what the server signs, with any of the secrets
// in force, and nothing else.
func TestVerifyWebhook(t *testing.T) {
	body := []byte(`{"Records":[]}`)
	now := time.Unix(1700000000, 0)
	h := webhook.Sign(now, body, "new", "old")
	for _, c := range []struct {
		secret string
		body   []byte
		at     time.Time
		want   bool
	}{
		{"new", body, now, true}, {"old", body, now, true}, {"other", body, now, false},
		{"new", []byte(`{"Records":[1]}`), now, false}, {"new", body, now.Add(time.Hour), false},
	} {
		if got := client.VerifyWebhook(h, c.body, c.secret, c.at, 5*time.Minute); got != c.want {
			t.Errorf("VerifyWebhook(%s, %s, %v) = %v, want %v", c.secret, c.body, c.at, got, c.want)
		}
	}
}
