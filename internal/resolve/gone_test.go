package resolve

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

func TestMayReadGone(t *testing.T) {
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	ownA := keyspace.Namespace(a, "live")
	narrowed := scope(t, tenancy.Principal{Tenant: a, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDTMP",
		Policy: &tenancy.Policy{Tables: []string{"Mine"}}}, "ListStreams")
	testEnv := scope(t, tenancy.Principal{Tenant: a, Env: "test", Role: tenancy.RoleApp, KeyID: "AKIDTEST"}, "ListStreams")
	for _, c := range []struct {
		who   string
		s     tenancy.Scope
		owner []byte
		name  string
		want  bool
	}{
		{"A, its own table", app(t, a, "ListStreams"), ownA, "Mine", true},
		{"A, a shared table", app(t, a, "ListStreams"), nil, "Shared", true},
		{"B, A's table", app(t, b, "ListStreams"), ownA, "Mine", false},
		{"B, a shared table", app(t, b, "ListStreams"), nil, "Shared", true},
		{"A's test environment, A's live table", testEnv, ownA, "Mine", false},
		{"the operator, a shared table", operator(t, "ListStreams"), nil, "Shared", false},
		{"A narrowed to Mine, Mine", narrowed, ownA, "Mine", true},
		{"A narrowed to Mine, a shared table", narrowed, nil, "Shared", false},
	} {
		if got := MayReadGone(c.s, c.owner, c.name); got != c.want {
			t.Errorf("%s: MayReadGone = %v, want %v", c.who, got, c.want)
		}
	}
}
