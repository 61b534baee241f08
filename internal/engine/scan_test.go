package engine

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestScanTableAndIndex(t *testing.T) {
	e, s := openOrders(t)
	var want []string
	for i := 0; i < 40; i++ {
		status := ""
		if i%4 == 0 {
			status = "open"
		}
		putItems(t, e, s, "Orders", orderItem(fmt.Sprintf("p%02d", i%13), fmt.Sprint(i), status, i, "", ""))
		want = append(want, fmt.Sprintf("p%02d/%d", i%13, i))
	}
	out, err := runScan(t, e, s, &wire.ScanInput{TableName: "Orders"})
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedCopy(keysOf(out.Items, "pk", "sk")); !reflect.DeepEqual(got, sortedCopy(want)) {
		t.Fatalf("scan %v, want %v", got, sortedCopy(want))
	}
	if out.Count != 40 || out.ScannedCount != 40 || out.LastEvaluatedKey != nil {
		t.Fatalf("Count %d ScannedCount %d LEK %v", out.Count, out.ScannedCount, out.LastEvaluatedKey)
	}
	// Items of one partition come together, in sort key order.
	pos := map[string]int{}
	for i, it := range out.Items {
		pk := it["pk"].S
		if last, ok := pos[pk]; ok && last != i-1 {
			t.Fatalf("partition %s is not contiguous in the scan", pk)
		}
		pos[pk] = i
	}

	// A sparse KEYS_ONLY index holds only the items with its key.
	out, err = runScan(t, e, s, &wire.ScanInput{TableName: "Orders", IndexName: strPtr("byStatus")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 10 {
		t.Fatalf("index scan: %d items, want 10", out.Count)
	}
	for _, it := range out.Items {
		if len(it) != 4 {
			t.Fatalf("index scan item %v: want 4 key attributes", it)
		}
	}
	// Filter, projection and COUNT.
	out, err = runScan(t, e, s, &wire.ScanInput{TableName: "Orders", FilterExpression: strPtr("amount < :x"), ProjectionExpression: strPtr("sk"),
		ExpressionAttributeValues: exprVals(":x", nval("10"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 3 || out.ScannedCount != 40 || len(out.Items[0]) != 1 {
		t.Fatalf("filtered: Count %d ScannedCount %d item %v", out.Count, out.ScannedCount, out.Items[0])
	}
	out, err = runScan(t, e, s, &wire.ScanInput{TableName: "Orders", Select: "COUNT", FilterExpression: strPtr("attribute_exists(#s)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 10 || out.Items != nil {
		t.Fatalf("COUNT: %d, items %v", out.Count, out.Items)
	}
	// A Scan may filter on key attributes.
	out, err = runScan(t, e, s, &wire.ScanInput{TableName: "Orders", FilterExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p01"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 3 {
		t.Fatalf("filter on pk: %d items, want 3", out.Count)
	}
}

// TestScanParallelCoverage checks that the segments of a parallel scan,
// each paged with a small Limit, together return every item exactly once,
// on the table and on an index.
func TestScanParallelCoverage(t *testing.T) {
	e, s := openOrders(t)
	want := map[string]bool{}
	var items []attr.Item
	for i := 0; i < 300; i++ {
		pk := fmt.Sprintf("p%d", i%170)
		items = append(items, orderItem(pk, fmt.Sprint(i), "", 0, fmt.Sprintf("c%d", i%23), ""))
		want[pk+"/"+fmt.Sprint(i)] = true
	}
	putItems(t, e, s, "Orders", items...)
	for _, index := range []string{"", "byCust"} {
		for _, total := range []int32{1, 2, 3, 7, 16, 1000} {
			seen := map[string]int{}
			for seg := int32(0); seg < total; seg++ {
				in := wire.ScanInput{TableName: "Orders", Segment: i32Ptr(seg), TotalSegments: i32Ptr(total), Limit: i32Ptr(9)}
				if index != "" {
					in.IndexName = strPtr(index)
				}
				got, _ := scanAll(t, e, s, in)
				for _, k := range keysOf(got, "pk", "sk") {
					seen[k]++
				}
			}
			if len(seen) != len(want) {
				t.Fatalf("index %q, %d segments: %d distinct items, want %d", index, total, len(seen), len(want))
			}
			for k, n := range seen {
				if !want[k] || n != 1 {
					t.Fatalf("index %q, %d segments: item %s returned %d times", index, total, k, n)
				}
			}
		}
	}
}

func TestScanPagingEqualsFull(t *testing.T) {
	e, s := openOrders(t)
	for i := 0; i < 50; i++ {
		putItems(t, e, s, "Orders", orderItem(fmt.Sprintf("p%d", i%7), fmt.Sprint(i), "open", i, "", ""))
	}
	full, err := runScan(t, e, s, &wire.ScanInput{TableName: "Orders", FilterExpression: strPtr("amount >= :x"), ExpressionAttributeValues: exprVals(":x", nval("20"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int32{1, 3, 10, 50} {
		got, pages := scanAll(t, e, s, wire.ScanInput{TableName: "Orders", Limit: i32Ptr(limit), FilterExpression: strPtr("amount >= :x"), ExpressionAttributeValues: exprVals(":x", nval("20"))})
		if !reflect.DeepEqual(got, full.Items) {
			t.Fatalf("limit %d: paged %v, want %v", limit, keysOf(got, "sk"), keysOf(full.Items, "sk"))
		}
		if want := 50/int(limit) + 1; pages != want {
			t.Fatalf("limit %d: %d pages, want %d", limit, pages, want)
		}
	}
}

func TestScanValidation(t *testing.T) {
	e, s := openOrders(t)
	putItems(t, e, s, "Orders", orderItem("a", "1", "", 0, "", ""))
	// Find a key that is not in segment 0 of 2.
	var other attr.Item
	for i := 0; other == nil; i++ {
		k := attr.Item{"pk": sval(fmt.Sprint(i)), "sk": sval("1")}
		h, _ := e.open(context.Background(), s, "Orders")
		if !startSegment(h.Table, nil, k, 0, 2) {
			other = k
		}
	}
	for _, tc := range []struct {
		name string
		in   wire.ScanInput
		msg  string
	}{
		{"segment without total", wire.ScanInput{Segment: i32Ptr(0)}, "The TotalSegments parameter is required but was not present in the request when parameter Segment is present"},
		{"total without segment", wire.ScanInput{TotalSegments: i32Ptr(2)}, "The Segment parameter is required but was not present in the request when parameter TotalSegments is present"},
		{"total 0", wire.ScanInput{Segment: i32Ptr(0), TotalSegments: i32Ptr(0)}, "Value '0' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1"},
		{"total too big", wire.ScanInput{Segment: i32Ptr(0), TotalSegments: i32Ptr(1000001)}, "Member must have value less than or equal to 1000000"},
		{"segment negative", wire.ScanInput{Segment: i32Ptr(-1), TotalSegments: i32Ptr(2)}, "Value '-1' at 'segment'"},
		{"segment too big", wire.ScanInput{Segment: i32Ptr(2), TotalSegments: i32Ptr(2)}, "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 2 is not less than TotalSegments: 2"},
		{"start key in another segment", wire.ScanInput{Segment: i32Ptr(0), TotalSegments: i32Ptr(2), ExclusiveStartKey: other}, "The provided Exclusive start key does not map to the provided Segment and TotalSegments values."},
		{"start key schema", wire.ScanInput{ExclusiveStartKey: attr.Item{"pk": sval("a")}}, "The provided starting key is invalid: The provided key element does not match the schema"},
		{"index start key", wire.ScanInput{IndexName: strPtr("byCust"), ExclusiveStartKey: attr.Item{"pk": sval("a"), "sk": sval("1")}}, "The provided starting key is invalid"},
		{"consistent gsi", wire.ScanInput{IndexName: strPtr("byCust"), ConsistentRead: boolPtr(true)}, "Consistent reads are not supported on global secondary indexes"},
		{"projected on table", wire.ScanInput{Select: "ALL_PROJECTED_ATTRIBUTES"}, "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"},
		{"creating index", wire.ScanInput{IndexName: strPtr("building")}, "Cannot read from backfilling global secondary index: building"},
		{"limit", wire.ScanInput{Limit: i32Ptr(-1)}, "at 'limit'"},
		{"names without expressions", wire.ScanInput{ExpressionAttributeNames: map[string]string{"#a": "a"}}, "ExpressionAttributeNames can only be specified when using expressions"},
		{"values without expressions", wire.ScanInput{ExpressionAttributeValues: exprVals(":a", sval("a"))}, "ExpressionAttributeValues can only be specified when using expressions: FilterExpression is null"},
		{"empty values", wire.ScanInput{FilterExpression: strPtr("a = b"), ExpressionAttributeValues: map[string]attr.Value{}}, "ExpressionAttributeValues must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.TableName = "Orders"
			_, err := runScan(t, e, s, &in)
			wantErr(t, err, apierr.Validation, tc.msg)
		})
	}
}
