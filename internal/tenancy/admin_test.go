package tenancy

import (
	"errors"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// TestAdmitAdmin: the admin plane's audiences, as the /v1/ routes had
// them: who is admitted, with what error, and the tenant the scope binds.
func TestAdmitAdmin(t *testing.T) {
	a, b := NewTenantID(), NewTenantID()
	var g Guard
	op := Principal{Role: RoleOperator, KeyID: "op"}
	adminA := Principal{Tenant: a, Env: LiveEnv, Role: RoleAdmin, KeyID: "ka"}
	testAdminA := Principal{Tenant: a, Env: "test", Role: RoleAdmin, KeyID: "kt"}
	appA := Principal{Tenant: a, Env: LiveEnv, Role: RoleApp, KeyID: "kapp"}
	readA := Principal{Tenant: a, Env: LiveEnv, Role: RoleRead, KeyID: "kread"}
	narrowA := Principal{Tenant: a, Env: LiveEnv, Role: RoleAdmin, KeyID: "ks", Policy: &Policy{Tables: []string{"t"}}}
	none := TenantID{}
	for _, tc := range []struct {
		name   string
		p      Principal
		class  AdminClass
		target TenantID
		kind   apierr.Kind // 0: admitted
		reason string
		want   TenantID // the scope's tenant when admitted
	}{
		{"operator on a tenant", op, AdminTenant, a, 0, "", a},
		{"operator on the platform", op, AdminOperator, none, 0, "", none},
		{"operator tenant-wide", op, AdminTenantWide, b, 0, "", b},
		{"operator whoami", op, AdminSelf, none, 0, "", none},
		{"admin on an operator route", adminA, AdminOperator, a, apierr.AccessDenied, "not the operator", none},
		{"admin on its tenant", adminA, AdminTenant, a, 0, "", a},
		{"admin on another tenant", adminA, AdminTenant, b, apierr.NotFound, "cross-tenant attempt", none},
		{"admin on no tenant id", adminA, AdminTenant, none, apierr.NotFound, "cross-tenant attempt", none},
		{"admin tenant-wide", adminA, AdminTenantWide, a, 0, "", a},
		{"admin tenant-wide on another tenant", adminA, AdminTenantWide, b, apierr.NotFound, "cross-tenant attempt", none},
		{"test admin on its tenant", testAdminA, AdminTenant, a, 0, "", a},
		{"test admin tenant-wide", testAdminA, AdminTenantWide, a, apierr.AccessDenied, "environment test on a tenant-wide route", none},
		{"app key", appA, AdminTenant, a, apierr.AccessDenied, "role app", none},
		{"read key", readA, AdminTenantWide, a, apierr.AccessDenied, "role read", none},
		{"app key on another tenant", appA, AdminTenant, b, apierr.AccessDenied, "role app", none},
		{"narrowed session", narrowA, AdminTenant, a, apierr.AccessDenied, "narrowed session", none},
		{"app key whoami", appA, AdminSelf, b, 0, "", a},
		{"no role", Principal{Tenant: a}, AdminSelf, a, apierr.AccessDenied, "no role", none},
	} {
		s, err := g.AdmitAdmin(tc.p, tc.class, "GET /v1/x", tc.target)
		if tc.kind == 0 {
			if err != nil {
				t.Errorf("%s: %v, want admitted", tc.name, err)
				continue
			}
			if !s.Valid() || s.Tenant() != tc.want || s.KeyID() != tc.p.KeyID || s.Action() != "GET /v1/x" {
				t.Errorf("%s: scope %+v, want valid, tenant %s", tc.name, s, tc.want)
			}
			continue
		}
		var r *AdminRefusal
		if !apierr.Is(err, tc.kind) || !errors.As(err, &r) || r.Reason != tc.reason {
			t.Errorf("%s: err %v (refusal %+v), want %v with reason %q", tc.name, err, r, tc.kind, tc.reason)
		}
		if s.Valid() {
			t.Errorf("%s: refused with a valid scope", tc.name)
		}
	}
	// NB: the operator's scope has the operator's role whatever it targets.
	if s, _ := g.AdmitAdmin(op, AdminTenant, "x", a); !s.IsOperator() {
		t.Error("the operator's admin scope is not the operator's")
	}
}

func TestAdmitMemberAndSystemScope(t *testing.T) {
	a := NewTenantID()
	var g Guard
	if _, err := g.AdmitMember("", a, RoleRead, "x"); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("AdmitMember without a subject: %v", err)
	}
	if _, err := g.AdmitMember("u1", TenantID{}, RoleRead, "x"); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("AdmitMember without a tenant: %v", err)
	}
	s, err := g.AdmitMember("u1", a, RoleRead, "x")
	if err != nil || !s.Valid() || s.Tenant() != a || s.KeyID() != "sub:u1" {
		t.Errorf("AdmitMember = %+v, %v", s, err)
	}
	if s := SystemScope(a, "sweep"); !s.Valid() || s.Tenant() != a || s.KeyID() != "system:sweep" {
		t.Errorf("SystemScope = %+v", s)
	}
}
