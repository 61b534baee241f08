package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// twoTenants fills the Orders table for tenants a and b: the same keys
// with different contents, plus keys only one of them has.
func twoTenants(t *testing.T) (e *Engine, a, b tenancy.Scope) {
	t.Helper()
	e, a = openOrders(t)
	b = tenantScope(t, tenancy.NewTenantID(), "Query")
	for i := 0; i < 30; i++ {
		ia := orderItem(fmt.Sprintf("p%d", i%4), fmt.Sprint(i), "open", i, "shared", "")
		ia["owner"] = sval("A")
		ib := orderItem(fmt.Sprintf("p%d", i%4), fmt.Sprint(i), "open", i, "shared", "")
		ib["owner"] = sval("B")
		putItems(t, e, a, "Orders", ia)
		putItems(t, e, b, "Orders", ib)
	}
	for i := 0; i < 7; i++ {
		it := orderItem("onlyA", fmt.Sprint(i), "open", 1000+i, "onlyA", "")
		it["owner"] = sval("A")
		putItems(t, e, a, "Orders", it)
	}
	return e, a, b
}

func ownerCounts(items []attr.Item) map[string]int {
	m := map[string]int{}
	for _, it := range items {
		m[it["owner"].S]++
	}
	return m
}

// TestTwoTenantsOneTable: each tenant sees only its items in a shared
// table, through Query, GSI queries, Scan, parallel Scan and COUNT.
func TestTwoTenantsOneTable(t *testing.T) {
	e, a, b := twoTenants(t)
	for _, tc := range []struct {
		name   string
		s      tenancy.Scope
		owner  string
		counts [4]int // query p1, gsi "open", scan, count onlyA partition
	}{
		{"A", a, "A", [4]int{8, 37, 37, 7}},
		{"B", b, "B", [4]int{8, 30, 30, 0}},
	} {
		q, err := runQuery(t, e, tc.s, &wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p1"))})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := queryAll(t, e, tc.s, wire.QueryInput{TableName: "Orders", IndexName: strPtr("byCust"), Limit: i32Ptr(5), KeyConditionExpression: strPtr("cust = :c"), ExpressionAttributeValues: exprVals(":c", sval("shared"))})
		k, _ := queryAll(t, e, tc.s, wire.QueryInput{TableName: "Orders", IndexName: strPtr("byStatus"), Limit: i32Ptr(6), KeyConditionExpression: strPtr("#s = :o"), ExpressionAttributeNames: map[string]string{"#s": "status"}, ExpressionAttributeValues: exprVals(":o", sval("open"))})
		sc, _ := scanAll(t, e, tc.s, wire.ScanInput{TableName: "Orders", Limit: i32Ptr(4)})
		var par []attr.Item
		for seg := int32(0); seg < 3; seg++ {
			got, _ := scanAll(t, e, tc.s, wire.ScanInput{TableName: "Orders", Segment: i32Ptr(seg), TotalSegments: i32Ptr(3)})
			par = append(par, got...)
		}
		cnt, err := runQuery(t, e, tc.s, &wire.QueryInput{TableName: "Orders", Select: "COUNT", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("onlyA"))})
		if err != nil {
			t.Fatal(err)
		}
		scount, err := runScan(t, e, tc.s, &wire.ScanInput{TableName: "Orders", Select: "COUNT"})
		if err != nil {
			t.Fatal(err)
		}
		for what, items := range map[string][]attr.Item{"query": q.Items, "gsi": g, "scan": sc, "parallel scan": par} {
			for owner := range ownerCounts(items) {
				if owner != tc.owner {
					t.Fatalf("tenant %s: %s returned an item of %q", tc.name, what, owner)
				}
			}
		}
		if got := [4]int{len(q.Items), len(k), len(sc), cnt.Count}; got != tc.counts {
			t.Fatalf("tenant %s: counts %v, want %v", tc.name, got, tc.counts)
		}
		if len(g) != 30 || len(par) != tc.counts[2] || scount.Count != tc.counts[2] || scount.ScannedCount != tc.counts[2] {
			t.Fatalf("tenant %s: gsi %d, parallel scan %d, scan COUNT %d/%d", tc.name, len(g), len(par), scount.Count, scount.ScannedCount)
		}
		// KEYS_ONLY entries carry no owner: check them by key instead.
		for _, it := range k {
			if tc.owner == "B" && it["pk"].S == "onlyA" {
				t.Fatalf("tenant B sees A's index entry %v", it)
			}
		}
	}
}

