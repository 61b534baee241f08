package catalog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

func openDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func put(t *testing.T, db *storage.DB, k, v []byte) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	b.Set(k, v)
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
}

func TestSlugify(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Acme Corp", "acme-corp"},
		{"  --Hello__World--  ", "hello-world"},
		{"Ünïcode Café", "n-code-caf"},
		{"日本", ""},
		{"a1", "a1"},
	} {
		if got := Slugify(tc.in); got != tc.want {
			t.Errorf("Slugify(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.want != "" && !ValidSlug(tc.want) {
			t.Errorf("ValidSlug(%q) = false", tc.want)
		}
	}
}

func TestTenantLifecycle(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	c := Open(kv.NewLocal(db), Options{})
	var changes []Change
	c.OnChange(func(ch Change) { changes = append(changes, ch) })

	a, err := c.CreateTenant(ctx, NewTenant{Name: "Acme Corp", OwnerSub: "user|1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Slug != "acme-corp" || a.Status != Active || a.Tier != Pool {
		t.Fatalf("created %+v", a)
	}
	if _, err := c.CreateTenant(ctx, NewTenant{Name: "acme corp"}); !apierr.Is(err, apierr.Conflict) {
		t.Fatalf("duplicate slug: %v, want Conflict", err)
	}
	if _, err := c.CreateTenant(ctx, NewTenant{Name: "x", Tier: "gold"}); !apierr.Is(err, apierr.Validation) {
		t.Fatalf("bad tier: %v", err)
	}
	b, err := c.CreateTenant(ctx, NewTenant{Name: "Beta", Tier: Silo})
	if err != nil {
		t.Fatal(err)
	}

	// A fresh catalog reads from storage.
	c2 := Open(kv.NewLocal(db), Options{})
	got, err := c2.TenantBySlug(ctx, "beta")
	if err != nil || got.ID != b.ID || got.Tier != Silo {
		t.Fatalf("TenantBySlug = %+v, %v", got, err)
	}
	list, err := c2.Tenants(ctx)
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("Tenants = %+v, %v", list, err)
	}

	if s, err := c.SetStatus(ctx, tenancy.SystemScope(a.ID, "test"), Suspended); err != nil || s.Status != Suspended {
		t.Fatalf("suspend: %+v %v", s, err)
	}
	if len(changes) != 1 || changes[0] != (Change{Tenant: a.ID}) {
		t.Fatalf("changes = %v", changes)
	}
	if s, _ := c.Tenant(ctx, a.ID); s.Status != Suspended {
		t.Fatalf("status %s", s.Status)
	}
	if _, err := c.Tenant(ctx, tenancy.NewTenantID()); !errors.Is(err, ErrNotFound) || !apierr.Is(err, apierr.NotFound) {
		t.Fatalf("unknown tenant: %v", err)
	}

	ms, err := c.Memberships(ctx, "user|1")
	if err != nil || len(ms) != 1 || ms[0].Tenant != a.ID || ms[0].Role != tenancy.RoleAdmin || ms[0].Via != "tenant-create" {
		t.Fatalf("Memberships = %+v, %v", ms, err)
	}
}

