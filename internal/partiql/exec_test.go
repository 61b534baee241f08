package partiql

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TestNextToken: a token returns its key to the tenant and statement that
// made it, and is refused to another tenant, another environment, another
// statement, or when it no longer decodes. NB: the tag binds the scope and
// statement, not the key: a change to the key that still decodes is
// accepted (see "Page tokens" in exec.go); "changed" breaks the JSON.
func TestNextToken(t *testing.T) {
	var g tenancy.Guard
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	scope := func(tn tenancy.TenantID, env string) tenancy.Scope {
		s, err := g.Admit(tenancy.Principal{Tenant: tn, Env: env, Role: tenancy.RoleApp, KeyID: "k"}, tenancy.Action{Name: "ExecuteStatement", Class: tenancy.ClassRead})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sa := scope(a, "live")
	key := attr.Item{"pk": attr.Str("x"), "sk": attr.Num(attr.MustNumber("1"))}
	const stmt = `SELECT * FROM t`
	tok := nextToken(sa, stmt, 0, key)
	part, got, err := startKey(sa, stmt, tok)
	if err != nil || part != 0 || !attr.EqualItems(got, key) {
		t.Fatalf("round trip: %d %v, %v", part, got, err)
	}
	if part, got, err := startKey(sa, stmt, nextToken(sa, stmt, 3, nil)); err != nil || part != 3 || got != nil {
		t.Fatalf("partition round trip: %d %v, %v", part, got, err)
	}
	for name, c := range map[string]struct {
		s         tenancy.Scope
		stmt, tok string
	}{
		"other tenant":      {scope(b, "live"), stmt, tok},
		"other environment": {scope(a, "test"), stmt, tok},
		"other statement":   {sa, stmt + " WHERE x = 1", tok},
		"truncated":         {sa, stmt, tok[:10]},
		"changed":           {sa, stmt, tok[:len(tok)-2] + "AA"},
		"not base64":        {sa, stmt, "!!"},
		"empty":             {sa, stmt, ""},
	} {
		if _, _, err := startKey(c.s, c.stmt, c.tok); !apierr.Is(err, apierr.Validation) {
			t.Errorf("%s: %v, want ValidationException", name, err)
		}
	}
}
