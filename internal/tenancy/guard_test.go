package tenancy

import (
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

func TestParseTenantID(t *testing.T) {
	id := NewTenantID()
	got, err := ParseTenantID(id.String())
	if err != nil || got != id {
		t.Fatalf("ParseTenantID(%s) = %v, %v", id, got, err)
	}
	dashed := id.String()[:8] + "-" + id.String()[8:12] + "-" + id.String()[12:16] + "-" + id.String()[16:20] + "-" + id.String()[20:]
	if got, err := ParseTenantID(dashed); err != nil || got != id {
		t.Errorf("dashed form: %v, %v", got, err)
	}
	for _, bad := range []string{"", "abc", id.String() + "0", "zz" + id.String()[2:]} {
		if _, err := ParseTenantID(bad); err == nil {
			t.Errorf("ParseTenantID(%q) succeeded", bad)
		}
	}
}

// The actions of these tests; package dynamo's table gives each DynamoDB
// operation its class (its TestGuardRoles covers every role and class).
var (
	getItem = Action{Name: "GetItem", Class: ClassRead}
	putItem = Action{Name: "PutItem", Class: ClassWrite}
	query   = Action{Name: "Query", Class: ClassRead}
)

func TestGuardRefuses(t *testing.T) {
	tenant := NewTenantID()
	var g Guard
	if _, err := g.Admit(Principal{Tenant: tenant, Role: RoleApp}, Action{Name: "Frobnicate"}); apierr.KindOf(err) != apierr.UnknownOperation {
		t.Errorf("unknown action: %v", err)
	}
	if _, err := g.Admit(Principal{Tenant: tenant, Role: RoleApp}, Action{Name: "Frobnicate", Class: ClassDDL + 1}); apierr.KindOf(err) != apierr.UnknownOperation {
		t.Errorf("action of an unknown class: %v", err)
	}
	if _, err := g.Admit(Principal{Role: RoleApp}, getItem); err == nil {
		t.Error("a tenant role without a tenant was admitted")
	}
	if _, err := g.Admit(Principal{Tenant: tenant}, Action{Name: "DescribeTable", Class: ClassMeta}); apierr.KindOf(err) != apierr.AccessDenied {
		t.Errorf("a principal without a role: %v", err)
	}
	if (Scope{}).Valid() {
		t.Error("the zero Scope is valid")
	}
}

func TestPolicyNarrowing(t *testing.T) {
	var g Guard
	p := Principal{Tenant: NewTenantID(), Role: RoleApp, Policy: &Policy{Tables: []string{"orders"}, Actions: []string{"GetItem", "dynamodb:Query"}}}
	if _, err := g.Admit(p, putItem); err == nil {
		t.Error("policy without PutItem admitted PutItem")
	}
	s, err := g.Admit(p, query)
	if err != nil {
		t.Fatal(err)
	}
	if !s.AllowsTable("orders") || s.AllowsTable("users") {
		t.Error("table narrowing not applied")
	}
}

func TestCheckLeadingKey(t *testing.T) {
	var g Guard
	a, b := NewTenantID(), NewTenantID()
	s, err := g.Admit(Principal{Tenant: a, Role: RoleApp, KeyID: "k"}, putItem)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pattern, pk string
		ok          bool
	}{
		{"TENANT#{tenant}|*", "TENANT#" + a.String() + "|TICKET#1", true},
		{"TENANT#{tenant}|*", "TENANT#" + b.String() + "|TICKET#1", false},
		{"TENANT#{tenant}|*", "TENANT#" + a.String(), false},
		{"TENANT#{tenant}|*", "TENANT#" + a.String() + "0|x", false},
		{"{tenant}#*", a.String() + "#tour_456", true},
		{"{tenant}-*", a.String() + "-3", true},
		{"{tenant}", a.String(), true},
		{"{tenant}", a.String() + "x", false},
	} {
		err := s.CheckLeadingKey(tc.pattern, tc.pk)
		if tc.ok != (err == nil) {
			t.Errorf("CheckLeadingKey(%q, %q) = %v, want ok=%v", tc.pattern, tc.pk, err, tc.ok)
		}
		if err != nil && apierr.KindOf(err) != apierr.AccessDenied {
			t.Errorf("kind %v, want AccessDenied", apierr.KindOf(err))
		}
	}
}

