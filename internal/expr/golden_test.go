package expr

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// Golden files in testdata/ are datadriven files
// (github.com/cockroachdb/datadriven):
//
//	# comment
//	command arg=value
//	input line(s)
//	----
//	expected output
//	<blank line>
//
// go test -run Golden -rewrite regenerates the expected outputs; review the
// diff before committing it.

// arg returns the value of d's argument key, or "".
func arg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ",")
		}
	}
	return ""
}

// errString prints an error as golden output: its message, marked.
func errString(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		if e.Kind != apierr.Validation {
			return "error (" + e.Kind.String() + "): " + e.Message
		}
		return "error: " + e.Message
	}
	return "error (untyped): " + err.Error()
}

// mustItem parses a DynamoDB JSON item (or map of values).
func mustItem(t *testing.T, s string) attr.Item {
	t.Helper()
	if strings.TrimSpace(s) == "" {
		return nil
	}
	it, err := attr.ParseItemJSON([]byte(s))
	if err != nil {
		t.Fatalf("bad item %s: %v", s, err)
	}
	return it
}

// formatItem prints an item as DynamoDB JSON with sorted keys, so that
// golden output is stable.
func formatItem(it attr.Item) string {
	if it == nil {
		return "<nil>"
	}
	var b bytes.Buffer
	writeItem(&b, it)
	return b.String()
}

func writeItem(b *bytes.Buffer, it attr.Item) {
	b.WriteByte('{')
	for i, k := range attr.SortedNames(it) {
		if i > 0 {
			b.WriteString(", ")
		}
		kj, _ := json.Marshal(k)
		b.Write(kj)
		b.WriteString(": ")
		writeValue(b, it[k])
	}
	b.WriteByte('}')
}

