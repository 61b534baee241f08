package partiql

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// The golden files in testdata/ (datadriven format; go test -rewrite
// regenerates the expected outputs):
//
//	parse
//	<statement>
//	----
//	<canonical form, or the error>
//
//	translate
//	<statement>
//	param <attribute value JSON>   (zero or more)
//	----
//	<the item operation and its input as JSON, or the error>
//
// translate runs against testSchema.

// testSchema is the tables the translate cases name.
func testSchema(table, index string) (Keys, error) {
	switch table + "/" + index {
	case "Orders/":
		return Keys{Hash: "pk", Range: "sk"}, nil
	case "Orders/byStatus":
		return Keys{Hash: "status", Range: "created"}, nil
	case "Users/":
		return Keys{Hash: "id"}, nil
	}
	return Keys{}, apierr.New(apierr.ResourceNotFound, "Requested resource not found")
}

func TestGolden(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.Contains(path, "fuzz") {
			return
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "parse":
				st, err := Parse(td.Input)
				if err != nil {
					return errString(err)
				}
				return st.String() + "\n"
			case "translate":
				lines := strings.Split(td.Input, "\n")
				var params []attr.Value
				for _, l := range lines[1:] {
					var v attr.Value
					if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "param ")), &v); err != nil {
						t.Fatalf("%s: bad param %q: %v", td.Pos, l, err)
					}
					params = append(params, v)
				}
				st, err := Parse(lines[0])
				if err != nil {
					return errString(err)
				}
				plan, err := Translate(st, params, testSchema)
				if err != nil {
					return errString(err)
				}
				return renderPlan(t, plan)
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		})
	})
}

func errString(err error) string {
	return "error: " + err.Error() + "\n"
}

func renderPlan(t *testing.T, p *Plan) string {
	t.Helper()
	var op string
	var in any
	switch {
	case p.Get != nil:
		op, in = "GetItem", p.Get
	case p.Query != nil:
		op, in = "Query", p.Query
	case p.Queries != nil:
		op, in = "Queries", p.Queries
	case p.Scan != nil:
		op, in = "Scan", p.Scan
	case p.Put != nil:
		op, in = "PutItem", p.Put
	case p.Update != nil:
		op, in = "UpdateItem", p.Update
	case p.Delete != nil:
		op, in = "DeleteItem", p.Delete
	case p.Check != nil:
		op, in = "ConditionCheck", p.Check
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the empty fields, to keep the golden files readable.
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	drop := func(v any) {
		if o, ok := v.(map[string]any); ok {
			for k, x := range o {
				if x == nil || x == "" {
					delete(o, k)
				}
			}
		}
	}
	drop(m)
	if l, ok := m.([]any); ok {
		for _, x := range l {
			drop(x)
		}
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return op + " " + out.String()
}
