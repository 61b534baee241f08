package expr

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// Golden files in testdata/ hold cases in this form (after Pebble's and
// CockroachDB's datadriven tests):
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

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of golden files in testdata/")

type goldenCase struct {
	pre      string // comments and blank lines before the case, kept on rewrite
	cmd      string
	args     map[string]string
	input    string
	expected string
	line     int
}

func readGolden(t *testing.T, path string) ([]*goldenCase, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []*goldenCase
	i := 0
	for {
		var pre strings.Builder
		for i < len(lines) && (strings.TrimSpace(lines[i]) == "" || strings.HasPrefix(lines[i], "#")) {
			pre.WriteString(lines[i])
			pre.WriteByte('\n')
			i++
		}
		if i == len(lines) {
			return cases, pre.String()
		}
		c := &goldenCase{pre: pre.String(), line: i + 1, args: map[string]string{}}
		fields := strings.Fields(lines[i])
		c.cmd = fields[0]
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.args[k] = v
		}
		i++
		var in []string
		for i < len(lines) && lines[i] != "----" {
			in = append(in, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: missing ----", path, c.line)
		}
		i++
		c.input = strings.Join(in, "\n")
		var out []string
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
			i++
		}
		c.expected = strings.Join(out, "\n")
		cases = append(cases, c)
	}
}

// runGolden runs f on every case of a golden file and compares (or, with
// -rewrite, replaces) the expected output. f must not return blank lines.
func runGolden(t *testing.T, path string, f func(t *testing.T, c *goldenCase) string) {
	t.Helper()
	cases, trailer := readGolden(t, path)
	var out strings.Builder
	for _, c := range cases {
		got := strings.TrimRight(f(t, c), "\n")
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s:%d: output has a blank line: %q", path, c.line, got)
		}
		if !*rewrite && got != c.expected {
			t.Errorf("%s:%d: %s\n%s\ngot:\n%s\nwant:\n%s", path, c.line, c.cmd, c.input, got, c.expected)
		}
		out.WriteString(c.pre)
		out.WriteString(c.cmd)
		for _, k := range sortedKeys(c.args) {
			fmt.Fprintf(&out, " %s=%s", k, c.args[k])
		}
		out.WriteByte('\n')
		if c.input != "" {
			out.WriteString(c.input)
			out.WriteByte('\n')
		}
		out.WriteString("----\n")
		if got != "" {
			out.WriteString(got)
			out.WriteByte('\n')
		}
	}
	out.WriteString(trailer)
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
func (g *goldenParams) state(t *testing.T, c *goldenCase) bool {
	switch c.cmd {
	case "item":
		g.item = mustItem(t, c.input)
	case "names":
		g.names = nil
		if strings.TrimSpace(c.input) != "" {
			if err := json.Unmarshal([]byte(c.input), &g.names); err != nil {
				t.Fatalf("line %d: %v", c.line, err)
			}
		}
	case "values":
		g.values = mustItem(t, c.input)
	default:
		return false
	}
	return true
}

func TestGoldenParse(t *testing.T) {
	runGolden(t, "testdata/parse", func(t *testing.T, c *goldenCase) string {
		var n node
		var err error
		switch c.cmd {
		case "condition":
			n, err = parseCondition(c.input)
		case "update":
			var u *updateNode
			if u, err = parseUpdate(c.input); err == nil {
				n = u
			}
		case "projection":
			var p *projectionNode
			if p, err = parseProjection(c.input); err == nil {
				n = p
			}
		default:
			t.Fatalf("line %d: unknown command %q", c.line, c.cmd)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		// Printing must give source that parses to the same tree.
		src := nodeString(n)
		if again := reparse(c.cmd, src); again != dumpString(n) {
			t.Errorf("line %d: %q printed as %q, which parses to\n%s\nnot\n%s", c.line, c.input, src, again, dumpString(n))
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
	runGolden(t, "testdata/eval", func(t *testing.T, c *goldenCase) string {
		if g.state(t, c) {
			return ""
		}
		switch c.cmd {
		case "eval", "filter":
			p := g.params()
			compile := p.Condition
			if c.cmd == "filter" {
				compile = p.Filter
			}
			cond, err := compile(c.input)
			if err != nil {
				return errString(err)
			}
			ok, err := cond.Eval(g.item)
			if err != nil {
				return errString(err)
			}
			return fmt.Sprint(ok)
		case "compile":
			cond, err := g.params().Condition(c.input)
			if err != nil {
				return errString(err)
			}
			return fmt.Sprint(cond)
		case "keycond":
			kc, err := g.params().KeyCondition(c.input, c.args["hash"], c.args["range"])
			if err != nil {
				return errString(err)
			}
			return formatKeyCondition(kc)
		}
		t.Fatalf("line %d: unknown command %q", c.line, c.cmd)
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
	runGolden(t, "testdata/update", func(t *testing.T, c *goldenCase) string {
		if g.state(t, c) {
			return ""
		}
		switch c.cmd {
		case "update":
			p := g.params()
			u, err := p.Update(c.input)
			if err != nil {
				return errString(err)
			}
			before := formatItem(g.item)
			out, paths, err := u.Apply(g.item)
			if formatItem(g.item) != before {
				t.Errorf("line %d: Apply changed its input item", c.line)
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
			pr, err := g.params().Projection(c.input)
			if err != nil {
				return errString(err)
			}
			return formatItem(pr.Apply(g.item)) + "\ntop: " + strings.Join(pr.TopNames(), ", ")
		}
		t.Fatalf("line %d: unknown command %q", c.line, c.cmd)
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
