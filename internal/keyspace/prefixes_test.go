package keyspace

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// prefixConsts returns the constants of the package by declaring file,
// with their values, type-checked so that rune and string values compare
// as they are.
func prefixConsts(t *testing.T) (byFile map[string][]string, values map[string]constant.Value) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	byFile = map[string][]string{}
	values = map[string]constant.Value{}
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					byFile[name] = append(byFile[name], n.Name)
				}
			}
		}
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: nil, Error: func(error) {}}
	_, _ = conf.Check("keyspace", fset, parsed, info)
	for id, obj := range info.Defs {
		if c, ok := obj.(*types.Const); ok && obj.Parent() != nil && obj.Parent().Parent() == types.Universe {
			values[id.Name] = c.Val()
		}
	}
	return byFile, values
}

// TestPrefixesInOneFile keeps every prefix and system name in prefixes.go.
func TestPrefixesInOneFile(t *testing.T) {
	byFile, _ := prefixConsts(t)
	for file, names := range byFile {
		if file != "prefixes.go" {
			t.Errorf("%s declares constants %v: key prefixes belong in prefixes.go", file, names)
		}
	}
	if len(byFile["prefixes.go"]) == 0 {
		t.Fatal("prefixes.go declares no constants")
	}
}

// TestPrefixesDistinct checks that no two prefixes of one level are equal
// and that no system key name is a prefix of another.
func TestPrefixesDistinct(t *testing.T) {
	_, values := prefixConsts(t)
	levels := map[string]string{"sys": "top", "catalogPrefix": "top", "tenantPrefix": "top", "cat": "catalog", "sub": "tenant", "ns": "namespace", "chg": "change", "wh": "webhook", "Sys": "system"}
	levelOf := func(name string) string {
		if l, ok := levels[name]; ok {
			return l
		}
		for p, l := range levels {
			if strings.HasPrefix(name, p) && len(name) > len(p) && name[len(p)] >= 'A' && name[len(p)] <= 'Z' {
				return l
			}
		}
		return ""
	}
	seen := map[string]map[string]string{} // level -> value -> name
	count := 0
	for name, v := range values {
		l := levelOf(name)
		if l == "" {
			continue
		}
		count++
		key := v.ExactString()
		if seen[l] == nil {
			seen[l] = map[string]string{}
		}
		if other, dup := seen[l][key]; dup {
			t.Errorf("%s and %s are both %s at the %s level", name, other, key, l)
		}
		seen[l][key] = name
	}
	if count < 20 {
		t.Fatalf("found %d prefixes; the test no longer recognises prefixes.go's names", count)
	}
	var sys []string
	for name, v := range values {
		if levelOf(name) == "system" {
			sys = append(sys, constant.StringVal(v))
		}
	}
	for _, a := range sys {
		for _, b := range sys {
			if a != b && strings.HasPrefix(b, a) {
				t.Errorf("system name %q is a prefix of %q", a, b)
			}
		}
	}
}
