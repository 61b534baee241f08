package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestQueryTable(t *testing.T) {
	e, s := openOrders(t)
	putItems(t, e, s, "Orders",
		orderItem("a", "3", "", 0, "", ""), orderItem("a", "1", "", 0, "", ""), orderItem("a", "2", "", 0, "", ""),
		orderItem("b", "1", "", 0, "", ""), orderItem("aa", "1", "", 0, "", ""))
	in := wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("a"))}
	out, err := runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(out.Items, "pk", "sk"), []string{"a/1", "a/2", "a/3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	if out.Count != 3 || out.ScannedCount != 3 || out.LastEvaluatedKey != nil {
		t.Fatalf("Count %d ScannedCount %d LEK %v, want 3 3 nil", out.Count, out.ScannedCount, out.LastEvaluatedKey)
	}
	if len(out.Items[0]) != 4 {
		t.Fatalf("item %v: want all 4 attributes", out.Items[0])
	}
	in.ScanIndexForward = boolPtr(false)
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(out.Items, "sk"), []string{"3", "2", "1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("backward items %v, want %v", got, want)
	}
	// Projection.
	in.ProjectionExpression, in.ExpressionAttributeNames = strPtr("#n, sk"), map[string]string{"#n": "note"}
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if !attr.EqualItems(out.Items[0], attr.Item{"sk": sval("3"), "note": sval("note 3")}) {
		t.Fatalf("projected item %v", out.Items[0])
	}
	// A partition without items.
	in = wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("zz"))}
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Items == nil || len(out.Items) != 0 || out.Count != 0 {
		t.Fatalf("empty partition: Items %#v Count %d, want empty non-nil", out.Items, out.Count)
	}
}

