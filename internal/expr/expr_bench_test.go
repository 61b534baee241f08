package expr

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Filters run once per scanned item and updates once per write: these are
// the hot paths. Compilation runs once per request.

func benchItem() attr.Item {
	return attr.Item{
		"pk":      attr.Str("TENANT#1|TICKET#42"),
		"sk":      attr.Str("2024-05-01T10:00:00Z"),
		"state":   attr.Str("open"),
		"prio":    attr.Num(attr.MustNumber("3")),
		"tags":    {Type: attr.SS, SS: []string{"billing", "urgent"}},
		"counter": attr.Num(attr.MustNumber("1234567")),
		"doc": attr.Map(map[string]attr.Value{
			"title":  attr.Str("Cannot log in"),
			"events": attr.List([]attr.Value{attr.Str("created"), attr.Str("assigned")}),
		}),
	}
}

func benchValues() map[string]attr.Value {
	return map[string]attr.Value{
		":open": attr.Str("open"), ":p": attr.Num(attr.MustNumber("2")), ":t": attr.Str("urgent"),
		":pre": attr.Str("Cannot"), ":one": attr.Num(attr.MustNumber("1")), ":ev": attr.List([]attr.Value{attr.Str("closed")}),
	}
}

const benchFilter = "#s = :open AND prio >= :p AND contains(tags, :t) AND begins_with(doc.title, :pre)"

func BenchmarkCompileCondition(b *testing.B) {
	names, values := map[string]string{"#s": "state"}, benchValues()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewParams(names, values).Filter(benchFilter); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvalFilter(b *testing.B) {
	c, err := NewParams(map[string]string{"#s": "state"}, benchValues()).Filter(benchFilter)
	if err != nil {
		b.Fatal(err)
	}
	item := benchItem()
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := c.Eval(item); !ok {
			b.Fatal("want true")
		}
	}
}

func BenchmarkUpdateAddCounter(b *testing.B) {
	u, err := NewParams(map[string]string{"#c": "counter"}, map[string]attr.Value{":one": attr.Num(attr.MustNumber("1"))}).Update("ADD #c :one")
	if err != nil {
		b.Fatal(err)
	}
	item := benchItem()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := u.Apply(item); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdateNested(b *testing.B) {
	u, err := NewParams(nil, benchValues()).Update("SET doc.events = list_append(doc.events, :ev), prio = prio + :one REMOVE tags")
	if err != nil {
		b.Fatal(err)
	}
	item := benchItem()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := u.Apply(item); err != nil {
			b.Fatal(err)
		}
	}
}
