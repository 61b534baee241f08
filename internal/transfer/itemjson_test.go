package transfer

import (
	"encoding/json"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// TestAppendItem: the canonical form sorts names at every depth, parses
// back to the same item, and is valid JSON whatever the names hold.
func TestAppendItem(t *testing.T) {
	in := `{"z":{"M":{"b":{"N":"1"},"a":{"L":[{"M":{"y":{"S":"x"},"x":{"NULL":true}}}]}}},"a\"\n<>":{"SS":["b","a"]},"m":{"B":"AAE="},"k":{"BOOL":false},"n":{"NS":["1","2.50"]}}`
	want := `{"a\"\n<>":{"SS":["b","a"]},"k":{"BOOL":false},"m":{"B":"AAE="},"n":{"NS":["1","2.5"]},"z":{"M":{"a":{"L":[{"M":{"x":{"NULL":true},"y":{"S":"x"}}}]},"b":{"N":"1"}}}}`
	item, err := attr.ParseItemJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := AppendItem(nil, item)
	if !json.Valid(got) {
		t.Fatalf("not JSON: %s", got)
	}
	again, err := attr.ParseItemJSON(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(AppendItem(nil, again)) != string(got) {
		t.Fatalf("not stable:\n%s\n%s", got, AppendItem(nil, again))
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
