package expr

import (
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// mirrorNames and mirrorValues are the placeholders of the mirror tests:
// #t stands for the mirror attribute, :z for zero.
var (
	mirrorNames  = map[string]string{"#e": "exp", "#o": "other", "#t": "mirror"}
	mirrorValues = map[string]attr.Value{
		":n": attr.Num(attr.MustNumber("100")), ":d": attr.Num(attr.MustNumber("5")),
		":s": attr.Str("x"), ":ns": {Type: attr.NS, NS: []attr.Number{attr.MustNumber("1")}},
		":z": attr.Num(attr.MustNumber("0")),
	}
)

// checkMirror applies s and its mirror to item and reports a mismatch:
// the mirror must change nothing but the mirror attribute, which must
// hold exp's value when exp is a number and no number otherwise (the
// engine's TTL ignores other types).
func checkMirror(t *testing.T, s string, item attr.Item) (string, bool) {
	t.Helper()
	p := NewParams(mirrorNames, mirrorValues)
	u, err := p.Update(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	out, changed, zero, err := p.MirrorTop(s, "exp", "#t", ":z")
	if err != nil {
		t.Fatalf("%s: MirrorTop: %v", s, err)
	}
	m, err := NewParams(mirrorNames, mirrorValues).Update(out)
	if err != nil {
		t.Fatalf("%s: the mirror %q does not compile: %v", s, out, err)
	}
	want, _, werr := u.Apply(attr.CloneItem(item))
	got, _, gerr := m.Apply(attr.CloneItem(item))
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s on %v: error %v, mirror %q: %v", s, item, werr, out, gerr)
	}
	if werr != nil {
		return out, changed
	}
	mv, has := got["mirror"]
	delete(got, "mirror")
	delete(want, "mirror")
	if !attr.EqualItems(want, got) {
		t.Errorf("%s: the mirror %q changed more than the mirror attribute: %v, want %v", s, out, got, want)
	}
	ev, ok := want["exp"]
	if ok && ev.Type == attr.N {
		if !has || !attr.Equal(mv, ev) {
			t.Errorf("%s on %v: mirror %v, want %v (%q)", s, item, mv, ev, out)
		}
	} else if has && mv.Type == attr.N && changed {
		t.Errorf("%s on %v: mirror %v left while exp is %v (%q)", s, item, mv, ev, out)
	}
	if zero != (out != s && contains(out, ":z")) {
		t.Errorf("%s: zeroUsed %v in %q", s, zero, out)
	}
	return out, changed
}

func TestMirrorTop(t *testing.T) {
	items := []attr.Item{
		{"pk": attr.Str("k")},
		{"pk": attr.Str("k"), "exp": attr.Num(attr.MustNumber("7")), "mirror": attr.Num(attr.MustNumber("7"))},
		{"pk": attr.Str("k"), "exp": attr.Str("s")},
	}
	for _, c := range []struct {
		upd     string
		changed bool
	}{
		{"SET exp = :n", true},
		{"SET #e = :n, #o = :s", true},
		{"SET #o = :s REMOVE #e", true},
		{"REMOVE exp", true},
		{"SET #e = if_not_exists(#e, :n) + :d", true},
		{"SET #e = #e - :d", true},
		{"SET #e = :s", true},
		{"ADD #e :d", true},
		{"ADD #e :ns", true},
		{"ADD #o :d", false},
		{"SET #o = #e", false},
		{"SET #e.x = :n", false},
		{"DELETE #e :ns", false},
		{"SET #o = :n ADD #e :d REMOVE pk2", true},
	} {
		for _, it := range items {
			out, changed := checkMirror(t, c.upd, it)
			if changed != c.changed {
				t.Errorf("%s: changed %v, want %v (%q)", c.upd, changed, c.changed, out)
			}
		}
	}
}

// FuzzMirrorTop checks that for every update Update accepts, the mirror
// compiles and keeps the mirror attribute equal to exp's number.
func FuzzMirrorTop(f *testing.F) {
	for _, s := range []string{"SET exp = :n", "ADD #e :d", "REMOVE #e, #o", "SET #e = #o + :d ADD #o :d", "SET #o = list_append(#o, :s)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := NewParams(mirrorNames, mirrorValues).Update(s); err != nil {
			return
		}
		checkMirror(t, s, attr.Item{"pk": attr.Str("k"), "exp": attr.Num(attr.MustNumber("7")), "mirror": attr.Num(attr.MustNumber("7")), "other": attr.Num(attr.MustNumber("1"))})
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
