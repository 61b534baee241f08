package rewind

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// fakeEngine keeps one restore record per tenant environment and fails
// RunRewind while fail is set: the failures a real engine cannot be made
// to have on demand (the engine's own tests cover the restore itself).
type fakeEngine struct {
	mu   sync.Mutex
	recs map[string]engine.Rewind
	fail bool
	runs int
}

func (f *fakeEngine) BeginRewind(ctx context.Context, s tenancy.Scope, at time.Time, tables []string, actor string) (engine.Rewind, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := engine.Rewind{ID: "r1", Tenant: s.Tenant().String(), Env: s.Env(), At: at, UndoTo: time.Now(), State: engine.RewindRunning, Actor: actor,
		Tables: []engine.RewindTable{{Name: "Mine", ID: 7}}}
	f.recs[nsKey(r.Tenant, r.Env)] = r
	return r, nil
}

func (f *fakeEngine) RunRewind(ctx context.Context, s tenancy.Scope, progress func(engine.Rewind)) (engine.Rewind, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	k := nsKey(s.Tenant().String(), s.Env())
	r := f.recs[k]
	r.Tables = slices.Clone(r.Tables) // NB: as the engine, which decodes its record afresh
	if f.fail {
		r.Error = "injected failure"
		f.recs[k] = r
		return r, apierr.New(apierr.Internal, "injected failure")
	}
	r.Tables[0].Keys, r.Tables[0].Checked, r.Tables[0].Changed, r.Tables[0].Done = 3, 3, 2, true
	r.State, r.Error, r.Finished = engine.RewindDone, "", time.Now()
	f.recs[k] = r
	return r, nil
}

func (f *fakeEngine) RewindStatus(ctx context.Context, s tenancy.Scope) (engine.Rewind, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.recs[nsKey(s.Tenant().String(), s.Env())]
	return r, ok, nil
}

func (f *fakeEngine) PendingRewinds() ([]engine.Rewind, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Rewind
	for _, r := range f.recs {
		if r.State == engine.RewindRunning {
			out = append(out, r)
		}
	}
	return out, nil
}

func actions(t *testing.T, log *audit.Log, s tenancy.Scope) string {
	t.Helper()
	recs, err := log.Query(context.Background(), s, time.Time{}, time.Time{}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		if strings.HasPrefix(r.Action, "tenant.restore") {
			out = append(out, r.Action+":"+r.Outcome)
		}
	}
	return strings.Join(out, " ")
}

// TestStartFailResume: the operator is refused; a restore whose run
// fails is audited as failed in the tenant's and the platform log and
// stays running (not being worked on); asked for again it is resumed and
// its end audited; a restart resumes unfinished restores.
func TestStartFailResume(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log := audit.Open(kv.NewLocal(db), audit.Options{Logger: quiet})
	f := &fakeEngine{recs: map[string]engine.Rewind{}, fail: true}
	svc := New(Options{Engine: f, Audit: log, Logger: quiet})
	defer svc.Close()

	var g tenancy.Guard
	tn := tenancy.NewTenantID()
	adm, err := g.AdmitAdmin(tenancy.Principal{Tenant: tn, Env: "live", Role: tenancy.RoleAdmin, KeyID: "AKIDA"}, tenancy.AdminTenant, "POST /v1/tenants/{tenant}/restore", tn)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := g.AdmitAdmin(tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "AKIDOP"}, tenancy.AdminTenant, "POST /v1/tenants/{tenant}/restore", tn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Start(ctx, ops, client.RestoreRequest{ToTime: time.Now()}, "AKIDOP", "operator"); !apierr.Is(err, apierr.AccessDenied) {
		t.Fatalf("the operator's restore: %v", err)
	}
	if _, err := svc.Status(ctx, adm); !apierr.Is(err, apierr.NotFound) {
		t.Fatalf("status before any restore: %v", err)
	}
	wait := func(want func(client.TenantRestore) bool) client.TenantRestore {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			st, err := svc.Status(ctx, adm)
			if err != nil {
				t.Fatal(err)
			}
			if want(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("status %+v", st)
			}
			time.Sleep(time.Millisecond)
		}
	}
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	if _, err := svc.Start(ctx, adm, client.RestoreRequest{ToTime: at}, "AKIDA", "admin"); err != nil {
		t.Fatal(err)
	}
	st := wait(func(st client.TenantRestore) bool { return !st.Running })
	if st.State != "running" || st.Error != "injected failure" {
		t.Fatalf("after the failure: %+v", st)
	}
	plat := tenancy.SystemScope(keyspace.Platform, "test")
	for _, s := range []tenancy.Scope{adm, plat} {
		if got := actions(t, log, s); got != "tenant.restore:ok tenant.restore.failed:error" {
			t.Errorf("audit after the failure: %q", got)
		}
	}
	f.mu.Lock()
	f.fail = false
	f.mu.Unlock()
	if _, err := svc.Start(ctx, adm, client.RestoreRequest{ToTime: at, Tables: []string{"Mine"}}, "AKIDA", "admin"); err != nil {
		t.Fatal(err)
	}
	st = wait(func(st client.TenantRestore) bool { return st.State == "done" })
	if st.Finished == nil || len(st.Tables) != 1 || st.Tables[0].Changed != 2 || st.Running {
		t.Fatalf("finished restore: %+v", st)
	}
	for _, s := range []tenancy.Scope{adm, plat} {
		// NB: the state says done before the done record is appended.
		want := "tenant.restore:ok tenant.restore.failed:error tenant.restore.resume:ok tenant.restore.done:ok"
		got := actions(t, log, s)
		for deadline := time.Now().Add(10 * time.Second); got != want && time.Now().Before(deadline); got = actions(t, log, s) {
			time.Sleep(5 * time.Millisecond)
		}
		if got != want {
			t.Errorf("audit after the resume: %q", got)
		}
	}

	// A restart: the unfinished restore of another tenant is resumed.
	tn2 := tenancy.NewTenantID()
	f.recs[nsKey(tn2.String(), "live")] = engine.Rewind{ID: "r2", Tenant: tn2.String(), Env: "live", At: at, State: engine.RewindRunning,
		Tables: []engine.RewindTable{{Name: "Mine", ID: 7}}}
	svc2 := New(Options{Engine: f, Audit: log, Logger: quiet})
	defer svc2.Close()
	if err := svc2.Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		f.mu.Lock()
		done := f.recs[nsKey(tn2.String(), "live")].State == engine.RewindDone
		f.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unfinished restore was not resumed")
		}
		time.Sleep(time.Millisecond)
	}
}