// TestQueryKeyOperators runs every key operator on S, N and B sort keys,
// forwards and backwards, against a brute-force filter of the items.
func TestQueryKeyOperators(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	e := openEnv(t).e
	s := tenantScope(t, tenancy.NewTenantID(), "Query")
	for _, typ := range []attr.Type{attr.S, attr.N, attr.B} {
		name := "Sort" + typ.String()
		createShared(t, e, name, "pk:S", "sk:"+typ.String(), nil)
		seen := map[string]bool{}
		var mine []attr.Value
		for len(mine) < 60 {
			v := randKeyValue(rng, typ, 1)
			k := string(attr.AppendKey(nil, v))
			if seen[k] {
				continue
			}
			seen[k] = true
			mine = append(mine, v)
			putItems(t, e, s, name, attr.Item{"pk": sval("p"), "sk": v})
			putItems(t, e, s, name, attr.Item{"pk": sval("p\x00"), "sk": v}, attr.Item{"pk": sval("q"), "sk": v})
		}
		slices.SortFunc(mine, func(a, b attr.Value) int { c, _ := attr.Compare(a, b); return c })
		type opCase struct {
			op   expr.KeyOp
			cond string
		}
		cases := []opCase{{expr.KeyEQ, "sk = :a"}, {expr.KeyLT, "sk < :a"}, {expr.KeyLE, "sk <= :a"}, {expr.KeyGT, "sk > :a"}, {expr.KeyGE, "sk >= :a"}, {expr.KeyBetween, "sk BETWEEN :a AND :b"}}
		if typ != attr.N {
			cases = append(cases, opCase{expr.KeyBeginsWith, "begins_with(sk, :a)"})
		}
		for _, c := range cases {
			for trial := 0; trial < 12; trial++ {
				pick := func() attr.Value {
					if rng.IntN(2) == 0 {
						return mine[rng.IntN(len(mine))]
					}
					return randKeyValue(rng, typ, 1)
				}
				a, b := pick(), pick()
				if c.op == expr.KeyBetween {
					if n, _ := attr.Compare(a, b); n > 0 {
						a, b = b, a
					}
				}
				if c.op == expr.KeyBeginsWith {
					if typ == attr.S {
						r := []rune(a.S)
						a = sval(string(r[:1+rng.IntN(len(r))]))
					} else {
						a = bval(string(a.B[:1+rng.IntN(len(a.B))]))
					}
				}
				operands := []attr.Value{a, b}[:1+btoi(c.op == expr.KeyBetween)]
				var want []string
				for _, v := range mine {
					if bruteMatch(v, c.op, operands) {
						want = append(want, keysOf([]attr.Item{{"sk": v}}, "sk")[0])
					}
				}
				vals := exprVals(":p", sval("p"), ":a", a)
				if c.op == expr.KeyBetween {
					vals[":b"] = b
				}
				for _, fwd := range []bool{true, false} {
					in := wire.QueryInput{TableName: name, KeyConditionExpression: strPtr("pk = :p AND " + c.cond), ExpressionAttributeValues: vals, ScanIndexForward: boolPtr(fwd)}
					out, err := runQuery(t, e, s, &in)
					if err != nil {
						t.Fatalf("%s %s %v: %v", name, c.cond, operands, err)
					}
					got := keysOf(out.Items, "sk")
					w := want
					if !fwd {
						w = slices.Clone(want)
						slices.Reverse(w)
					}
					if !reflect.DeepEqual(got, w) && !(len(got) == 0 && len(w) == 0) {
						t.Fatalf("%s %s %v forward=%v: got %q, want %q", name, c.cond, operands, fwd, got, w)
					}
				}
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestQueryNumbersInOrder(t *testing.T) {
	e := openEnv(t).e
	s := tenantScope(t, tenancy.NewTenantID(), "Query")
	createShared(t, e, "Nums", "pk:S", "n:N", nil)
	nums := []string{"-1e38", "-123456789012345678901234567890.12345678", "-100", "-1.5", "-1", "-0.001", "0", "1E-130", "0.5", "1", "1.000000000000000000000000000000000001", "2", "10", "99.5", "1e10", "9.9999999999999999999999999999999999999E+125"}
	perm := rand.New(rand.NewPCG(3, 4)).Perm(len(nums))
	for _, i := range perm {
		putItems(t, e, s, "Nums", attr.Item{"pk": sval("p"), "n": nval(nums[i])})
	}
	out, err := runQuery(t, e, s, &wire.QueryInput{TableName: "Nums", KeyConditionExpression: strPtr("pk = :p AND n BETWEEN :a AND :b"),
		ExpressionAttributeValues: exprVals(":p", sval("p"), ":a", nval("-100"), ":b", nval("10"))})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range nums[2:13] {
		want = append(want, attr.MustNumber(n).String())
	}
	if got := keysOf(out.Items, "n"); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestQueryPaging checks that paging with Limit, forwards and backwards,
// with and without a filter, returns exactly the unpaged result.
func TestQueryPaging(t *testing.T) {
	e, s := openOrders(t)
	var items []attr.Item
	for i := 0; i < 57; i++ {
		it := orderItem("p", fmt.Sprintf("%03d", i), "open", i%5, "", fmt.Sprintf("d%02d", i%9))
		items = append(items, it)
	}
	putItems(t, e, s, "Orders", items...)
	putItems(t, e, s, "Orders", orderItem("p0", "000", "", 0, "", ""), orderItem("o", "999", "", 0, "", ""))
	for _, tc := range []struct {
		name string
		in   wire.QueryInput
	}{
		{"table", wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p"))}},
		{"table filtered", wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), FilterExpression: strPtr("amount >= :x"), ExpressionAttributeValues: exprVals(":p", sval("p"), ":x", nval("3"))}},
		{"table range", wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p AND sk > :s"), ExpressionAttributeValues: exprVals(":p", sval("p"), ":s", sval("010"))}},
		{"gsi", wire.QueryInput{TableName: "Orders", IndexName: strPtr("byStatus"), KeyConditionExpression: strPtr("#s = :o"), ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: exprVals(":o", sval("open"))}},
		{"lsi", wire.QueryInput{TableName: "Orders", IndexName: strPtr("byDate"), KeyConditionExpression: strPtr("pk = :p AND #d >= :d"), ExpressionAttributeNames: map[string]string{"#d": "date"}, ExpressionAttributeValues: exprVals(":p", sval("p"), ":d", sval("d03"))}},
		{"lsi all attributes", wire.QueryInput{TableName: "Orders", IndexName: strPtr("byDate"), Select: "ALL_ATTRIBUTES", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p"))}},
	} {
		for _, fwd := range []bool{true, false} {
			full := tc.in
			full.ScanIndexForward = boolPtr(fwd)
			want, err := runQuery(t, e, s, &full)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if want.LastEvaluatedKey != nil || want.Count == 0 {
				t.Fatalf("%s: unpaged query: Count %d LEK %v", tc.name, want.Count, want.LastEvaluatedKey)
			}
			for _, limit := range []int32{1, 2, 7, 19, 57, 100} {
				in := full
				in.Limit = i32Ptr(limit)
				got, pages := queryAll(t, e, s, in)
				if !reflect.DeepEqual(got, want.Items) {
					t.Fatalf("%s forward=%v limit %d: paged %v, want %v", tc.name, fwd, limit, keysOf(got, "sk"), keysOf(want.Items, "sk"))
				}
				// A page ends at Limit evaluated items (filtered or not), and
				// a page that stops at Limit returns a LastEvaluatedKey
				// without looking ahead, as in DynamoDB.
				if wantPages := want.ScannedCount/int(limit) + 1; pages != wantPages {
					t.Fatalf("%s forward=%v limit %d: %d pages, want %d", tc.name, fwd, limit, pages, wantPages)
				}
			}
		}
	}
}

func TestQueryLimitCountsBeforeFilter(t *testing.T) {
	e, s := openOrders(t)
	for i := 0; i < 10; i++ {
		putItems(t, e, s, "Orders", orderItem("p", fmt.Sprint(i), "open", i, "", ""))
	}
	out, err := runQuery(t, e, s, &wire.QueryInput{TableName: "Orders", Limit: i32Ptr(4), KeyConditionExpression: strPtr("pk = :p"),
		FilterExpression: strPtr("amount >= :x"), ExpressionAttributeValues: exprVals(":p", sval("p"), ":x", nval("2"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.ScannedCount != 4 || out.Count != 2 || len(out.Items) != 2 {
		t.Fatalf("ScannedCount %d Count %d items %d, want 4 2 2", out.ScannedCount, out.Count, len(out.Items))
	}
	if want := (attr.Item{"pk": sval("p"), "sk": sval("3")}); !attr.EqualItems(out.LastEvaluatedKey, want) {
		t.Fatalf("LEK %v, want %v (the last evaluated item, filtered or not)", out.LastEvaluatedKey, want)
	}
	// COUNT.
	out, err = runQuery(t, e, s, &wire.QueryInput{TableName: "Orders", Select: "COUNT", KeyConditionExpression: strPtr("pk = :p"),
		FilterExpression: strPtr("amount >= :x"), ExpressionAttributeValues: exprVals(":p", sval("p"), ":x", nval("2"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.Items != nil || out.Count != 8 || out.ScannedCount != 10 {
		t.Fatalf("COUNT: items %v Count %d ScannedCount %d, want nil 8 10", out.Items, out.Count, out.ScannedCount)
	}
}

// TestQueryPageSize checks the 1 MB rule: a page stops once it has read
// 1 MB and returns a LastEvaluatedKey.
func TestQueryPageSize(t *testing.T) {
	e, s := openOrders(t)
	big := strings.Repeat("x", 100_000)
	for i := 0; i < 30; i++ {
		it := orderItem("p", fmt.Sprintf("%02d", i), "", 0, "", "")
		it["blob"] = sval(big)
		putItems(t, e, s, "Orders", it)
	}
	in := wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p")), ReturnConsumedCapacity: "TOTAL"}
	out, err := runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	size := attr.ItemSize(out.Items[0])
	wantN := (maxPageBytes + size - 1) / size // the item that reaches 1 MB is included
	if out.Count != wantN || out.LastEvaluatedKey == nil {
		t.Fatalf("first page: %d items, LEK %v; want %d items and a LEK", out.Count, out.LastEvaluatedKey, wantN)
	}
	if want := readUnits(wantN*size, false); out.U.ReadUnits != want || out.ConsumedCapacity.CapacityUnits != want {
		t.Fatalf("units %v (consumed %v), want %v", out.U.ReadUnits, out.ConsumedCapacity.CapacityUnits, want)
	}
	all, pages := queryAll(t, e, s, in)
	if len(all) != 30 || pages != 3 {
		t.Fatalf("paged: %d items in %d pages, want 30 in 3", len(all), pages)
	}
	// COUNT obeys the same rule (DynamoDB counts 1 MB pages).
	in.Select = "COUNT"
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != wantN || out.LastEvaluatedKey == nil {
		t.Fatalf("COUNT page: %d, LEK %v", out.Count, out.LastEvaluatedKey)
	}
}

func TestQueryGSI(t *testing.T) {
	e, s := openOrders(t)
	putItems(t, e, s, "Orders",
		orderItem("a", "1", "open", 30, "c1", ""), orderItem("a", "2", "open", 10, "c1", ""), orderItem("b", "1", "open", 20, "c2", ""),
		orderItem("c", "1", "closed", 5, "c1", ""), orderItem("d", "1", "", 0, "c2", ""), // d is not in byStatus (sparse)
		orderItem("e", "1", "open", 20, "", ""), orderItem("e", "0", "open", 20, "", ""))
	in := wire.QueryInput{TableName: "Orders", IndexName: strPtr("byStatus"), KeyConditionExpression: strPtr("#s = :o AND amount >= :x"),
		ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: exprVals(":o", sval("open"), ":x", nval("15"))}
	out, err := runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by the index sort key, then by the table key.
	if got, want := keysOf(out.Items, "amount", "pk", "sk"), []string{"20/b/1", "20/e/0", "20/e/1", "30/a/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	for _, it := range out.Items {
		if got := sortedCopy(attr.SortedNames(it)); !reflect.DeepEqual(got, []string{"amount", "pk", "sk", "status"}) {
			t.Fatalf("KEYS_ONLY item has %v", got)
		}
	}
	// LastEvaluatedKey has the table's and the index's key attributes.
	in.Limit = i32Ptr(2)
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if want := (attr.Item{"pk": sval("e"), "sk": sval("0"), "status": sval("open"), "amount": nval("20")}); !attr.EqualItems(out.LastEvaluatedKey, want) {
		t.Fatalf("LEK %v, want %v", out.LastEvaluatedKey, want)
	}
	// ALL GSI without a sort key.
	out, err = runQuery(t, e, s, &wire.QueryInput{TableName: "Orders", IndexName: strPtr("byCust"), KeyConditionExpression: strPtr("cust = :c"), ExpressionAttributeValues: exprVals(":c", sval("c1"))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(out.Items, "pk", "sk", "secret"), []string{"a/1/secret 1", "a/2/secret 2", "c/1/secret 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("byCust items %v, want %v", got, want)
	}
}

func TestQueryLSI(t *testing.T) {
	e, s := openOrders(t)
	putItems(t, e, s, "Orders",
		orderItem("a", "1", "", 0, "", "2024-03"), orderItem("a", "2", "", 0, "", "2024-01"), orderItem("a", "3", "", 0, "", ""),
		orderItem("a", "4", "", 0, "", "2024-02"))
	base := wire.QueryInput{TableName: "Orders", IndexName: strPtr("byDate"), KeyConditionExpression: strPtr("pk = :p AND #d > :d"),
		ExpressionAttributeNames: map[string]string{"#d": "date"}, ExpressionAttributeValues: exprVals(":p", sval("a"), ":d", sval("2024-01")), ReturnConsumedCapacity: "INDEXES"}

	// Default Select on an index: ALL_PROJECTED_ATTRIBUTES, read from the index only.
	out, err := runQuery(t, e, s, &base)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(out.Items, "date", "sk"), []string{"2024-02/4", "2024-03/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	if got := sortedCopy(attr.SortedNames(out.Items[0])); !reflect.DeepEqual(got, []string{"date", "note", "pk", "sk"}) {
		t.Fatalf("projected LSI item has %v", got)
	}
	if cc := out.ConsumedCapacity; cc.Table.CapacityUnits != 0 || cc.LocalSecondaryIndexes["byDate"].CapacityUnits != 0.5 || cc.CapacityUnits != 0.5 {
		t.Fatalf("consumed %+v", cc)
	}

	// ALL_ATTRIBUTES on an INCLUDE LSI reads the base items.
	in := base
	in.Select = "ALL_ATTRIBUTES"
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(out.Items, "secret"), []string{"secret 4", "secret 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ALL_ATTRIBUTES items %v, want %v", got, want)
	}
	if cc := out.ConsumedCapacity; cc.Table.CapacityUnits != 1 || cc.CapacityUnits != 1.5 || out.U.ReadUnits != 1.5 {
		t.Fatalf("consumed %+v (units %v), want 1 table unit for two fetches", cc, out.U.ReadUnits)
	}

	// A projection or a filter naming unprojected attributes fetches them too.
	in = base
	in.ProjectionExpression = strPtr("secret, #d")
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if !attr.EqualItems(out.Items[0], attr.Item{"secret": sval("secret 4"), "date": sval("2024-02")}) {
		t.Fatalf("projected item %v", out.Items[0])
	}
	in = base
	in.FilterExpression = strPtr("secret = :x")
	in.ExpressionAttributeValues = exprVals(":p", sval("a"), ":d", sval("2024-01"), ":x", sval("secret 1"))
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 1 || out.ScannedCount != 2 || !attr.EqualItems(out.Items[0], attr.Item{"pk": sval("a"), "sk": sval("1"), "date": sval("2024-03"), "note": sval("note 1")}) {
		t.Fatalf("filtered: Count %d ScannedCount %d items %v", out.Count, out.ScannedCount, out.Items)
	}
	// Consistent reads are allowed on an LSI and cost twice as much.
	in = base
	in.ConsistentRead = boolPtr(true)
	out, err = runQuery(t, e, s, &in)
	if err != nil {
		t.Fatal(err)
	}
	if out.U.ReadUnits != 1 {
		t.Fatalf("consistent LSI read: %v units, want 1", out.U.ReadUnits)
	}
}

func TestQueryCapacity(t *testing.T) {
	e, s := openOrders(t)
	for i := 0; i < 3; i++ {
		it := orderItem("p", fmt.Sprint(i), "open", i, "", "")
		it["blob"] = sval(strings.Repeat("y", 3000))
		putItems(t, e, s, "Orders", it)
	}
	q := func(in wire.QueryInput) *wire.QueryOutput {
		t.Helper()
		out, err := runQuery(t, e, s, &in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	kc := wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p"))}
	// Three items of ~3 KB: ceil(9 KB / 4 KB) = 3 units, half when eventually consistent.
	out := q(kc)
	if out.U.ReadUnits != 1.5 || out.U.Table != "Orders" || out.ConsumedCapacity != nil {
		t.Fatalf("usage %+v, consumed %+v; want 1.5 units and no ConsumedCapacity", out.U, out.ConsumedCapacity)
	}
	in := kc
	in.ConsistentRead, in.ReturnConsumedCapacity = boolPtr(true), "TOTAL"
	out = q(in)
	if want := (wire.ConsumedCapacity{TableName: "Orders", CapacityUnits: 3}); !reflect.DeepEqual(*out.ConsumedCapacity, want) {
		t.Fatalf("consumed %+v, want %+v", *out.ConsumedCapacity, want)
	}
	in.ReturnConsumedCapacity = "INDEXES"
	out = q(in)
	if want := (wire.ConsumedCapacity{TableName: "Orders", CapacityUnits: 3, Table: &wire.Capacity{CapacityUnits: 3}}); !reflect.DeepEqual(*out.ConsumedCapacity, want) {
		t.Fatalf("consumed %+v, want %+v", *out.ConsumedCapacity, want)
	}
	// A GSI read is charged to the index; an empty result still costs the minimum.
	out = q(wire.QueryInput{TableName: "Orders", IndexName: strPtr("byStatus"), KeyConditionExpression: strPtr("#s = :o"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: exprVals(":o", sval("none")), ReturnConsumedCapacity: "INDEXES"})
	want := wire.ConsumedCapacity{TableName: "Orders", CapacityUnits: 0.5, Table: &wire.Capacity{}, GlobalSecondaryIndexes: map[string]wire.Capacity{"byStatus": {CapacityUnits: 0.5}}}
	if !reflect.DeepEqual(*out.ConsumedCapacity, want) || out.U.ReadUnits != 0.5 {
		t.Fatalf("consumed %+v, want %+v", *out.ConsumedCapacity, want)
	}
}

func TestQueryValidation(t *testing.T) {
	e, s := openOrders(t)
	createShared(t, e, "NumSort", "pk:S", "n:N", nil)
	createShared(t, e, "HashOnly", "id:N", "", nil)
	kc := func(in wire.QueryInput) wire.QueryInput {
		if in.TableName == "" {
			in.TableName = "Orders"
		}
		if in.KeyConditionExpression == nil {
			in.KeyConditionExpression = strPtr("pk = :p")
			if in.ExpressionAttributeValues == nil {
				in.ExpressionAttributeValues = exprVals(":p", sval("a"))
			}
		}
		return in
	}
	open := exprVals(":o", sval("open"))
	byStatus := func(in wire.QueryInput) wire.QueryInput {
		in.IndexName, in.KeyConditionExpression, in.ExpressionAttributeNames = strPtr("byStatus"), strPtr("#s = :o"), map[string]string{"#s": "status"}
		if in.ExpressionAttributeValues == nil {
			in.ExpressionAttributeValues = open
		}
		return kc(in)
	}
	for _, tc := range []struct {
		name string
		in   wire.QueryInput
		kind apierr.Kind
		msg  string
	}{
		{"unknown table", kc(wire.QueryInput{TableName: "Nope"}), apierr.ResourceNotFound, "Requested resource not found"},
		{"unknown index", kc(wire.QueryInput{IndexName: strPtr("nope")}), apierr.Validation, "The table does not have the specified index: nope"},
		{"creating index", kc(wire.QueryInput{IndexName: strPtr("building"), KeyConditionExpression: strPtr("cust = :c"), ExpressionAttributeValues: exprVals(":c", sval("x"))}), apierr.Validation, "Cannot read from backfilling global secondary index: building"},
		{"limit 0", kc(wire.QueryInput{Limit: i32Ptr(0)}), apierr.Validation, "Value '0' at 'limit' failed to satisfy constraint"},
		{"hash type", kc(wire.QueryInput{ExpressionAttributeValues: exprVals(":p", nval("1"))}), apierr.Validation, "Condition parameter type does not match schema type"},
		{"range type", kc(wire.QueryInput{KeyConditionExpression: strPtr("pk = :p AND sk > :n"), ExpressionAttributeValues: exprVals(":p", sval("a"), ":n", nval("1"))}), apierr.Validation, "Condition parameter type does not match schema type"},
		{"empty hash", kc(wire.QueryInput{ExpressionAttributeValues: exprVals(":p", sval(""))}), apierr.Validation, "cannot contain an empty string value"},
		{"begins_with on N", kc(wire.QueryInput{TableName: "NumSort", KeyConditionExpression: strPtr("pk = :p AND begins_with(n, :n)"), ExpressionAttributeValues: exprVals(":p", sval("a"), ":n", nval("1"))}), apierr.Validation, "begins_with"},
		{"between reversed", kc(wire.QueryInput{KeyConditionExpression: strPtr("pk = :p AND sk BETWEEN :b AND :a"), ExpressionAttributeValues: exprVals(":p", sval("a"), ":a", sval("a"), ":b", sval("b"))}), apierr.Validation, "BETWEEN operator requires upper bound to be greater than or equal to lower bound"},
		{"between reversed N", kc(wire.QueryInput{TableName: "NumSort", KeyConditionExpression: strPtr("pk = :p AND n BETWEEN :b AND :a"), ExpressionAttributeValues: exprVals(":p", sval("a"), ":a", nval("-10"), ":b", nval("-9.5"))}), apierr.Validation, "lower bound operand: AttributeValue: {N:-9.5}, upper bound operand: AttributeValue: {N:-10}"},
		{"select enum", kc(wire.QueryInput{Select: "EVERYTHING"}), apierr.Validation, "Value 'EVERYTHING' at 'select' failed to satisfy constraint"},
		{"count with projection", kc(wire.QueryInput{Select: "COUNT", ProjectionExpression: strPtr("sk")}), apierr.Validation, "Cannot specify the ProjectionExpression when choosing to get only the Count"},
		{"all with projection", kc(wire.QueryInput{Select: "ALL_ATTRIBUTES", ProjectionExpression: strPtr("sk")}), apierr.Validation, "Cannot specify the ProjectionExpression when choosing to get ALL_ATTRIBUTES"},
		{"projected on table", kc(wire.QueryInput{Select: "ALL_PROJECTED_ATTRIBUTES"}), apierr.Validation, "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"},
		{"specific without projection", kc(wire.QueryInput{Select: "SPECIFIC_ATTRIBUTES"}), apierr.Validation, "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"},
		{"all on keys-only gsi", byStatus(wire.QueryInput{Select: "ALL_ATTRIBUTES"}), apierr.Validation, "Select type ALL_ATTRIBUTES is not supported for global secondary index byStatus because its projection type is not ALL"},
		{"gsi unprojected attribute", byStatus(wire.QueryInput{ProjectionExpression: strPtr("secret")}), apierr.Validation, "Global secondary index byStatus does not project [secret]"},
		{"consistent gsi", byStatus(wire.QueryInput{ConsistentRead: boolPtr(true)}), apierr.Validation, "Consistent reads are not supported on global secondary indexes"},
		{"capacity enum", kc(wire.QueryInput{ReturnConsumedCapacity: "SOME"}), apierr.Validation, "at 'returnConsumedCapacity'"},
		{"no key condition", wire.QueryInput{TableName: "Orders"}, apierr.Validation, "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."},
		{"mixed parameters", kc(wire.QueryInput{AttributesToGet: []string{"sk"}}), apierr.Validation, "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {KeyConditionExpression}"},
		{"esk missing attribute", kc(wire.QueryInput{ExclusiveStartKey: attr.Item{"pk": sval("a")}}), apierr.Validation, "The provided starting key is invalid: The provided key element does not match the schema"},
		{"esk extra attribute", kc(wire.QueryInput{ExclusiveStartKey: attr.Item{"pk": sval("a"), "sk": sval("1"), "x": sval("1")}}), apierr.Validation, "The provided starting key is invalid"},
		{"esk wrong type", kc(wire.QueryInput{ExclusiveStartKey: attr.Item{"pk": sval("a"), "sk": nval("1")}}), apierr.Validation, "The provided starting key is invalid"},
		{"esk empty", kc(wire.QueryInput{ExclusiveStartKey: attr.Item{"pk": sval("a"), "sk": sval("")}}), apierr.Validation, "The provided starting key is invalid: One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value"},
		{"esk other partition", kc(wire.QueryInput{ExclusiveStartKey: attr.Item{"pk": sval("b"), "sk": sval("1")}}), apierr.Validation, "The provided starting key is outside query boundaries based on provided conditions"},
		{"esk outside range", kc(wire.QueryInput{KeyConditionExpression: strPtr("pk = :p AND sk > :s"), ExpressionAttributeValues: exprVals(":p", sval("a"), ":s", sval("5")), ExclusiveStartKey: attr.Item{"pk": sval("a"), "sk": sval("1")}}), apierr.Validation, "The provided starting key does not match the range key predicate"},
		{"esk gsi without index keys", byStatus(wire.QueryInput{ExclusiveStartKey: attr.Item{"pk": sval("a"), "sk": sval("1")}}), apierr.Validation, "The provided starting key is invalid"},
		{"esk hash-only table", kc(wire.QueryInput{TableName: "HashOnly", KeyConditionExpression: strPtr("id = :i"), ExpressionAttributeValues: exprVals(":i", nval("1")), ExclusiveStartKey: attr.Item{"id": nval("1"), "sk": sval("1")}}), apierr.Validation, "The provided starting key is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runQuery(t, e, s, &tc.in)
			wantErr(t, err, tc.kind, tc.msg)
		})
	}
}

func TestQueryScopeRequired(t *testing.T) {
	e, _ := openOrders(t)
	in := wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("a"))}
	_, err := runQuery(t, e, tenancy.Scope{}, &in)
	wantErr(t, err, apierr.AccessDenied, "")
	op := admit(t, operatorPrincipal(), "DescribeTable")
	_, err = runQuery(t, e, op, &in)
	wantErr(t, err, apierr.AccessDenied, "operator")
}

// TestQueryFilterNameRules: a Query's filter may not name the key
// attributes of the table or index queried, and a legacy filter on a GSI
// may only name projected attributes. Both need the filter's attribute
// names, which package expr's filters list (TopNames); a filter expression
// on a GSI sees unprojected attributes as absent instead (issue 18), so
// the projection rule is tested on the planned read with a condition that
// is marked as one whose names are known, as the legacy filters are.
func TestQueryFilterNameRules(t *testing.T) {
	e, s := openOrders(t)
	known := filterNamesKnown(t)
	for _, tc := range []struct {
		name, index, filterAttr, msg string
	}{
		{"filter on key", "", "sk", "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk"},
		{"filter on index key", "byStatus", "amount", "Filter Expression can only contain non-primary key attributes: Primary key attribute: amount"},
		{"gsi unprojected filter", "byStatus", "note", "One or more parameter values were invalid: Secondary index byStatus does not project one or more filter attributes: [note]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), FilterExpression: strPtr("#f = :v"),
				ExpressionAttributeNames: map[string]string{"#f": tc.filterAttr}, ExpressionAttributeValues: exprVals(":p", sval("a"), ":v", nval("1"))}
			if tc.index != "" {
				in.IndexName, in.KeyConditionExpression = strPtr(tc.index), strPtr("#s = :p")
				in.ExpressionAttributeNames["#s"] = "status"
			}
			if known && tc.name != "gsi unprojected filter" {
				_, err := runQuery(t, e, s, &in)
				wantErr(t, err, apierr.Validation, tc.msg)
				return
			}
			h, err := e.open(context.Background(), s, "Orders")
			if err != nil {
				t.Fatal(err)
			}
			ix, err := readIndex(h.Table, in.IndexName)
			if err != nil {
				t.Fatal(err)
			}
			ex, err := queryExprs(h.Table, ix, &in)
			if err != nil {
				t.Fatal(err)
			}
			c := &testCond{name: tc.filterAttr, op: "=", v: nval("1")}
			ex.Filter, ex.FilterNames, ex.FilterNamesOK = c, c.TopNames(), true
			_, err = h.planQuery(&in, ix, ex)
			wantErr(t, err, apierr.Validation, tc.msg)
		})
	}
}

func TestQueryLegacyParameters(t *testing.T) {
	e, s := openOrders(t)
	for i := 0; i < 6; i++ {
		putItems(t, e, s, "Orders", orderItem("a", fmt.Sprint(i), "open", i, "", ""))
	}
	cond := func(op string, vals ...attr.Value) wire.Condition {
		return wire.Condition{ComparisonOperator: op, AttributeValueList: vals}
	}
	out, err := runQuery(t, e, s, &wire.QueryInput{TableName: "Orders",
		KeyConditions:   map[string]wire.Condition{"pk": cond("EQ", sval("a")), "sk": cond("BETWEEN", sval("1"), sval("4"))},
		QueryFilter:     map[string]wire.Condition{"amount": cond("GE", nval("2"))},
		AttributesToGet: []string{"sk", "amount"}, ScanIndexForward: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(out.Items, "sk", "amount"), []string{"4/4", "3/3", "2/2"}; !reflect.DeepEqual(got, want) || out.ScannedCount != 4 || len(out.Items[0]) != 2 {
		t.Fatalf("items %v (scanned %d), want %v", got, out.ScannedCount, want)
	}
	_, err = runQuery(t, e, s, &wire.QueryInput{TableName: "Orders",
		KeyConditions: map[string]wire.Condition{"pk": cond("EQ", sval("a"))},
		QueryFilter:   map[string]wire.Condition{"sk": cond("GE", sval("2"))}})
	wantErr(t, err, apierr.Validation, "QueryFilter can only contain non-primary key attributes: Primary key attribute: sk")
	// KeyConditions combines with FilterExpression and ProjectionExpression
	// (issue 18), not with KeyConditionExpression.
	out, err = runQuery(t, e, s, &wire.QueryInput{TableName: "Orders",
		KeyConditions:    map[string]wire.Condition{"pk": cond("EQ", sval("a"))},
		FilterExpression: strPtr("amount > :x"), ExpressionAttributeValues: exprVals(":x", nval("3")), ProjectionExpression: strPtr("sk")})
	if err != nil || out.Count != 2 || out.ScannedCount != 6 || len(out.Items[0]) != 1 {
		t.Fatalf("KeyConditions with FilterExpression: %v %+v", err, out)
	}
	_, err = runQuery(t, e, s, &wire.QueryInput{TableName: "Orders",
		KeyConditions:          map[string]wire.Condition{"pk": cond("EQ", sval("a"))},
		KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("a"))})
	wantErr(t, err, apierr.Validation, "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {KeyConditions} Expression parameters: {KeyConditionExpression}")
	_, err = runQuery(t, e, s, &wire.QueryInput{TableName: "Orders", Select: "COUNT", AttributesToGet: []string{"sk"},
		KeyConditions: map[string]wire.Condition{"pk": cond("EQ", sval("a"))}})
	wantErr(t, err, apierr.Validation, "Cannot specify the AttributesToGet when choosing to get only the Count")
	_, err = runQuery(t, e, s, &wire.QueryInput{TableName: "Orders",
		KeyConditions: map[string]wire.Condition{"pk": cond("EQ", nval("1"))}})
	wantErr(t, err, apierr.Validation, "Condition parameter type does not match schema type")

	sc, err := runScan(t, e, s, &wire.ScanInput{TableName: "Orders", ScanFilter: map[string]wire.Condition{"amount": cond("LT", nval("2")), "sk": cond("NE", sval("0"))},
		ConditionalOperator: "AND", AttributesToGet: []string{"sk"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(sc.Items, "sk"); !reflect.DeepEqual(got, []string{"1"}) || sc.ScannedCount != 6 {
		t.Fatalf("scan items %v (scanned %d), want [1]", got, sc.ScannedCount)
	}
}
