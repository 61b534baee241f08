package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// use is one reference to a name of ours found in a file.
type use struct {
	file string
	pos  token.Position
	what string
}

// refs calls fn for every selector expression (x.Sel) and call in the
// non-test files of p.
func refs(t *testing.T, p pkg, fn func(file string, fset *token.FileSet, n ast.Node)) {
	t.Helper()
	fset := token.NewFileSet()
	for _, f := range p.GoFiles {
		af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
		if err != nil {
			t.Errorf("%s: %v", p.rel(), err)
			continue
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			fn(f, fset, n)
			return true
		})
	}
}

// pkgSel reports whether n is pkgName.sel for one of sels.
func pkgSel(n ast.Node, pkgName string, sels ...string) (string, bool) {
	se, ok := n.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	id, ok := se.X.(*ast.Ident)
	if !ok || id.Name != pkgName || !slices.Contains(sels, se.Sel.Name) {
		return "", false
	}
	return pkgName + "." + se.Sel.Name, true
}

// methodCall reports whether n calls a method named name with nargs
// arguments.
func methodCall(n ast.Node, name string, nargs int) bool {
	c, ok := n.(*ast.CallExpr)
	if !ok || len(c.Args) != nargs {
		return false
	}
	se, ok := c.Fun.(*ast.SelectorExpr)
	return ok && se.Sel.Name == name
}

// TestOnlyResolveDecidesIsolation: deciding a table's isolation — reading
// the tenantdb: isolation tags, matching a leading-key pattern, the
// policy checks of a scope against a table — happens in internal/resolve
// (on the vocabulary of internal/tenancy) and nowhere else, so that a
// second backend cannot implement it a second time. Backends enforce a
// resolved Target's decisions (Target.CheckKey, CheckItem, ...); the
// pattern form Scope.CheckLeadingKey(pattern, pk) is the resolver's alone.
func TestOnlyResolveDecidesIsolation(t *testing.T) {
	exempt := map[string]bool{"internal/resolve": true, "internal/tenancy": true}
	for _, p := range packages(t) {
		if exempt[p.rel()] {
			continue
		}
		refs(t, p, func(file string, fset *token.FileSet, n ast.Node) {
			if what, ok := pkgSel(n, "tenancy", "TagIsolation", "TagLeadingKeyPattern", "ParseIsolationMode"); ok {
				t.Errorf("%s/%s:%d uses %s; only internal/resolve decides a table's isolation", p.rel(), file, fset.Position(n.Pos()).Line, what)
			}
			if methodCall(n, "CheckLeadingKey", 2) {
				t.Errorf("%s/%s:%d matches a leading-key pattern itself; enforce a resolve.Target's instead", p.rel(), file, fset.Position(n.Pos()).Line)
			}
			if methodCall(n, "AllowsTable", 1) {
				t.Errorf("%s/%s:%d checks a scope's table policy itself; only internal/resolve does", p.rel(), file, fset.Position(n.Pos()).Line)
			}
		})
	}
}

// TestEngineResolvesThroughResolver: the embedded engine finds tables only
// through the resolver. It makes no policy decision on a scope, and only
// its definition store (defstore.go, the resolver's Catalog) reads or
// writes a table definition by its key.
func TestEngineResolvesThroughResolver(t *testing.T) {
	for _, p := range packages(t) {
		if p.rel() != "internal/engine" {
			continue
		}
		if !slices.Contains(ours(p.Imports), "internal/resolve") {
			t.Errorf("internal/engine does not import internal/resolve")
		}
		refs(t, p, func(file string, fset *token.FileSet, n ast.Node) {
			line := fset.Position(n.Pos()).Line
			if what, ok := pkgSel(n, "keyspace", "SharedTable", "SharedTables", "TenantTable", "TenantTables"); ok && file != "defstore.go" {
				t.Errorf("internal/engine/%s:%d uses %s; table definitions are read and written only in defstore.go, and found by name only through the resolver", file, line, what)
			}
			for _, m := range []string{"IsOperator", "CanManageTenantTables", "Bypassed"} {
				if methodCall(n, m, 0) {
					t.Errorf("internal/engine/%s:%d calls %s; who may use or change a table is decided in internal/resolve", file, line, m)
				}
			}
		})
		return
	}
	t.Fatal("internal/engine not found")
}

// TestStatisticsStayInTheEngine: the engine's statistics counters are its
// private layout; other packages (metering) read them through the
// engine's TenantStorage.
func TestStatisticsStayInTheEngine(t *testing.T) {
	exempt := map[string]bool{"internal/engine": true, "internal/keyspace": true}
	for _, p := range packages(t) {
		if exempt[p.rel()] {
			continue
		}
		refs(t, p, func(file string, fset *token.FileSet, n ast.Node) {
			if what, ok := pkgSel(n, "keyspace", "Counter", "Counters", "ParseCounter"); ok {
				t.Errorf("%s/%s:%d uses %s; the engine's statistics are read through (*engine.Engine).TenantStorage", p.rel(), file, fset.Position(n.Pos()).Line, what)
			}
		})
	}
}

// TestRemoteTakesIsolationFromTargets: the remote backend (gateways over
// a DynamoDB-API engine) decides no isolation of its own. It maps a
// resolve.Target onto its physical layout: it reads no table's isolation
// mode or leading-key pattern (it calls the Target's checks), builds no
// namespace from a scope's environment (the Target carries it, or
// resolve.Namespace gives it), and touches neither the embedded store's
// key layout nor its store.
func TestRemoteTakesIsolationFromTargets(t *testing.T) {
	for _, p := range packages(t) {
		if p.rel() != "internal/remote" {
			continue
		}
		imps := ours(p.Imports)
		if !slices.Contains(imps, "internal/resolve") {
			t.Errorf("internal/remote does not import internal/resolve")
		}
		for _, bad := range []string{"internal/keyspace", "internal/storage", "internal/catalog", "internal/auth"} {
			if slices.Contains(imps, bad) {
				t.Errorf("internal/remote imports %s", bad)
			}
		}
		refs(t, p, func(file string, fset *token.FileSet, n ast.Node) {
			line := fset.Position(n.Pos()).Line
			if se, ok := n.(*ast.SelectorExpr); ok && (se.Sel.Name == "Isolation" || se.Sel.Name == "LeadingKeyPattern") {
				t.Errorf("internal/remote/%s:%d reads %s; enforce the resolve.Target's checks instead", file, line, se.Sel.Name)
			}
			if methodCall(n, "Env", 0) {
				t.Errorf("internal/remote/%s:%d calls Env(); the namespace comes from the resolve.Target (or resolve.Namespace)", file, line)
			}
		})
		return
	}
	t.Fatal("internal/remote not found")
}
