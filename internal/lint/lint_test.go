// Package lint enforces tenantdb's structural rules in its tests: who may
// import Pebble and net/http, what the vocabulary packages may import, that
// the layers only import downwards, that only internal/node wires the
// server, and that every package has exactly one package comment.
package lint

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tenantdb/tenantdb"

type pkg struct {
	Dir          string
	ImportPath   string
	Name         string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	// IgnoredGoFiles are files excluded by build constraints (such as
	// the benchbypass tag's).
	IgnoredGoFiles []string
	Imports        []string
	TestImports    []string
	XTestImports   []string
}

// rel is the import path inside the module ("internal/wire").
func (p pkg) rel() string { return strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/") }

func (p pkg) allImports() []string {
	return slices.Concat(p.Imports, p.TestImports, p.XTestImports)
}

func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	d := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := d.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// ours returns the module-internal imports among list, relative.
func ours(list []string) []string {
	var out []string
	for _, imp := range list {
		if strings.HasPrefix(imp, module+"/") {
			out = append(out, strings.TrimPrefix(imp, module+"/"))
		}
	}
	return out
}

func TestOnlyStorageImportsPebble(t *testing.T) {
	for _, p := range packages(t) {
		if p.rel() == "internal/storage" {
			continue
		}
		for _, imp := range p.allImports() {
			if strings.HasPrefix(imp, "github.com/cockroachdb/pebble") {
				t.Errorf("%s imports %s; only internal/storage may import Pebble", p.rel(), imp)
			}
		}
	}
}

func TestOnlyServerAndAdminImportNetHTTP(t *testing.T) {
	allowed := map[string]bool{
		"internal/server": true, "internal/admin": true,
		"internal/console": true, // the web console: HTML over HTTP, calling the two above in-process
		"internal/sdkhttp": true, // the HTTP client wrapper of our SDK clients (tdbload, tests)
		"internal/verify":  true, // a black-box attacker: a client, like the tests
		"internal/webhook": true, // delivers webhooks: an HTTP client of tenants' endpoints
	}
	for _, p := range packages(t) {
		if !strings.HasPrefix(p.rel(), "internal/") || allowed[p.rel()] {
			continue // commands and black-box tests are clients and may use it
		}
		for _, imp := range p.Imports {
			if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
				t.Errorf("%s imports %s; only internal/server and internal/admin may", p.rel(), imp)
			}
		}
	}
}

// TestImportDirections keeps the vocabulary packages free of our other
// packages and the layers importing only downwards.
func TestImportDirections(t *testing.T) {
	// may lists everything of ours a package may import (non-test files).
	may := map[string][]string{
		"internal/apierr":  {},
		"internal/attr":    {"internal/apierr"},
		"internal/tenancy": {"internal/apierr"},
		"internal/sigv4":   {"internal/apierr"},
		"internal/wire":    {"internal/apierr", "internal/attr"},
		// The operations table sits on the vocabulary and the wire types
		// only, so every layer above may derive from it.
		"internal/dynamo":  {"internal/apierr", "internal/attr", "internal/partiql", "internal/tenancy", "internal/wire"},
		"internal/partiql": {"internal/apierr", "internal/attr", "internal/tenancy", "internal/wire"},
		"internal/storage": {},
		// The table definition is vocabulary every backend shares.
		"internal/schema": {"internal/apierr", "internal/attr", "internal/tenancy", "internal/wire"},
		// Isolation is decided above every backend, from definitions alone.
		"internal/resolve": {"internal/apierr", "internal/attr", "internal/keyspace", "internal/schema", "internal/tenancy", "internal/wire"},
	}
	// mustNot lists what a package may never import.
	mustNot := map[string][]string{
		"internal/engine": {"internal/server", "internal/admin", "internal/auth", "internal/catalog", "internal/quota", "internal/audit"},
		"internal/server": {"internal/engine", "internal/storage", "internal/catalog", "internal/auth", "internal/quota", "internal/admin", "internal/keyspace"},
		"internal/expr":   {"internal/engine", "internal/storage", "internal/server"},
		"internal/quota":  {"internal/engine", "internal/server", "internal/admin"},
		"internal/auth":   {"internal/engine", "internal/server", "internal/admin"},
		// The change log sits beside storage, below the engine.
		"internal/changelog": {"internal/engine", "internal/server", "internal/admin", "internal/auth", "internal/catalog", "internal/quota", "internal/audit", "internal/wire"},
	}
	for _, p := range packages(t) {
		imps := ours(p.Imports)
		if allowed, ok := may[p.rel()]; ok {
			for _, imp := range imps {
				if !slices.Contains(allowed, imp) {
					t.Errorf("%s imports %s; it may import only %v of ours", p.rel(), imp, allowed)
				}
			}
		}
		for _, imp := range imps {
			if slices.Contains(mustNot[p.rel()], imp) {
				t.Errorf("%s imports %s, against the direction of the layers", p.rel(), imp)
			}
		}
	}
}