func writeValue(b *bytes.Buffer, v attr.Value) {
	switch v.Type {
	case attr.M:
		b.WriteString(`{"M": `)
		writeItem(b, v.M)
		b.WriteByte('}')
	case attr.L:
		b.WriteString(`{"L": [`)
		for i, e := range v.L {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteString("]}")
	case attr.SS, attr.NS, attr.BS:
		var members []string
		switch v.Type {
		case attr.SS:
			members = append(members, v.SS...)
		case attr.NS:
			for _, n := range v.NS {
				members = append(members, n.String())
			}
		case attr.BS:
			for _, x := range v.BS {
				members = append(members, base64.StdEncoding.EncodeToString(x))
			}
		}
		// Sets are unordered; print them in insertion order, which the
		// update code keeps deterministic.
		js, _ := json.Marshal(members)
		fmt.Fprintf(b, `{"%s": %s}`, v.Type, js)
	default:
		b.Write(attr.AppendJSON(nil, v))
	}
}

// goldenParams holds the placeholder maps set by "names" and "values".
type goldenParams struct {
	names  map[string]string
	values map[string]attr.Value
	item   attr.Item
}

func (g *goldenParams) params() *Params { return NewParams(g.names, g.values) }

// state handles the commands that set up state; it reports whether c was
// one of them.
func (g *goldenParams) state(t *testing.T, d *datadriven.TestData) bool {
	switch d.Cmd {
	case "item":
		g.item = mustItem(t, d.Input)
	case "names":
		g.names = nil
		if strings.TrimSpace(d.Input) != "" {
			if err := json.Unmarshal([]byte(d.Input), &g.names); err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
		}
	case "values":
		g.values = mustItem(t, d.Input)
	default:
		return false
	}
	return true
}

func TestGoldenParse(t *testing.T) {
	datadriven.RunTest(t, "testdata/parse", func(t *testing.T, d *datadriven.TestData) string {
		var n node
		var err error
		switch d.Cmd {
		case "condition":
			n, err = parseCondition(d.Input)
		case "update":
			var u *updateNode
			if u, err = parseUpdate(d.Input); err == nil {
				n = u
			}
		case "projection":
			var p *projectionNode
			if p, err = parseProjection(d.Input); err == nil {
				n = p
			}
		default:
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		// Printing must give source that parses to the same tree.
		src := nodeString(n)
		if again := reparse(d.Cmd, src); again != dumpString(n) {
			t.Errorf("%s: %q printed as %q, which parses to\n%s\nnot\n%s", d.Pos, d.Input, src, again, dumpString(n))
		}
		return dumpString(n) + "\nprint: " + src
	})
}

// reparse parses src in the given language and dumps it.
func reparse(lang, src string) string {
	var n node
	var err error
	switch lang {
	case "condition":
		n, err = parseCondition(src)
	case "update":
		var u *updateNode
		if u, err = parseUpdate(src); err == nil {
			n = u
		}
	case "projection":
		var p *projectionNode
		if p, err = parseProjection(src); err == nil {
			n = p
		}
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return dumpString(n)
}

func TestGoldenEval(t *testing.T) {
	g := &goldenParams{}
	datadriven.RunTest(t, "testdata/eval", func(t *testing.T, d *datadriven.TestData) string {
		if g.state(t, d) {
			return ""
		}
		switch d.Cmd {
		case "eval", "filter":
			p := g.params()
			compile := p.Condition
			if d.Cmd == "filter" {
				compile = p.Filter
			}
			cond, err := compile(d.Input)
			if err != nil {
				return errString(err)
			}
			ok, err := cond.Eval(g.item)
			if err != nil {
				return errString(err)
			}
			return fmt.Sprint(ok)
		case "compile":
			cond, err := g.params().Condition(d.Input)
			if err != nil {
				return errString(err)
			}
			return fmt.Sprint(cond)
		case "keycond":
			kc, err := g.params().KeyCondition(d.Input, arg(d, "hash"), arg(d, "range"))
			if err != nil {
				return errString(err)
			}
			return formatKeyCondition(kc)
		}
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	})
}

var keyOpNames = map[KeyOp]string{KeyEQ: "=", KeyLT: "<", KeyLE: "<=", KeyGT: ">", KeyGE: ">=", KeyBetween: "BETWEEN", KeyBeginsWith: "begins_with"}

func formatKeyCondition(kc *KeyCondition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hash: %s = ", kc.HashName)
	formatValue(&b, kc.HashValue)
	if kc.RangeName != "" {
		fmt.Fprintf(&b, "\nrange: %s %s", kc.RangeName, keyOpNames[kc.RangeOp])
		for _, v := range kc.RangeValues {
			b.WriteByte(' ')
			formatValue(&b, v)
		}
	}
	return b.String()
}

func TestGoldenUpdate(t *testing.T) {
	g := &goldenParams{}
	datadriven.RunTest(t, "testdata/update", func(t *testing.T, d *datadriven.TestData) string {
		if g.state(t, d) {
			return ""
		}
		switch d.Cmd {
		case "update":
			p := g.params()
			u, err := p.Update(d.Input)
			if err != nil {
				return errString(err)
			}
			before := formatItem(g.item)
			out, paths, err := u.Apply(g.item)
			if formatItem(g.item) != before {
				t.Errorf("%s: Apply changed its input item", d.Pos)
			}
			if err != nil {
				return errString(err)
			}
			ps := make([]string, len(paths))
			for i, p := range paths {
				ps[i] = p.String()
			}
			return itemDiff(g.item, out) + "\npaths: " + strings.Join(ps, ", ")
		case "project":
			pr, err := g.params().Projection(d.Input)
			if err != nil {
				return errString(err)
			}
			return formatItem(pr.Apply(g.item)) + "\ntop: " + strings.Join(pr.TopNames(), ", ")
		}
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	})
}

// itemDiff prints the top-level attributes that differ between two items:
// "+ name: value" added, "~ name: value" changed, "- name" removed.
func itemDiff(before, after attr.Item) string {
	names := map[string]bool{}
	for k := range before {
		names[k] = true
	}
	for k := range after {
		names[k] = true
	}
	var lines []string
	for _, k := range sortedKeys(names) {
		b, inBefore := before[k]
		a, inAfter := after[k]
		var buf bytes.Buffer
		switch {
		case !inAfter:
			lines = append(lines, "- "+k)
		case !inBefore:
			writeValue(&buf, a)
			lines = append(lines, "+ "+k+": "+buf.String())
		case !attr.Equal(a, b):
			writeValue(&buf, a)
			lines = append(lines, "~ "+k+": "+buf.String())
		}
	}
	if len(lines) == 0 {
		return "(no change)"
	}
	return strings.Join(lines, "\n")
}
