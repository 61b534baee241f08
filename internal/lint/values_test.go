package lint

import (
	"go/ast"
	"go/token"
	"testing"
)

// TestStoredValuesOneSeam: the engine encodes and decodes stored item
// values only in values.go, where they are sealed under the tenant's data
// key; a read or write elsewhere that used the attr encoding directly
// would store or expect plaintext. The change log encodes records only in
// record.go, which seal.go seals.
func TestStoredValuesOneSeam(t *testing.T) {
	allowed := map[string]string{"internal/engine": "values.go", "internal/changelog": "record.go"}
	found := 0
	for _, p := range packages(t) {
		file, ok := allowed[p.rel()]
		if !ok {
			continue
		}
		found++
		refs(t, p, func(f string, fset *token.FileSet, n ast.Node) {
			if what, ok := pkgSel(n, "attr", "EncodeItem", "AppendItem", "DecodeItem", "EncodedItemSize"); ok && f != file {
				t.Errorf("%s/%s:%d uses %s; stored values are encoded only in %s (sealed under the tenant's key)", p.rel(), f, fset.Position(n.Pos()).Line, what, file)
			}
		})
	}
	if found != len(allowed) {
		t.Errorf("found %d of the packages %v", found, allowed)
	}
}