// TestBlackBoxClients: the public client package is built on nothing of
// ours (its types are the API's contract, not internal ones), and the
// verifier attacks a deployment through it and aws-sdk-go-v2 alone, as
// any outsider could.
func TestBlackBoxClients(t *testing.T) {
	may := map[string][]string{
		"client":          {},
		"internal/verify": {"client"},
	}
	found := 0
	for _, p := range packages(t) {
		allowed, ok := may[p.rel()]
		if !ok {
			continue
		}
		found++
		for _, imp := range ours(p.Imports) {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s; it may import only %v of ours", p.rel(), imp, allowed)
			}
		}
	}
	if found != len(may) {
		t.Errorf("found %d of the packages %v", found, may)
	}
}

// TestOnlyNodeAssembles: the constructors that wire a server process are
// called only by internal/node, the one assembly that `tenantdb serve` and
// the black-box suites share, and by the tests of those five packages
// (which build the neighbours they need, e.g. admin's tests an auth) and
// of the packages in testsBuild (fleetkey's rotate an auth's keys).
func TestOnlyNodeAssembles(t *testing.T) {
	constructors := map[string][]string{ // package -> functions
		"internal/server": {"New"},
		"internal/engine": {"Open"},
		"internal/quota":  {"New"},
		"internal/admin":  {"New"},
		"internal/auth":   {"New"},
	}
	testsBuild := []string{"internal/fleetkey"}
	for _, p := range packages(t) {
		if p.rel() == "internal/node" {
			continue
		}
		if strings.HasPrefix(p.rel(), "internal/") && slices.Contains(ours(p.allImports()), "internal/node") {
			t.Errorf("%s imports internal/node; only commands and black-box tests may", p.rel())
		}
		files := slices.Concat(p.GoFiles, p.IgnoredGoFiles)
		if _, wired := constructors[p.rel()]; !wired && !slices.Contains(testsBuild, p.rel()) {
			files = slices.Concat(files, p.TestGoFiles, p.XTestGoFiles)
		} else {
			files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
		}
		fset := token.NewFileSet()
		for _, f := range files {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("%s: %v", p.rel(), err)
				continue
			}
			names := map[string]string{} // local name -> package, for ours
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				rel, ok := strings.CutPrefix(path, module+"/")
				if _, wired := constructors[rel]; !ok || !wired {
					continue
				}
				name := filepath.Base(rel)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = rel
			}
			ast.Inspect(af, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				if rel, ok := names[id.Name]; ok && slices.Contains(constructors[rel], sel.Sel.Name) {
					t.Errorf("%s: calls %s.%s; only internal/node wires the server (node.Open)",
						fset.Position(call.Pos()), id.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

// TestOnePackageComment: exactly one file of each package carries the
// package comment ("Package x ..." or, for commands, "Command x ...").
func TestOnePackageComment(t *testing.T) {
	for _, p := range packages(t) {
		files := p.GoFiles
		if len(files) == 0 {
			files = p.TestGoFiles // a package of tests only
		}
		if len(files) == 0 {
			continue
		}
		var with []string
		fset := token.NewFileSet()
		for _, f := range files {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("%s: %v", p.rel(), err)
				continue
			}
			if af.Doc == nil {
				continue
			}
			with = append(with, f)
			text := af.Doc.Text()
			want := "Package " + p.Name + " "
			if p.Name == "main" {
				want = "Command " + filepath.Base(p.Dir) + " "
			}
			if !strings.HasPrefix(text, want) {
				t.Errorf("%s/%s: package comment should start with %q, got %q", p.rel(), f, want, firstLine(text))
			}
		}
		switch len(with) {
		case 0:
			t.Errorf("%s has no package comment", p.rel())
		case 1:
		default:
			t.Errorf("%s has package comments in %d files (%v); keep one", p.rel(), len(with), with)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
