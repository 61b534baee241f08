package partiql

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// FuzzParse feeds arbitrary statements to the parser, which sits at a
// trust boundary. A statement that parses must render to a canonical form
// that parses again to the same form, and must translate (or fail to)
// without panicking. The corpus is kept in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`SELECT * FROM Orders WHERE pk = 'a' AND sk = 1`,
		`SELECT a, b.c, d[1] FROM "Orders"."byStatus" WHERE status = ? ORDER BY created DESC`,
		`SELECT * FROM Orders WHERE pk IN ['a', 'b'] OR NOT begins_with(sk, 'x') AND size(l) > 2`,
		`INSERT INTO Orders VALUE {'pk': 'a', 'sk': 1, 's': <<'x'>>, 'm': {'l': [TRUE, NULL, -1.5e3]}}`,
		`UPDATE Orders SET n = n + 1 REMOVE old WHERE pk = 'a' AND sk = 1 RETURNING ALL NEW *`,
		`DELETE FROM Orders WHERE pk = ? AND sk = ? RETURNING ALL OLD *`,
		`EXISTS(SELECT * FROM Orders WHERE pk = 'a' AND sk = 1 AND x IS NOT MISSING)`,
	} {
		f.Add(s)
	}
	params := []attr.Value{attr.Str("p"), attr.Str("q")}
	f.Fuzz(func(t *testing.T, src string) {
		st, err := Parse(src)
		if err != nil {
			return
		}
		_, check := st.(*Exists)
		if Writes(src) != (IsWrite(st) || check) {
			t.Fatalf("Writes(%q) = %v for a %T", src, Writes(src), st)
		}
		canon := st.String()
		st2, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical form of %q does not parse: %q: %v", src, canon, err)
		}
		if again := st2.String(); again != canon {
			t.Fatalf("canonical form is not stable:\n%s\n%s", canon, again)
		}
		for n := range 3 {
			_, _ = Translate(st, params[:min(n, len(params))], testSchema)
		}
	})
}
