//go:build benchbypass

package node

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

type countingAuth struct{ calls int }

func (c *countingAuth) Authenticate(_ context.Context, r *sigv4.Request) (tenancy.Principal, error) {
	c.calls++
	if string(r.Body) == "bad" {
		return tenancy.Principal{}, errors.New("bad signature")
	}
	return tenancy.Principal{KeyID: "k1", Role: tenancy.RoleApp}, nil
}

func TestBypassAuthVerifiesFirstRequestOnly(t *testing.T) {
	next := &countingAuth{}
	b := &bypassAuth{next: next}
	req := func(authz, body string) *sigv4.Request {
		return &sigv4.Request{Header: map[string][]string{"Authorization": {authz}}, Body: []byte(body)}
	}
	const h = "AWS4-HMAC-SHA256 Credential=k1/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00"
	if _, err := b.Authenticate(context.Background(), req(h, "bad")); err == nil {
		t.Fatal("a refused first request was accepted")
	}
	for range 3 {
		p, err := b.Authenticate(context.Background(), req(h, "ok"))
		if err != nil || p.KeyID != "k1" {
			t.Fatalf("got %+v, %v", p, err)
		}
	}
	if got, want := next.calls, 2; got != want {
		t.Errorf("next called %d times, want %d (the refused request and the first accepted one)", got, want)
	}
	if _, err := b.Authenticate(context.Background(), req("Bearer x", "bad")); err == nil {
		t.Error("a request without a SigV4 credential was not passed on")
	}
}
