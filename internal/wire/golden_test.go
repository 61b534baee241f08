package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Golden files in testdata/ are datadriven files
// (github.com/cockroachdb/datadriven), e.g. in testdata/decode:
//
//	decode name=put-item op=PutItem
//	<request body, any number of lines>
//	----
//	<the result>
//
// and go test -rewrite replaces every result with what the code produces;
// review the diff.

// arg returns the value of d's argument key, or "".
func arg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ",")
		}
	}
	return ""
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
	datadriven.Walk(t, "testdata/decode", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			in, err := decodeOp(arg(d, "op"), decodeBody(t, d))
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
	})
}

// decodeBody returns the request body of a "decode" case: its input, or
// with the argument quoted, the Go string literal its input is.
func decodeBody(t testing.TB, d *datadriven.TestData) []byte {
	t.Helper()
	if d.Cmd != "decode" {
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	if !d.HasArg("quoted") {
		return []byte(d.Input)
	}
	body, err := strconv.Unquote(d.Input)
	if err != nil {
		t.Fatalf("%s: quoted body: %v", d.Pos, err)
	}
	return []byte(body)
}

// addDecodeSeeds adds the requests of the golden files in testdata/decode
// to f's seed corpus.
func addDecodeSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/decode/*.txt")
	for _, path := range files {
		datadriven.RunTestAny(f, path, func(t testing.TB, d *datadriven.TestData) string {
			f.Add(arg(d, "op"), decodeBody(t, d))
			return d.Expected
		})
	}
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
