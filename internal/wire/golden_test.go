package wire

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/ with the current results")

// A golden file holds cases of the form
//
//	=== name
//	op: PutItem
//	<request body, any number of lines>
//	--- want
//	<the result>
//
// and -rewrite replaces every "want" part with what the code produces.
type goldenCase struct {
	name string
	op   string
	body string
	want string
}

const (
	caseSep = "=== "
	wantSep = "--- want\n"
)

func readGolden(t testing.TB, path string) []goldenCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, chunk := range strings.Split("\n"+string(data), "\n"+caseSep)[1:] {
		name, rest, _ := strings.Cut(chunk, "\n")
		input, want, ok := strings.Cut(rest, wantSep)
		if !ok {
			t.Fatalf("%s: case %q has no %q line", path, name, strings.TrimSpace(wantSep))
		}
		opLine, body, _ := strings.Cut(input, "\n")
		op, ok := strings.CutPrefix(opLine, "op: ")
		if !ok {
			t.Fatalf("%s: case %q: first line must be \"op: NAME\", got %q", path, name, opLine)
		}
		cases = append(cases, goldenCase{name: name, op: op, body: strings.TrimSuffix(body, "\n"), want: want})
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return cases
}

func writeGolden(t testing.TB, path string, cases []goldenCase) {
	t.Helper()
	var b strings.Builder
	for i, c := range cases {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s%s\nop: %s\n%s\n%s%s", caseSep, c.name, c.op, c.body, wantSep, strings.TrimSuffix(c.want, "\n")+"\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runGolden runs f on every case of every file matching pattern and
// compares (or with -rewrite, replaces) the results.
func runGolden(t *testing.T, pattern string, f func(t *testing.T, c goldenCase) string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files match %s", pattern)
	}
	for _, path := range files {
		cases := readGolden(t, path)
		for i := range cases {
			c := &cases[i]
			t.Run(filepath.Base(path)+"/"+c.name, func(t *testing.T) {
				got := strings.TrimSuffix(f(t, *c), "\n") + "\n"
				if *rewrite {
					c.want = got
					return
				}
				if got != c.want {
					t.Errorf("%s: case %q\ngot:\n%s\nwant:\n%s", path, c.name, got, c.want)
				}
			})
		}
		if *rewrite {
			writeGolden(t, path, cases)
		}
	}
}

// canonical re-indents JSON with sorted object keys, so that golden files
// do not depend on map iteration order.
func canonical(t testing.TB, data []byte, edits ...func(any) any) string {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, data)
	}
	for _, e := range edits {
		v = e(v)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestDecodeGolden decodes each request in testdata/decode and prints the
// decoded input (re-encoded) or the error response a client would get.
func TestDecodeGolden(t *testing.T) {
	runGolden(t, "testdata/decode/*.txt", func(t *testing.T, c goldenCase) string {
		in, err := decodeOp(c.op, []byte(c.body))
		if err != nil {
			body, status := AppendError(nil, err)
			return fmt.Sprintf("error %d\n%s", status, canonical(t, body))
		}
		enc, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("re-encoding %T: %v", in, err)
		}
		return fmt.Sprintf("ok %T\n%s", in, canonical(t, enc, dropNulls))
	})
}

// dropNulls removes null members, which decoded inputs have for every
// member the request did not set.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}
