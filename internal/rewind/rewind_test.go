package rewind

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// failing is the embedded engine whose RunRewind fails while fail is set:
// the one failure a real engine cannot be made to have on demand.
type failing struct {
	*engine.Engine
	fail atomic.Bool
}

func (f *failing) RunRewind(ctx context.Context, s tenancy.Scope, progress func(engine.Rewind)) (engine.Rewind, error) {
	if f.fail.Load() {
		return engine.Rewind{}, apierr.New(apierr.Internal, "injected failure")
	}
	return f.Engine.RunRewind(ctx, s, progress)
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

// TestStartFailResume: the operator is refused; a restore that fails
// is audited as failed in the tenant's and the platform log, leaves the
// tenant's table refused, and asked for again is resumed to its end.
func TestStartFailResume(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := engine.Open(db, engine.Options{Logger: quiet, TTLInterval: -1, InMemory: true, Streams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	log := audit.Open(kv.NewLocal(db), audit.Options{Logger: quiet})
	f := &failing{Engine: e}
	svc := New(Options{Engine: f, Audit: log, Logger: quiet})
	defer svc.Close()

	var g tenancy.Guard
	tn := tenancy.NewTenantID()
	op := tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "AKIDOP"}
	data := func(action string) tenancy.Scope {
		s, err := g.Admit(tenancy.Principal{Tenant: tn, Env: "live", Role: tenancy.RoleAdmin, KeyID: "AKIDA"}, dynamo.ActionOf(action))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	adm, err := g.AdmitAdmin(tenancy.Principal{Tenant: tn, Env: "live", Role: tenancy.RoleAdmin, KeyID: "AKIDA"}, tenancy.AdminTenant, "POST /v1/tenants/{tenant}/restore", tn)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := g.AdmitAdmin(op, tenancy.AdminTenant, "POST /v1/tenants/{tenant}/restore", tn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Start(ctx, ops, client.RestoreRequest{ToTime: time.Now()}, "AKIDOP", "operator"); !apierr.Is(err, apierr.AccessDenied) {
		t.Fatalf("the operator's restore: %v", err)
	}

	_, err = e.CreateTable(ctx, data("CreateTable"), &wire.CreateTableInput{TableName: "Mine", BillingMode: "PAY_PER_REQUEST",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		KeySchema:            []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.UpdateContinuousBackups(ctx, data("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: "Mine",
		PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: ptr(true)}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	putV := func(v string) error {
		_, err := e.PutItem(ctx, data("PutItem"), &wire.PutItemInput{TableName: "Mine", Item: attr.Item{"pk": attr.Str("k"), "v": attr.Str(v)}})
		return err
	}
	if err := putV("then"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	at := time.Now()
	time.Sleep(5 * time.Millisecond)
	if err := putV("now"); err != nil {
		t.Fatal(err)
	}

	wait := func(want func(client.TenantRestore) bool) client.TenantRestore {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; {
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
			time.Sleep(5 * time.Millisecond)
		}
	}
	f.fail.Store(true)
	if _, err := svc.Start(ctx, adm, client.RestoreRequest{ToTime: at}, "AKIDA", "admin"); err != nil {
		t.Fatal(err)
	}
	wait(func(st client.TenantRestore) bool { return !st.Running })
	plat := tenancy.SystemScope(keyspace.Platform, "test")
	for _, s := range []tenancy.Scope{adm, plat} {
		if got := actions(t, log, s); got != "tenant.restore:ok tenant.restore.failed:error" {
			t.Errorf("audit after the failure: %q", got)
		}
	}
	if err := putV("during"); !apierr.Is(err, apierr.ResourceInUse) {
		t.Fatalf("the tenant's write after a failed restore: %v", err)
	}
	f.fail.Store(false)
	if _, err := svc.Start(ctx, adm, client.RestoreRequest{ToTime: at}, "AKIDA", "admin"); err != nil {
		t.Fatal(err)
	}
	st := wait(func(st client.TenantRestore) bool { return st.State == engine.RewindDone })
	if st.Finished == nil || len(st.Tables) != 1 || st.Tables[0].Changed != 1 {
		t.Fatalf("finished restore: %+v", st)
	}
	out, err := e.GetItem(ctx, data("GetItem"), &wire.GetItemInput{TableName: "Mine", Key: attr.Item{"pk": attr.Str("k")}, ConsistentRead: ptr(true)})
	if err != nil || out.Item["v"].S != "then" {
		t.Fatalf("after the restore: %v %v", out, err)
	}
	for _, s := range []tenancy.Scope{adm, plat} {
		if got := actions(t, log, s); got != "tenant.restore:ok tenant.restore.failed:error tenant.restore.resume:ok tenant.restore.done:ok" {
			t.Errorf("audit after the resume: %q", got)
		}
	}
}

func ptr[T any](v T) *T { return &v }