// TestForgedStartKeys feeds a tenant ExclusiveStartKeys it did not get
// from its own pages — another tenant's page tokens, keys of another table,
// extreme and garbage values — and checks that no other tenant's item ever
// comes back: a start key only positions the read inside the caller's own
// range.
func TestForgedStartKeys(t *testing.T) {
	e, a, b := twoTenants(t)
	createShared(t, e, "Other", "pk:S", "sk:S", nil)
	putItems(t, e, a, "Other", attr.Item{"pk": sval("p1"), "sk": sval("0"), "owner": sval("A-other")})

	// Page tokens tenant A really received.
	var tokens []attr.Item
	for _, in := range []wire.ScanInput{{TableName: "Orders", Limit: i32Ptr(3)}, {TableName: "Orders", IndexName: strPtr("byCust"), Limit: i32Ptr(3)}, {TableName: "Orders", IndexName: strPtr("byStatus"), Limit: i32Ptr(2)}} {
		for i := 0; i < 5; i++ {
			out, err := runScan(t, e, a, &in)
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, out.LastEvaluatedKey)
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	huge := strings.Repeat("\xff", 1024)
	forged := append(tokens,
		attr.Item{"pk": sval("onlyA"), "sk": sval("0")},
		attr.Item{"pk": sval("onlyA"), "sk": sval("3"), "cust": sval("onlyA")},
		attr.Item{"pk": sval("\x00"), "sk": sval("\x00")},
		attr.Item{"pk": sval(huge), "sk": sval(huge)},
		attr.Item{"pk": sval("\xff\xff\xff\xff"), "sk": sval("\xff")},
		attr.Item{"pk": sval("p1"), "sk": sval("0"), "status": sval("open"), "amount": nval("-9.9999999999999999999999999999999999999E+125")},
		attr.Item{"pk": sval("p1"), "sk": sval("0"), "status": sval("open"), "amount": nval("9.9999999999999999999999999999999999999E+125")},
		attr.Item{"pk": sval("onlyA"), "sk": sval("0"), "status": sval("\xff\xff"), "amount": nval("0")},
		attr.Item{"pk": nval("1"), "sk": sval("1")},
		attr.Item{"pk": bval("\xff\xff\xff"), "sk": sval("1")},
		attr.Item{"pk": sval("p1"), "sk": sval("1"), "owner": sval("A")},
		attr.Item{"pk": attr.Map(attr.Item{"x": sval("y")}), "sk": sval("1")},
		attr.Item{},
	)
	served, rejected := 0, 0
	check := func(what string, items []attr.Item, err error) {
		t.Helper()
		if err != nil {
			rejected++
			if k := apierr.KindOf(err); k != apierr.Validation {
				t.Fatalf("%s: unexpected error %v", what, err)
			}
			if strings.Contains(err.Error(), "onlyA") || strings.Contains(err.Error(), "owner") {
				t.Fatalf("%s: error %v names data", what, err)
			}
			return
		}
		served += len(items)
		for _, it := range items {
			if it["owner"].S != "B" || it["pk"].S == "onlyA" {
				t.Fatalf("%s: tenant B got %v", what, it)
			}
		}
	}
	for i, esk := range forged {
		for _, in := range []wire.ScanInput{
			{TableName: "Orders"},
			{TableName: "Orders", Select: "ALL_ATTRIBUTES", IndexName: strPtr("byCust")},
			{TableName: "Orders", IndexName: strPtr("byStatus")},
			{TableName: "Orders", Segment: i32Ptr(1), TotalSegments: i32Ptr(2)},
			{TableName: "Other"},
		} {
			in.ExclusiveStartKey = esk
			out, err := runScan(t, e, b, &in)
			var items []attr.Item
			if out != nil {
				items = out.Items
				if in.IndexName != nil && *in.IndexName == "byStatus" {
					// KEYS_ONLY: no owner attribute; B has no onlyA keys.
					for _, it := range items {
						if it["pk"].S == "onlyA" {
							t.Fatalf("forged key %d: B's index scan returned %v", i, it)
						}
					}
					continue
				}
				if in.TableName == "Other" && len(items) > 0 {
					t.Fatalf("forged key %d: B's scan of Other returned A's %v", i, items)
				}
			}
			check(fmt.Sprintf("scan %d of %s", i, in.TableName), items, err)
		}
		for _, pk := range []string{"p1", "onlyA"} {
			for _, fwd := range []bool{true, false} {
				in := wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval(pk)), ExclusiveStartKey: esk, ScanIndexForward: boolPtr(fwd)}
				out, err := runQuery(t, e, b, &in)
				var items []attr.Item
				if out != nil {
					items = out.Items
				}
				check(fmt.Sprintf("query %d", i), items, err)
				in = wire.QueryInput{TableName: "Orders", IndexName: strPtr("byCust"), KeyConditionExpression: strPtr("cust = :c"), ExpressionAttributeValues: exprVals(":c", sval(pk)), ExclusiveStartKey: esk, ScanIndexForward: boolPtr(fwd)}
				out, err = runQuery(t, e, b, &in)
				items = nil
				if out != nil {
					items = out.Items
				}
				check(fmt.Sprintf("gsi query %d", i), items, err)
			}
		}
	}

	if served < 100 || rejected < 10 {
		t.Fatalf("forged keys served %d items and were rejected %d times: the test lost its teeth", served, rejected)
	}
	t.Logf("forged keys: %d items served (all B's), %d requests rejected", served, rejected)

	// A's own token used by B resumes B's scan at the same position in B's
	// range: B gets exactly its own items after that key.
	h, err := e.open(context.Background(), b, "Orders")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := scanAll(t, e, b, wire.ScanInput{TableName: "Orders"})
	pos, err := h.startKey(nil, tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(pos), string(h.Namespace)) {
		t.Fatalf("seek position %x is outside B's namespace %x", pos, h.Namespace)
	}
	rest, _ := scanAll(t, e, b, wire.ScanInput{TableName: "Orders", ExclusiveStartKey: tokens[0]})
	var want []attr.Item
	for i, it := range all {
		if attr.EqualItems(h.Table.KeyOf(it), tokens[0]) {
			want = all[i+1:]
		}
	}
	if !reflect.DeepEqual(rest, want) {
		t.Fatalf("B resumed at A's token: %d items, want %d", len(rest), len(want))
	}
}

