package resolve

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TestCheckPlacement: only the operator admitted to a tenant may move
// that tenant's data; tenant admin keys (its own tenant's included), app
// keys and the zero Scope may not.
func TestCheckPlacement(t *testing.T) {
	var g tenancy.Guard
	tn := tenancy.NewTenantID()
	op, err := g.AdmitAdmin(tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "op"}, tenancy.AdminOperator, "POST /v1/tenants/{tenant}/moves", tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlacement(op); err != nil {
		t.Fatalf("operator on a tenant: %v", err)
	}
	opNone, _ := g.AdmitAdmin(tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "op"}, tenancy.AdminOperator, "x", tenancy.TenantID{})
	own, err := g.AdmitAdmin(tenancy.Principal{Tenant: tn, Env: "live", Role: tenancy.RoleAdmin, KeyID: "adm"}, tenancy.AdminTenant, "x", tn)
	if err != nil {
		t.Fatal(err)
	}
	app, err := g.AdmitAdmin(tenancy.Principal{Tenant: tn, Env: "live", Role: tenancy.RoleApp, KeyID: "app"}, tenancy.AdminSelf, "x", tn)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]tenancy.Scope{"operator without a tenant": opNone, "the tenant's admin": own, "an app key": app, "zero": {}} {
		if err := CheckPlacement(s); !apierr.Is(err, apierr.AccessDenied) {
			t.Errorf("%s: %v, want AccessDenied", name, err)
		}
	}
}
