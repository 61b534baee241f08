package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestEveryHandleIsClosed: a handle holds a reference to its store (a silo
// store is never closed while held), so a function that opens one must
// close it: every function of the package that calls e.open or
// e.openStream also calls close on a handle (h.close(), or a loop over
// the handles it opened). A handle left open would keep its tenant's
// store open for ever, past --max-open-silos.
func TestEveryHandleIsClosed(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	// Functions that hand the handles they open to their caller, which
	// closes them.
	handOver := map[string]bool{
		"prepareTx": true, // TransactWriteItems closes its handles map
		"Snapshot":  true, // Snapshot.Close closes the snapshot's handles
	}
	fset := token.NewFileSet()
	checked := 0
	for _, ent := range ents {
		name := ent.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Name.Name == "open" || fn.Name.Name == "openStream" || fn.Name.Name == "openForBackup" || handOver[fn.Name.Name] {
				continue
			}
			opens, closes := false, false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					switch sel.Sel.Name {
					case "open", "openStream", "openForBackup":
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "e" {
							opens = true
						}
					case "close":
						closes = true
					}
				}
				return true
			})
			if opens {
				checked++
				if !closes {
					t.Errorf("%s: %s opens a handle and never closes one (defer h.close())", fset.Position(fn.Pos()), fn.Name.Name)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("found only %d functions opening handles: the check is not looking at the operations", checked)
	}
}