func TestDeleteTenantRemovesOnlyItsRange(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	c := Open(kv.NewLocal(db), Options{})
	a, _ := c.CreateTenant(ctx, NewTenant{Name: "a", OwnerSub: "u1"})
	b, _ := c.CreateTenant(ctx, NewTenant{Name: "b", OwnerSub: "u1"})
	for _, ten := range []Tenant{a, b} {
		put(t, db, append(keyspace.Namespace(ten.ID, "live"), "item"...), []byte("v"))
		if err := c.PutCredential(ctx, Credential{Tenant: ten.ID, ID: "k1", AccessKeyID: "x", Sealed: []byte{1}, Role: tenancy.RoleApp, Env: "live"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	dropped := false
	if err := c.DeleteTenant(ctx, tenancy.SystemScope(a.ID, "test"), func(_ context.Context, s tenancy.Scope) error {
		dropped = s.Tenant() == a.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !dropped {
		t.Fatal("drop hook not called")
	}
	lo, hi := keyspace.TenantRange(a.ID)
	it := db.NewIter(lo, hi)
	if it.First() {
		t.Fatalf("tenant a still has key %q", it.Key())
	}
	it.Close()
	if _, err := db.Get(append(keyspace.Namespace(b.ID, "live"), "item"...)); err != nil {
		t.Fatalf("tenant b's item: %v", err)
	}
	if _, err := c.Credential(ctx, b.ID, "k1"); err != nil {
		t.Fatalf("tenant b's credential: %v", err)
	}
	if _, err := c.TenantBySlug(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("slug of deleted tenant: %v", err)
	}
	ms, _ := c.Memberships(ctx, "u1")
	if len(ms) != 1 || ms[0].Tenant != b.ID {
		t.Fatalf("memberships after delete: %+v", ms)
	}
	if _, err := c.CreateTenant(ctx, NewTenant{Name: "a"}); err != nil {
		t.Fatalf("slug reusable after delete: %v", err)
	}
}

func TestCredentials(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Open(kv.NewLocal(openDB(t)), Options{Now: func() time.Time { return now }})
	a, _ := c.CreateTenant(ctx, NewTenant{Name: "a"})
	cr := Credential{Tenant: a.ID, ID: "k1", AccessKeyID: "sk_live_x_k1", Sealed: []byte{1, 2}, Role: tenancy.RoleRead, Env: "live", Created: now}
	if err := c.PutCredential(ctx, cr, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.PutCredential(ctx, cr, nil); !apierr.Is(err, apierr.Conflict) {
		t.Fatalf("duplicate: %v", err)
	}
	cr.Tenant = tenancy.NewTenantID()
	if err := c.PutCredential(ctx, cr, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tenant: %v", err)
	}
	if err := c.TouchCredential(a.ID, "k1", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r, err := c.RevokeCredential(ctx, tenancy.SystemScope(a.ID, "test"), "k1")
	if err != nil || r.Revoked != now || r.Usable(now) {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	list, err := c.Credentials(ctx, tenancy.SystemScope(a.ID, "test"))
	if err != nil || len(list) != 1 || !list[0].LastUsed.Equal(now.Add(time.Hour)) || list[0].Role != tenancy.RoleRead {
		t.Fatalf("Credentials = %+v, %v", list, err)
	}
}

func TestInvites(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Open(kv.NewLocal(openDB(t)), Options{Now: func() time.Time { return now }})
	a, _ := c.CreateTenant(ctx, NewTenant{Name: "a"})
	tok, err := c.CreateInvite(ctx, tenancy.SystemScope(a.ID, "test"), Invite{Role: tenancy.RoleApp, Expires: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcceptInvite(ctx, tok+"x", "u2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("wrong token: %v", err)
	}
	m, err := c.AcceptInvite(ctx, tok, "u2")
	if err != nil || m.Tenant != a.ID || m.Role != tenancy.RoleApp {
		t.Fatalf("accept: %+v %v", m, err)
	}
	if _, err := c.AcceptInvite(ctx, tok, "u3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second use: %v", err)
	}
	tok2, _ := c.CreateInvite(ctx, tenancy.SystemScope(a.ID, "test"), Invite{Role: tenancy.RoleApp, Expires: now.Add(time.Minute)})
	now = now.Add(2 * time.Minute)
	if _, err := c.AcceptInvite(ctx, tok2, "u4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired: %v", err)
	}
	for _, sub := range []string{"u2", "u3", "u4"} {
		ms, _ := c.Memberships(ctx, sub)
		if want := map[string]int{"u2": 1}[sub]; len(ms) != want {
			t.Fatalf("%s has %d memberships, want %d", sub, len(ms), want)
		}
	}
}

func TestSetTier(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	c := Open(kv.NewLocal(db), Options{})
	a, err := c.CreateTenant(ctx, NewTenant{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.CreateTenant(ctx, NewTenant{Name: "b"})
	var changes []Change
	c.OnChange(func(ch Change) { changes = append(changes, ch) })
	sa := tenancy.SystemScope(a.ID, "test")
	if _, err := c.SetTier(ctx, sa, "gold"); !apierr.Is(err, apierr.Validation) {
		t.Fatalf("bad tier: %v", err)
	}
	got, err := c.SetTier(ctx, sa, Silo)
	if err != nil || got.Tier != Silo {
		t.Fatalf("SetTier = %+v, %v", got, err)
	}
	if len(changes) != 1 || changes[0] != (Change{Tenant: a.ID}) {
		t.Fatalf("changes = %v", changes)
	}
	// Durable: a catalog opened again on the store reads it; b unchanged.
	c2 := Open(kv.NewLocal(db), Options{})
	if tn, _ := c2.Tenant(ctx, a.ID); tn.Tier != Silo {
		t.Fatalf("after reopen: tier %q, want silo", tn.Tier)
	}
	if tn, _ := c2.Tenant(ctx, b.ID); tn.Tier != Pool {
		t.Fatalf("other tenant: tier %q, want pool", tn.Tier)
	}
	if _, err := c.SetStatus(ctx, sa, Deleting); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetTier(ctx, sa, Pool); !apierr.Is(err, apierr.Validation) {
		t.Fatalf("deleting tenant: %v", err)
	}
	if _, err := c.SetTier(ctx, tenancy.SystemScope(tenancy.NewTenantID(), "test"), Pool); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tenant: %v", err)
	}
}