// TestPermits: a scope admitted for one class is permitted another class
// only if its role may take it (a read key's ExecuteStatement may not
// write).
func TestPermits(t *testing.T) {
	var g Guard
	tenant := NewTenantID()
	for _, c := range []struct {
		role  Role
		class ActionClass
		ok    bool
	}{
		{RoleRead, ClassRead, true}, {RoleRead, ClassWrite, false},
		{RoleApp, ClassWrite, true}, {RoleAdmin, ClassWrite, true}, {RoleApp, ClassDDL, false},
	} {
		s, err := g.Admit(Principal{Tenant: tenant, Env: "live", Role: c.role, KeyID: "k"}, Action{Name: "ExecuteStatement", Class: ClassRead})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Permits(c.class)
		if (err == nil) != c.ok || (err != nil && apierr.KindOf(err) != apierr.AccessDenied) {
			t.Errorf("role %v class %v: %v, want ok=%v", c.role, c.class, err, c.ok)
		}
	}
	if err := (Scope{}).Permits(ClassRead); err == nil {
		t.Error("the zero Scope permits reads")
	}
}

// TestPartiQLActions: PartiQL is authorized by the statement's IAM action
// (PartiQLSelect, ...), not by the operation that carries it: a policy
// admits ExecuteStatement if it names any PartiQL action, and each
// statement needs its own, under which tables are then checked.
func TestPartiQLActions(t *testing.T) {
	var g Guard
	exec := Action{Name: "ExecuteStatement", Class: ClassRead}
	for _, tc := range []struct {
		name                  string
		actions               []string
		admit, select_, write bool
	}{
		{"item actions only", []string{"GetItem", "PutItem"}, false, false, false},
		{"the carrier's name", []string{"ExecuteStatement"}, false, false, false},
		{"select", []string{"dynamodb:PartiQLSelect"}, true, true, false},
		{"insert", []string{"PartiQLInsert"}, true, false, true},
		{"everything", []string{"dynamodb:*"}, true, true, true},
	} {
		p := Principal{Tenant: NewTenantID(), Role: RoleApp, KeyID: "k", Policy: &Policy{Tables: []string{"orders"}, Actions: tc.actions}}
		s, err := g.Admit(p, exec)
		if (err == nil) != tc.admit {
			t.Errorf("%s: admitted %v, want %v", tc.name, err == nil, tc.admit)
			continue
		}
		if err != nil {
			continue
		}
		sel, err := s.ForStatement(ActionPartiQLSelect, ClassRead)
		if (err == nil) != tc.select_ {
			t.Errorf("%s: SELECT permitted %v, want %v", tc.name, err == nil, tc.select_)
		}
		if err == nil && (!sel.AllowsTable("orders") || sel.AllowsTable("users")) {
			t.Errorf("%s: a SELECT's tables are not narrowed", tc.name)
		}
		if _, err := s.ForStatement(ActionPartiQLInsert, ClassWrite); (err == nil) != tc.write {
			t.Errorf("%s: INSERT permitted %v, want %v", tc.name, err == nil, tc.write)
		} else if err != nil && !strings.Contains(err.Error(), "dynamodb:PartiQLInsert") {
			t.Errorf("%s: refusal does not name the action: %v", tc.name, err)
		}
	}
	// A read-only role may SELECT, never INSERT, whatever its policy says.
	s, err := g.Admit(Principal{Tenant: NewTenantID(), Role: RoleRead, KeyID: "k"}, exec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForStatement(ActionPartiQLInsert, ClassWrite); err == nil {
		t.Error("a read key may INSERT")
	}
}
