package engine

import (
	"sort"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// indexedTable creates table Idx (pk, sk) with
//
//	1 lsi   (pk, lsk)  KEYS_ONLY
//	2 gAll  (g, gs)    ALL
//	3 gKeys (g)        KEYS_ONLY
//	4 gInc  (h)        INCLUDE [inc]
func indexedTable(t *testing.T) (*testEnv, testActor) {
	t.Helper()
	env := openEnv(t)
	in := tableInput("Idx", true)
	for _, n := range []string{"lsk", "g", "gs", "h"} {
		in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: n, AttributeType: "S"})
	}
	ks := func(h, r string) []wire.KeySchemaElement {
		k := []wire.KeySchemaElement{{AttributeName: h, KeyType: "HASH"}}
		if r != "" {
			k = append(k, wire.KeySchemaElement{AttributeName: r, KeyType: "RANGE"})
		}
		return k
	}
	in.LocalSecondaryIndexes = []wire.LocalSecondaryIndex{{IndexName: "lsi", KeySchema: ks("pk", "lsk"), Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"}}}
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{
		{IndexName: "gAll", KeySchema: ks("g", "gs"), Projection: &wire.Projection{ProjectionType: "ALL"}},
		{IndexName: "gKeys", KeySchema: ks("g", ""), Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"}},
		{IndexName: "gInc", KeySchema: ks("h", ""), Projection: &wire.Projection{ProjectionType: "INCLUDE", NonKeyAttributes: []string{"inc"}}},
	}
	env.operator().create(in)
	return env, env.tenant(tenancy.RoleApp)
}

func entryNames(items []attr.Item) string {
	var out []string
	for _, it := range items {
		out = append(out, strings.Join(attr.SortedNames(it), "+"))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestIndexMaintenance(t *testing.T) {
	env, a := indexedTable(t)
	e := env.e
	full := itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"},"lsk":{"S":"l"},"g":{"S":"G"},"gs":{"S":"S"},"h":{"S":"H"},"inc":{"S":"i"},"oth":{"S":"o"}}`)
	out, err := e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Idx", Item: full, ReturnConsumedCapacity: "INDEXES"})
	noErr(t, err)
	cc := out.ConsumedCapacity
	if cc.CapacityUnits != 5 || cc.Table.CapacityUnits != 1 || len(cc.GlobalSecondaryIndexes) != 3 || cc.LocalSecondaryIndexes["lsi"].CapacityUnits != 1 {
		t.Fatalf("consumed = %+v", cc)
	}
	if out.U.WriteUnits != 5 {
		t.Fatalf("usage = %+v", out.U)
	}
	want := map[uint16]string{
		1: "lsk+pk+sk",
		2: "g+gs+h+inc+lsk+oth+pk+sk",
		3: "g+pk+sk",
		4: "h+inc+pk+sk",
	}
	for no, names := range want {
		if got := entryNames(a.indexEntries("Idx", no)); got != names {
			t.Fatalf("index %d entries %q, want %q", no, got, names)
		}
	}

	// Sparse: an item without g or h has entries in neither.
	a.put("Idx", itemOf(t, `{"pk":{"S":"q"},"sk":{"S":"1"},"lsk":{"S":"l"}}`))
	if n := len(a.indexEntries("Idx", 2)); n != 1 {
		t.Fatalf("gAll has %d entries", n)
	}
	if n := len(a.indexEntries("Idx", 1)); n != 2 {
		t.Fatalf("lsi has %d entries", n)
	}

	// Changing a non-key attribute not projected into gKeys leaves it alone
	// (no write, no capacity), and rewrites gAll.
	uo, err := e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Idx", Key: itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"}}`),
		UpdateExpression: strPtr("SET oth = :o"), ExpressionAttributeValues: map[string]attr.Value{":o": attr.Str("o2")}, ReturnConsumedCapacity: "INDEXES"})
	noErr(t, err)
	if g := uo.ConsumedCapacity.GlobalSecondaryIndexes; len(g) != 1 || g["gAll"].CapacityUnits != 1 {
		t.Fatalf("index capacity of a non-key update: %+v", g)
	}
	// Moving the gAll key deletes the old entry and puts a new one.
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Idx", Key: itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"}}`),
		UpdateExpression: strPtr("SET gs = :s REMOVE h"), ExpressionAttributeValues: map[string]attr.Value{":s": attr.Str("S2")}})
	noErr(t, err)
	entries := a.indexEntries("Idx", 2)
	if len(entries) != 1 || entries[0]["gs"].S != "S2" || entries[0]["oth"].S != "o2" {
		t.Fatalf("gAll entries %v", entries)
	}
	if n := len(a.indexEntries("Idx", 4)); n != 0 {
		t.Fatalf("gInc kept %d entries after REMOVE h", n)
	}
	// Deleting removes every entry; counters return to zero.
	for _, k := range []string{`{"pk":{"S":"p"},"sk":{"S":"1"}}`, `{"pk":{"S":"q"},"sk":{"S":"1"}}`} {
		_, err = e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Idx", Key: itemOf(t, k)})
		noErr(t, err)
	}
	for no := uint16(0); no <= 4; no++ {
		if no > 0 && len(a.indexEntries("Idx", no)) != 0 {
			t.Fatalf("index %d not empty", no)
		}
		if n, b := a.counters("Idx", no); n != 0 || b != 0 {
			t.Fatalf("index %d counters %d/%d", no, n, b)
		}
	}
}

func TestIndexCounters(t *testing.T) {
	env, a := indexedTable(t)
	a.put("Idx", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"},"g":{"S":"G"},"gs":{"S":"S"}}`))
	a.put("Idx", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"2"},"g":{"S":"G"}}`))
	if n, b := a.counters("Idx", 0); n != 2 || b != int64(2+1+2+1+1+1+2+1)+int64(2+1+2+1+1+1) {
		t.Fatalf("table counters %d/%d", n, b)
	}
	if n, _ := a.counters("Idx", 2); n != 1 { // gAll needs gs too
		t.Fatalf("gAll count %d", n)
	}
	if n, _ := a.counters("Idx", 3); n != 2 {
		t.Fatalf("gKeys count %d", n)
	}
	d := a.describe("Idx")
	for _, g := range d.GlobalSecondaryIndexes {
		if g.IndexName == "gKeys" && g.ItemCount != 2 {
			t.Fatalf("described gKeys count %d", g.ItemCount)
		}
	}
	_, err := env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Idx", Item: itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"3"},"g":{"S":""}}`)})
	wantErr(t, err, apierr.Validation, "A value specified for a secondary index key is not supported")
}
