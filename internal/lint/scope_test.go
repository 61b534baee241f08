package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// systemScopeAllowed lists the files (relative to the module) that may
// call tenancy.SystemScope, the Scope no guard decided: the server's own
// work on a tenant without a request. Tests may call it anywhere.
var systemScopeAllowed = []string{
	"internal/lifecycle/lifecycle.go", // reviving a re-created tenant's id
	"internal/lifecycle/finish.go",    // finishing a tenant deletion left unfinished, and its platform audit record
	"internal/aggregate/scope.go",     // an aggregate's worker follows its tenant environment's change log
	"internal/webhook/scope.go",       // a subscription's delivery worker reads its tenant environment's change log
	"internal/quota/scope.go",         // the hourly storage samples read a tenant's storage counters
	"internal/rekey/rekey.go",         // resuming a key rotation after a restart
	"internal/rewind/rewind.go",       // resuming a tenant restore after a restart; its platform audit records
	"internal/admin/moves.go",         // auditing the end of a tenant move, which runs (or resumed) in the background
	"internal/transfer/resume.go",     // resuming an API export or import after a restart (ResumedScope)
	"internal/node/remotejobs.go",     // auditing a remote backend's TTL syncs and index backfills, which run (or resumed) in the background
}

// parsed is one non-test Go file of ours.
type parsed struct {
	rel  string // "internal/admin/keys.go"
	file *ast.File
}

func sourceFiles(t *testing.T, filter func(pkg) bool) []parsed {
	t.Helper()
	var out []parsed
	fset := token.NewFileSet()
	for _, p := range packages(t) {
		if !filter(p) {
			continue
		}
		for _, f := range p.GoFiles {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatalf("%s/%s: %v", p.rel(), f, err)
			}
			out = append(out, parsed{rel: p.rel() + "/" + f, file: af})
		}
	}
	return out
}

// isTenancy reports whether e is tenancy.<name>.
func isTenancy(e ast.Expr, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == "tenancy" && s.Sel.Name == name
}

// TestOnlyTenancyBuildsScopes: no package but tenancy writes a Scope
// literal, and tenancy.SystemScope is called only where
// systemScopeAllowed says.
func TestOnlyTenancyBuildsScopes(t *testing.T) {
	files := sourceFiles(t, func(p pkg) bool { return p.rel() != "internal/tenancy" })
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if isTenancy(n.Type, "Scope") {
					t.Errorf("%s builds a tenancy.Scope literal; only the tenancy guard issues scopes", f.rel)
				}
			case *ast.SelectorExpr:
				// NB: any reference, not only a call: a function value
				// (f := tenancy.SystemScope) would be called elsewhere.
				if (isTenancy(n, "SystemScope") || isTenancy(n, "SystemScopeIn") || isTenancy(n, "ResumedScope")) && !slices.Contains(systemScopeAllowed, f.rel) {
					t.Errorf("%s uses tenancy.SystemScope; only %v may (a request's scope comes from the guard)", f.rel, systemScopeAllowed)
				}
			}
			return true
		})
	}
}

// scopedMethods are the methods the admin plane calls on one tenant's
// records: each takes the tenancy.Scope the guard admitted (after ctx)
// and no tenancy.TenantID.
var scopedMethods = map[string][]string{
	"internal/catalog": {"Credentials", "RevokeCredential", "ExpireCredential", "SetStatus", "DeleteTenant", "CreateInvite", "AddMembership"},
	"internal/audit":   {"Append", "Query", "Verify"},
	"internal/quota":   {"GetQuota", "SetQuota", "Usage"},
}

// adminResolvers are the admin functions that may pass a tenant id that
// does not come from a Scope to catalog, audit or quota: they resolve a
// request's reference to a tenant before the guard admits it, or read the
// tenants a platform user's memberships name.
var adminResolvers = []string{"lookupTenant", "platformTenants", "acceptInvite"}

// TestAdminNamesTenantsByScope: the tenant-facing methods of catalog,
// audit and quota take a Scope, and the admin handlers call the methods
// that still take a tenant id only with the tenant of a Scope
// (s.Tenant()), outside the resolvers of adminResolvers.
func TestAdminNamesTenantsByScope(t *testing.T) {
	// rawID: method name → the positions of its tenancy.TenantID
	// parameters and its parameter count.
	type rawMethod struct {
		idArgs []int
		params int
	}
	rawID := map[string][]rawMethod{}
	files := sourceFiles(t, func(p pkg) bool { _, ok := scopedMethods[p.rel()]; return ok })
	seen := map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(f.rel)
		for _, d := range f.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
				continue
			}
			var types []ast.Expr
			for _, fld := range fn.Type.Params.List {
				n := max(len(fld.Names), 1)
				for range n {
					types = append(types, fld.Type)
				}
			}
			var ids []int
			scopeAt := -1
			for i, ty := range types {
				if isTenancy(ty, "TenantID") {
					ids = append(ids, i)
				}
				if isTenancy(ty, "Scope") && scopeAt < 0 {
					scopeAt = i
				}
			}
			if slices.Contains(scopedMethods[dir], fn.Name.Name) {
				seen[dir+"."+fn.Name.Name] = true
				if len(ids) > 0 || scopeAt != 1 {
					t.Errorf("%s: %s must take (ctx, tenancy.Scope, ...) and no tenancy.TenantID", f.rel, fn.Name.Name)
				}
			}
			if len(ids) > 0 {
				rawID[fn.Name.Name] = append(rawID[fn.Name.Name], rawMethod{idArgs: ids, params: len(types)})
			}
		}
	}
	for dir, names := range scopedMethods {
		for _, n := range names {
			if !seen[dir+"."+n] {
				t.Errorf("%s has no method %s any more; update scopedMethods", dir, n)
			}
		}
	}

	// fromScope reports whether e is X.Tenant(), the tenant of a Scope.
	fromScope := func(e ast.Expr) bool {
		c, ok := e.(*ast.CallExpr)
		if !ok || len(c.Args) != 0 {
			return false
		}
		s, ok := c.Fun.(*ast.SelectorExpr)
		return ok && s.Sel.Name == "Tenant"
	}
	admin := sourceFiles(t, func(p pkg) bool { return p.rel() == "internal/admin" })
	for _, f := range admin {
		for _, d := range f.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || slices.Contains(adminResolvers, fn.Name.Name) {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				for _, m := range rawID[sel.Sel.Name] {
					if m.params != len(call.Args) {
						continue
					}
					for _, i := range m.idArgs {
						if !fromScope(call.Args[i]) {
							t.Errorf("%s: %s calls %s with the tenant id %s, not the tenant of the Scope the guard admitted",
								f.rel, fn.Name.Name, sel.Sel.Name, exprString(call.Args[i]))
						}
					}
				}
				return true
			})
		}
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		return exprString(e.Fun) + "(...)"
	}
	return "expression"
}
