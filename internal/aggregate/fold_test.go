package aggregate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// foldModel runs a fold over an in-memory table: it keeps the items by
// key and turns puts and deletes into the changes the log would record.
type foldModel struct {
	c      *compiled
	tenant string
	items  map[string]attr.Item
	groups map[string]*groupState
}

func (m *foldModel) change(ev Event, key string, new attr.Item, expired bool) error {
	old := m.items[key]
	e := &Entry{Record: Record{Event: ev, Old: old, New: new, Expired: expired, Keys: attr.Item{"pk": attr.Str(key)}}}
	if new == nil {
		delete(m.items, key)
	} else {
		m.items[key] = new
	}
	f := newFold(m.c, m.tenant, func(k string) (*groupState, error) { return m.groups[k], nil })
	if err := f.apply(e); err != nil {
		return err
	}
	for k, g := range f.touched {
		// A round trip through the stored form, as the store does.
		if g.empty() {
			delete(m.groups, k)
			continue
		}
		sg, err := unmarshalGroup(g.marshal())
		if err != nil {
			return err
		}
		m.groups[k] = sg
	}
	return nil
}

func (m *foldModel) show() string {
	ks := make([]string, 0, len(m.groups))
	for k := range m.groups {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		g := m.groups[k]
		fmt.Fprintf(&b, "%s %s: count=%d", k[:1], groupText(k), g.Count)
		for _, a := range m.c.def.sortedSums() {
			v := "0"
			if s := g.Sums[a]; s != nil {
				v = s.String()
			}
			fmt.Fprintf(&b, " sum(%s)=%s", a, v)
		}
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "(no groups)\n"
	}
	return b.String()
}

// TestFold runs testdata/fold: define an aggregate, put and delete items
// and look at the groups (go test -rewrite updates it; review the diff).
//
//	define group-by=A [count] [sum=A,B] [after=SEP] [item=pk:T,sk:T]
//	<where expression>            (optional input; values as
//	:v = {"S": "x"} lines after it)
//	put key=K / delete key=K [ttl]   (input: the item's JSON)
//	own pk=K sk=K                  (are these the keys of the aggregate's own item?)
//	groups
func TestFold(t *testing.T) {
	var m *foldModel
	datadriven.RunTest(t, "testdata/fold", func(t *testing.T, d *datadriven.TestData) string {
		arg := func(k string) (string, bool) {
			for _, a := range d.CmdArgs {
				if a.Key == k {
					return strings.Join(a.Vals, ","), true
				}
			}
			return "", false
		}
		switch d.Cmd {
		case "define":
			def := Definition{Name: "a", Table: "t"}
			def.GroupBy, _ = arg("group-by")
			_, def.Count = arg("count")
			if s, ok := arg("sum"); ok {
				def.Sum = strings.Split(s, ",")
			}
			def.GroupAfter, _ = arg("after")
			if s, ok := arg("item"); ok {
				def.Item = map[string]string{}
				for _, kv := range strings.Split(s, ",") {
					k, v, _ := strings.Cut(kv, ":")
					def.Item[k] = v
				}
			}
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			if lines[0] != "" {
				def.Where = lines[0]
				for _, l := range lines[1:] {
					name, js, _ := strings.Cut(l, " = ")
					var v attr.Value
					if err := json.Unmarshal([]byte(js), &v); err != nil {
						t.Fatalf("%s: value %s: %v", d.Pos, l, err)
					}
					if def.Values == nil {
						def.Values = map[string]attr.Value{}
					}
					def.Values[name] = v
				}
			}
			if err := def.Validate(); err != nil {
				return "error: " + err.Error() + "\n"
			}
			c, err := def.compile()
			if err != nil {
				t.Fatal(err)
			}
			m = &foldModel{c: c, tenant: "0123", items: map[string]attr.Item{}, groups: map[string]*groupState{}}
			return "ok\n"
		case "put", "delete":
			key, _ := arg("key")
			var it attr.Item
			ev := Remove
			if d.Cmd == "put" {
				var err error
				if it, err = attr.ParseItemJSON([]byte(d.Input)); err != nil {
					t.Fatalf("%s: %v", d.Pos, err)
				}
				it["pk"] = attr.Str(key)
				ev = Insert
				if m.items[key] != nil {
					ev = Modify
				}
			}
			_, ttl := arg("ttl")
			if err := m.change(ev, key, it, ttl); err != nil {
				return "error: " + err.Error() + "\n"
			}
			return m.show()
		case "own":
			keys := attr.Item{}
			for _, a := range d.CmdArgs {
				keys[a.Key] = attr.Str(strings.Join(a.Vals, ","))
			}
			return fmt.Sprintln(m.c.ownItem(m.tenant, keys))
		case "groups":
			return m.show()
		}
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		return ""
	})
}

func TestDecimal(t *testing.T) {
	for _, tc := range []struct {
		ops  []string // +x or -x
		want string
	}{
		{[]string{"+1.5", "+2.25"}, "3.75"},
		{[]string{"+0.1", "+0.2", "-0.3"}, "0"},
		{[]string{"+99999999999999999999999999999999999999", "+99999999999999999999999999999999999999"}, "199999999999999999999999999999999999998"},
		{[]string{"+1e-130", "+9.9999999999999999999999999999999999999e125"}, "99999999999999999999999999999999999999" + strings.Repeat("0", 88) + "." + strings.Repeat("0", 129) + "1"},
		{[]string{"-5", "+2"}, "-3"},
		{[]string{"+0.001", "-0.0015"}, "-0.0005"},
		{[]string{"+100", "-0.5"}, "99.5"},
	} {
		var d Decimal
		for _, op := range tc.ops {
			n, err := attr.ParseNumber(op[1:])
			if err != nil {
				t.Fatal(err)
			}
			if op[0] == '+' {
				d.Add(DecimalOf(n))
			} else {
				d.Sub(DecimalOf(n))
			}
		}
		if got := d.String(); got != tc.want {
			t.Errorf("%v = %s, want %s", tc.ops, got, tc.want)
		}
		back, err := ParseDecimal(d.String())
		if err != nil || back.String() != d.String() {
			t.Errorf("ParseDecimal(%s) = %s, %v", d.String(), back.String(), err)
		}
	}
	for _, bad := range []string{"", "-", "1.", ".5", "1e3", "1.2.3", "x"} {
		if _, err := ParseDecimal(bad); err == nil {
			t.Errorf("ParseDecimal(%q) succeeded", bad)
		}
	}
}
