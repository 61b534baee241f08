package auth

import (
	"context"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The hot path: a cached credential, a cached signing key. The baseline
// is sigv4.Parse + sigv4.Verify with a precomputed key, the floor any
// authentication must pay; the difference is auth's own cost.

func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b, b.TempDir(), true)
	a := e.tenant(b, "a")
	k := e.key(b, a.ID, tenancy.RoleApp, "live")
	r := sign(b, k.AccessKeyID(), k.Secret, "", time.Now())

	b.Run("baseline=sigv4-only", func(b *testing.B) {
		key := sigv4.SigningKey(k.Secret, time.Now().UTC().Format("20060102"), "us-east-1", "dynamodb")
		b.ReportAllocs()
		for b.Loop() {
			au, err := sigv4.Parse(r)
			if err != nil {
				b.Fatal(err)
			}
			if err := sigv4.Verify(r, au, key, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sigv4-key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.auth.Authenticate(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sigv4-key-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.auth.Authenticate(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	op, _, _ := e.auth.EnsureOperator(ctx, "")
	opP, _ := e.auth.AuthenticateBearer(ctx, op.String())
	s, err := e.auth.IssueSession(ctx, SessionRequest{Tenant: a.ID, Role: tenancy.RoleApp, Issuer: opP, Duration: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	rs := sign(b, s.AccessKeyID, s.SecretAccessKey, s.SessionToken, time.Now())
	b.Run("sigv4-session", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.auth.Authenticate(ctx, rs); err != nil {
				b.Fatal(err)
			}
		}
	})
	full := k.String()
	b.Run("bearer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.auth.AuthenticateBearer(ctx, full); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The cold path: the cache is dropped before every call, so each one
	// reads the credential (one Get) and unseals it.
	b.Run("sigv4-key-cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.auth.cache.Clear()
			if _, err := e.auth.Authenticate(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
