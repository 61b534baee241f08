package lifecycle_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/lifecycle"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

var _ lifecycle.Engine = (*engine.Engine)(nil)

// fakeEngine records the lifecycle's calls; a real engine cannot be made
// to fail a drop.
type fakeEngine struct {
	dropped, revived []tenancy.TenantID
	fail             error
}

func (e *fakeEngine) DropTenant(_ context.Context, s tenancy.Scope) error {
	e.dropped = append(e.dropped, s.Tenant())
	return e.fail
}

func (e *fakeEngine) ReviveTenant(s tenancy.Scope) { e.revived = append(e.revived, s.Tenant()) }

type env struct {
	cat *catalog.Catalog
	log *audit.Log
	eng *fakeEngine
	lc  *lifecycle.Service
	op  tenancy.Principal
	g   tenancy.Guard
}

func newEnv(t *testing.T) *env {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cat: catalog.Open(kv.NewLocal(db), catalog.Options{}), log: audit.Open(kv.NewLocal(db), audit.Options{Logger: quiet}), eng: &fakeEngine{}}
	// NB: without quota state (quota.New is the assembly's, see
	// internal/lint); the quota manager's Forget and Remember have their
	// own tests.
	t.Cleanup(func() {
		e.log.Close()
		db.Close()
	})
	e.lc = lifecycle.New(lifecycle.Options{Catalog: e.cat, Audit: e.log, Engine: e.eng})
	e.op = tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "op"}
	return e
}