// TestLeadingKeysQuery: on a leading-keys table a Query must name the
// caller's own partition, on the table and on a GSI, and page tokens are
// checked too.
func TestLeadingKeysQuery(t *testing.T) {
	e := openEnv(t).e
	createShared(t, e, "Tickets", "pk:S", "sk:S", []indexSpec{{name: "GSI1", hash: "gpk:S", proj: "ALL"}},
		wire.Tag{Key: tenancy.TagIsolation, Value: "leading-keys"}, wire.Tag{Key: tenancy.TagLeadingKeyPattern, Value: "TENANT#{tenant}|*"})
	ta, tb := tenancy.NewTenantID(), tenancy.NewTenantID()
	a, b := tenantScope(t, ta, "Query"), tenantScope(t, tb, "Query")
	pa := "TENANT#" + ta.String() + "|1"
	putItems(t, e, a, "Tickets", attr.Item{"pk": sval(pa), "sk": sval("1"), "gpk": sval("TENANT#" + ta.String() + "|open")})
	out, err := runQuery(t, e, a, &wire.QueryInput{TableName: "Tickets", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval(pa))})
	if err != nil || out.Count != 1 {
		t.Fatalf("own partition: %v, %v", out, err)
	}
	_, err = runQuery(t, e, b, &wire.QueryInput{TableName: "Tickets", KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval(pa))})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = runQuery(t, e, b, &wire.QueryInput{TableName: "Tickets", IndexName: strPtr("GSI1"), KeyConditionExpression: strPtr("gpk = :p"), ExpressionAttributeValues: exprVals(":p", sval("TENANT#"+ta.String()+"|open"))})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = runScan(t, e, b, &wire.ScanInput{TableName: "Tickets", ExclusiveStartKey: attr.Item{"pk": sval(pa), "sk": sval("1")}})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	sc, err := runScan(t, e, b, &wire.ScanInput{TableName: "Tickets"})
	if err != nil || sc.Count != 0 {
		t.Fatalf("B's scan: %v, %v", sc, err)
	}
}

