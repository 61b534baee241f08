package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// BenchmarkQuery20 queries a 20-item collection of ~1 KB items (the load
// generator's query workload) among 1000 collections.
func BenchmarkQuery20(b *testing.B) {
	e, s := openOrders(b)
	pad := strings.Repeat("v", 950)
	for c := 0; c < 1000; c++ {
		var items []attr.Item
		for i := 0; i < 20; i++ {
			items = append(items, attr.Item{"pk": sval(fmt.Sprintf("coll%04d", c)), "sk": sval(fmt.Sprintf("item%02d", i)), "data": sval(pad), "n": nval(fmt.Sprint(i))})
		}
		putItems(b, e, s, "Orders", items...)
	}
	// The baseline: iterate the same partition straight from storage and
	// decode its items, the least any Query of it must do. Report the
	// Query numbers as ratios to it (the machine is shared and noisy).
	h, err := e.open(context.Background(), s, "Orders")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("baseline-iterate+decode", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p := keyspace.AppendPartition(keyspace.Items(h.Namespace, h.Table.ID), attr.AppendKey(nil, sval(fmt.Sprintf("coll%04d", i%1000))))
			it := h.db.NewIter(p, keyspace.PrefixEnd(p))
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				if _, err := h.vals.decode(it.Key(), it.Value()); err != nil {
					b.Fatal(err)
				}
				n++
			}
			it.Close()
			if n != 20 {
				b.Fatalf("%d items", n)
			}
			i++
		}
	})
	for _, bc := range []struct {
		name string
		mod  func(*wire.QueryInput)
	}{
		{"all", func(*wire.QueryInput) {}},
		{"backward", func(in *wire.QueryInput) { in.ScanIndexForward = boolPtr(false) }},
		{"count", func(in *wire.QueryInput) { in.Select = "COUNT" }},
		{"range+filter", func(in *wire.QueryInput) {
			in.KeyConditionExpression = strPtr("pk = :p AND sk > :s")
			in.FilterExpression = strPtr("n >= :n")
			in.ExpressionAttributeValues[":s"] = sval("item05")
			in.ExpressionAttributeValues[":n"] = nval("10")
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				in := wire.QueryInput{TableName: "Orders", KeyConditionExpression: strPtr("pk = :p"),
					ExpressionAttributeValues: exprVals(":p", sval(fmt.Sprintf("coll%04d", i%1000)))}
				bc.mod(&in)
				out, err := runQuery(b, e, s, &in)
				if err != nil {
					b.Fatal(err)
				}
				if out.ScannedCount == 0 {
					b.Fatal("empty collection")
				}
				i++
			}
		})
	}
}