func (e *env) scope(t *testing.T, id tenancy.TenantID) tenancy.Scope {
	t.Helper()
	s, err := e.g.AdmitAdmin(e.op, tenancy.AdminOperator, "test", id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCreateRevivesAnExplicitID(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a, err := e.lc.Create(ctx, e.scope(t, tenancy.TenantID{}), catalog.NewTenant{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.eng.revived) != 0 {
		t.Errorf("a tenant with a new id was revived: %v", e.eng.revived)
	}
	id := tenancy.NewTenantID()
	if _, err := e.lc.Create(ctx, e.scope(t, tenancy.TenantID{}), catalog.NewTenant{ID: id, Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if len(e.eng.revived) != 1 || e.eng.revived[0] != id {
		t.Errorf("revived %v, want [%s]", e.eng.revived, id)
	}
	// Only the operator's platform scope creates tenants.
	if _, err := e.lc.Create(ctx, e.scope(t, a.ID), catalog.NewTenant{Name: "c"}); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("Create on a tenant's scope: %v, want AccessDenied", err)
	}
	if _, err := e.lc.Create(ctx, tenancy.Scope{}, catalog.NewTenant{Name: "c"}); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("Create without a scope: %v, want AccessDenied", err)
	}
}

func TestSuspendResume(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a, err := e.lc.Create(ctx, e.scope(t, tenancy.TenantID{}), catalog.NewTenant{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.lc.Suspend(ctx, e.scope(t, a.ID)); err != nil || got.Status != catalog.Suspended {
		t.Errorf("Suspend = %v, %v", got.Status, err)
	}
	if got, err := e.lc.Resume(ctx, e.scope(t, a.ID)); err != nil || got.Status != catalog.Active {
		t.Errorf("Resume = %v, %v", got.Status, err)
	}
	if _, err := e.lc.Suspend(ctx, tenancy.Scope{}); err == nil {
		t.Error("Suspend without a scope succeeded")
	}
	// A tenant admin's own scope is not the operator's.
	own, err := e.g.AdmitAdmin(tenancy.Principal{Tenant: a.ID, Env: "live", Role: tenancy.RoleAdmin, KeyID: "k"}, tenancy.AdminTenant, "test", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.lc.Suspend(ctx, own); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("Suspend with an admin key's scope: %v", err)
	}
	if err := e.lc.Delete(ctx, own); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("Delete with an admin key's scope: %v", err)
	}
}

// A failed drop leaves the tenant deleting with a working audit log, and
// the deletion can be retried; a successful one removes the tenant and
// retires its log.
func TestDeleteRetriesAfterAFailedDrop(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a, err := e.lc.Create(ctx, e.scope(t, tenancy.TenantID{}), catalog.NewTenant{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	sa := e.scope(t, a.ID)
	e.eng.fail = errors.New("disk gone")
	if err := e.lc.Delete(ctx, sa); !apierr.Is(err, apierr.Internal) {
		t.Fatalf("Delete with a failing drop: %v, want Internal", err)
	}
	if got, err := e.cat.Tenant(ctx, a.ID); err != nil || got.Status != catalog.Deleting {
		t.Errorf("after the failed drop: %v, %v, want deleting", got.Status, err)
	}
	if _, err := e.log.Append(ctx, sa, audit.Event{Actor: "op", Action: "x"}); err != nil {
		t.Errorf("the audit log stays retired after a failed deletion: %v", err)
	}
	e.eng.fail = nil
	if err := e.lc.Delete(ctx, sa); err != nil {
		t.Fatalf("retried Delete: %v", err)
	}
	if len(e.eng.dropped) != 2 || e.eng.dropped[1] != a.ID {
		t.Errorf("dropped %v, want %s twice", e.eng.dropped, a.ID)
	}
	if _, err := e.cat.Tenant(ctx, a.ID); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("the deleted tenant: %v, want not found", err)
	}
	if _, err := e.log.Append(ctx, sa, audit.Event{Actor: "op", Action: "x"}); err == nil {
		t.Error("the deleted tenant's audit log took a record")
	}
	if err := e.lc.Delete(ctx, e.scope(t, tenancy.TenantID{})); err == nil {
		t.Error("Delete of the platform succeeded")
	}
}

// fakeWorkers records RetireTenant and UnretireTenant, and how many drops
// the engine had seen at each.
type fakeWorkers struct {
	eng    *fakeEngine
	calls  []string
	drops  []int
	tenant []tenancy.TenantID
}

func (w *fakeWorkers) RetireTenant(t tenancy.TenantID) {
	w.calls, w.drops, w.tenant = append(w.calls, "retire"), append(w.drops, len(w.eng.dropped)), append(w.tenant, t)
}

func (w *fakeWorkers) UnretireTenant(t tenancy.TenantID) {
	w.calls, w.drops, w.tenant = append(w.calls, "unretire"), append(w.drops, len(w.eng.dropped)), append(w.tenant, t)
}

// TestDeleteRetiresWorkersFirst: the webhook and aggregate workers are
// retired from a tenant before its data is dropped and its range deleted
// (no late checkpoint lands in it), unretired when the deletion fails,
// and when a deleted tenant's id is created again.
func TestDeleteRetiresWorkersFirst(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := &fakeWorkers{eng: e.eng}
	e.lc = lifecycle.New(lifecycle.Options{Catalog: e.cat, Audit: e.log, Engine: e.eng, Workers: w})
	a, err := e.lc.Create(ctx, e.scope(t, tenancy.TenantID{}), catalog.NewTenant{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	sa := e.scope(t, a.ID)
	e.eng.fail = errors.New("disk gone")
	if err := e.lc.Delete(ctx, sa); err == nil {
		t.Fatal("Delete with a failing drop succeeded")
	}
	e.eng.fail = nil
	if err := e.lc.Delete(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lc.Create(ctx, e.scope(t, tenancy.TenantID{}), catalog.NewTenant{ID: a.ID, Name: "a2"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"retire", "unretire", "retire", "unretire"}
	wantDrops := []int{0, 1, 1, 2} // retired before each drop
	if len(w.calls) != len(want) {
		t.Fatalf("calls %v, want %v", w.calls, want)
	}
	for i := range want {
		if w.calls[i] != want[i] || w.drops[i] != wantDrops[i] || w.tenant[i] != a.ID {
			t.Errorf("call %d: %s of %s after %d drops, want %s of %s after %d", i, w.calls[i], w.tenant[i], w.drops[i], want[i], a.ID, wantDrops[i])
		}
	}
}