// TestReadSpanGuard: a read whose span would leave the scope's namespace
// fails instead of reading.
func TestReadSpanGuard(t *testing.T) {
	e, a, b := twoTenants(t)
	hb, err := e.open(context.Background(), b, "Orders")
	if err != nil {
		t.Fatal(err)
	}
	ha, err := e.open(context.Background(), a, "Orders")
	if err != nil {
		t.Fatal(err)
	}
	for _, span := range []keySpan{
		{lo: keyspace.Items(ha.Namespace, ha.Table.ID), hi: keyspace.PrefixEnd(keyspace.Items(ha.Namespace, ha.Table.ID))}, // A's items
		{lo: hb.Namespace[:len(hb.Namespace)-1], hi: keyspace.PrefixEnd(hb.Namespace)},                                     // starts before B's namespace
		{lo: hb.Namespace, hi: keyspace.PrefixEnd(hb.Namespace[:len(hb.Namespace)-1])},                                     // ends after it
	} {
		r := &readSpec{h: hb, span: span, forward: true}
		if _, err := r.run(context.Background()); apierr.KindOf(err) != apierr.Internal {
			t.Fatalf("span %x..%x: got %v, want an internal error", span.lo, span.hi, err)
		}
	}
}

// TestSiloAndTenantTables: reads of a silo table go to the tenant's own
// store, and a tenant-owned table is read like a shared one.
func TestSiloAndTenantTables(t *testing.T) {
	e := openEnv(t).e
	createShared(t, e, "Silo", "pk:S", "sk:N", []indexSpec{{name: "byG", hash: "g:S", proj: "KEYS_ONLY"}}, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	a, b := tenantScope(t, tenancy.NewTenantID(), "Query"), tenantScope(t, tenancy.NewTenantID(), "Query")
	for i := 0; i < 12; i++ {
		putItems(t, e, a, "Silo", attr.Item{"pk": sval("p"), "sk": nval(fmt.Sprint(i)), "g": sval("x"), "owner": sval("A")})
	}
	putItems(t, e, b, "Silo", attr.Item{"pk": sval("p"), "sk": nval("100"), "g": sval("x"), "owner": sval("B")})
	for _, tc := range []struct {
		s    tenancy.Scope
		want int
	}{{a, 12}, {b, 1}} {
		q, _ := queryAll(t, e, tc.s, wire.QueryInput{TableName: "Silo", Limit: i32Ptr(5), KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p"))})
		g, _ := queryAll(t, e, tc.s, wire.QueryInput{TableName: "Silo", IndexName: strPtr("byG"), KeyConditionExpression: strPtr("g = :g"), ExpressionAttributeValues: exprVals(":g", sval("x"))})
		sc, _ := scanAll(t, e, tc.s, wire.ScanInput{TableName: "Silo", Limit: i32Ptr(5)})
		if len(q) != tc.want || len(g) != tc.want || len(sc) != tc.want {
			t.Fatalf("tenant %s: query %d, gsi %d, scan %d; want %d", tc.s.Tenant(), len(q), len(g), len(sc), tc.want)
		}
		h, err := e.open(context.Background(), tc.s, "Silo")
		if err != nil {
			t.Fatal(err)
		}
		if h.db == e.db {
			t.Fatalf("silo table read from the shared store")
		}
	}

	// A tenant's own table.
	adminP := appPrincipal(a.Tenant())
	adminP.Role = tenancy.RoleAdmin
	admin := admit(t, adminP, "CreateTable")
	if _, err := e.CreateTable(context.Background(), admin, &wire.CreateTableInput{TableName: "Mine", BillingMode: "PAY_PER_REQUEST",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "id", AttributeType: "B"}},
		KeySchema:            []wire.KeySchemaElement{{AttributeName: "id", KeyType: "HASH"}}}); err != nil {
		t.Fatal(err)
	}
	putItems(t, e, a, "Mine", attr.Item{"id": bval("\x00\x01")}, attr.Item{"id": bval("\xff")})
	out, err := runQuery(t, e, a, &wire.QueryInput{TableName: "Mine", KeyConditionExpression: strPtr("id = :i"), ExpressionAttributeValues: exprVals(":i", bval("\xff"))})
	if err != nil || out.Count != 1 {
		t.Fatalf("own table query: %v, %v", out, err)
	}
	_, err = runScan(t, e, b, &wire.ScanInput{TableName: "Mine"})
	wantErr(t, err, apierr.ResourceNotFound, "")
}
