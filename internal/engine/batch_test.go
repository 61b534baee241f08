package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestBatchWriteItem(t *testing.T) {
	env, a := itemTable(t)
	env.operator().create(tableInput("Other", false))
	e := env.e
	put := func(pk, sk string) wire.WriteRequest {
		return wire.WriteRequest{PutRequest: &wire.PutRequest{Item: itemOf(t, fmt.Sprintf(`{"pk":{"S":"%s"},"sk":{"S":"%s"},"v":{"S":"x"}}`, pk, sk))}}
	}
	var reqs []wire.WriteRequest
	for i := 0; i < 20; i++ {
		reqs = append(reqs, put("p", fmt.Sprint(i)))
	}
	out, err := e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{
		RequestItems: map[string][]wire.WriteRequest{
			"Items": reqs,
			"Other": {{PutRequest: &wire.PutRequest{Item: itemOf(t, `{"pk":{"S":"o"}}`)}}},
		},
		ReturnConsumedCapacity: "TOTAL",
	})
	noErr(t, err)
	if out.UnprocessedItems == nil || len(out.UnprocessedItems) != 0 {
		t.Fatalf("unprocessed = %v", out.UnprocessedItems)
	}
	if len(out.ConsumedCapacity) != 2 || out.ConsumedCapacity[0].TableName != "Items" || out.ConsumedCapacity[0].CapacityUnits != 20 || out.U.WriteUnits != 21 {
		t.Fatalf("consumed %+v usage %+v", out.ConsumedCapacity, out.U)
	}
	if n, _ := a.counters("Items", 0); n != 20 {
		t.Fatalf("count %d", n)
	}
	// Deletes and puts mixed.
	_, err = e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{
		"Items": {{DeleteRequest: &wire.DeleteRequest{Key: itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"0"}}`)}}, put("p", "new")},
	}})
	noErr(t, err)
	if got := a.get("Items", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"0"}}`)); got != nil {
		t.Fatalf("deleted item %s", showItem(got))
	}
	if n, _ := a.counters("Items", 0); n != 20 {
		t.Fatalf("count %d", n)
	}

	bad := []struct {
		name string
		in   map[string][]wire.WriteRequest
		kind apierr.Kind
		msg  string
	}{
		{"duplicates", map[string][]wire.WriteRequest{"Items": {put("d", "1"), {DeleteRequest: &wire.DeleteRequest{Key: itemOf(t, `{"pk":{"S":"d"},"sk":{"S":"1"}}`)}}}}, apierr.Validation, "Provided list of item keys contains duplicates"},
		{"too many", map[string][]wire.WriteRequest{"Items": reqs, "Other": {put("x", "1"), put("x", "2"), put("x", "3"), put("x", "4"), put("x", "5"), put("x", "6")}}, apierr.Validation, "Too many items"},
		{"26", map[string][]wire.WriteRequest{"Items": func() []wire.WriteRequest {
			var r []wire.WriteRequest
			for i := 0; i < 26; i++ {
				r = append(r, put("m", fmt.Sprint(i)))
			}
			return r
		}()}, apierr.Validation, "25"},
		{"bad item", map[string][]wire.WriteRequest{"Items": {put("ok", "1"), {PutRequest: &wire.PutRequest{Item: itemOf(t, `{"pk":{"S":"nosk"}}`)}}}}, apierr.Validation, "Missing the key sk"},
		{"both", map[string][]wire.WriteRequest{"Items": {{PutRequest: put("a", "1").PutRequest, DeleteRequest: &wire.DeleteRequest{Key: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`)}}}}, apierr.Validation, "exactly one"},
		{"no table", map[string][]wire.WriteRequest{"Nope": {put("a", "1")}}, apierr.ResourceNotFound, "Nope"},
		{"empty", map[string][]wire.WriteRequest{}, apierr.Validation, "requestItems"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: c.in})
			wantErr(t, err, c.kind, c.msg)
		})
	}
	// Nothing of a rejected batch was written.
	if got := a.get("Items", itemOf(t, `{"pk":{"S":"ok"},"sk":{"S":"1"}}`)); got != nil {
		t.Fatalf("rejected batch wrote %s", showItem(got))
	}
}

func TestBatchGetItem(t *testing.T) {
	env, a := itemTable(t)
	e := env.e
	for i := 0; i < 5; i++ {
		a.put("Items", itemOf(t, fmt.Sprintf(`{"pk":{"S":"p"},"sk":{"S":"%d"},"v":{"S":"x"},"w":{"N":"%d"}}`, i, i)))
	}
	key := func(sk string) attr.Item { return itemOf(t, fmt.Sprintf(`{"pk":{"S":"p"},"sk":{"S":"%s"}}`, sk)) }
	out, err := e.BatchGetItem(testCtx, a.scope("BatchGetItem"), &wire.BatchGetItemInput{
		RequestItems: map[string]wire.KeysAndAttributes{"Items": {
			Keys:                 []attr.Item{key("0"), key("3"), key("missing")},
			ProjectionExpression: strPtr("sk, #w"), ExpressionAttributeNames: map[string]string{"#w": "w"},
			ConsistentRead: boolPtr(true),
		}},
		ReturnConsumedCapacity: "TOTAL",
	})
	noErr(t, err)
	got := out.Responses["Items"]
	if len(got) != 2 || len(out.UnprocessedKeys) != 0 {
		t.Fatalf("responses %v unprocessed %v", got, out.UnprocessedKeys)
	}
	for _, it := range got {
		if len(it) != 2 || it["sk"].Type != attr.S || it["w"].Type != attr.N {
			t.Fatalf("projected item %s", showItem(it))
		}
	}
	if out.ConsumedCapacity[0].CapacityUnits != 3 || out.U.ReadUnits != 3 {
		t.Fatalf("consumed %+v", out.ConsumedCapacity)
	}

	_, err = e.BatchGetItem(testCtx, a.scope("BatchGetItem"), &wire.BatchGetItemInput{RequestItems: map[string]wire.KeysAndAttributes{"Items": {Keys: []attr.Item{key("0"), key("0")}}}})
	wantErr(t, err, apierr.Validation, "Provided list of item keys contains duplicates")
	var many []attr.Item
	for i := 0; i < 101; i++ {
		many = append(many, key(fmt.Sprint(i)))
	}
	_, err = e.BatchGetItem(testCtx, a.scope("BatchGetItem"), &wire.BatchGetItemInput{RequestItems: map[string]wire.KeysAndAttributes{"Items": {Keys: many}}})
	wantErr(t, err, apierr.Validation, "100")
	_, err = e.BatchGetItem(testCtx, a.scope("BatchGetItem"), &wire.BatchGetItemInput{RequestItems: map[string]wire.KeysAndAttributes{"Items": {Keys: []attr.Item{key("0")},
		ProjectionExpression: strPtr("sk"), AttributesToGet: []string{"sk"}}}})
	wantErr(t, err, apierr.Validation, "Can not use both expression and non-expression parameters")
}

func TestBatchGetItemUnprocessed(t *testing.T) {
	env := openEnv(t)
	env.operator().create(tableInput("Big", false))
	a := env.tenant(tenancy.RoleApp)
	blob := strings.Repeat("b", 390*1024)
	var keys []attr.Item
	for i := 0; i < 45; i++ { // 45 x 390 KB > 16 MB
		a.put("Big", attr.Item{"pk": attr.Str(fmt.Sprint("k", i)), "blob": attr.Str(blob)})
		keys = append(keys, attr.Item{"pk": attr.Str(fmt.Sprint("k", i))})
	}
	out, err := env.e.BatchGetItem(testCtx, a.scope("BatchGetItem"), &wire.BatchGetItemInput{RequestItems: map[string]wire.KeysAndAttributes{"Big": {Keys: keys}}})
	noErr(t, err)
	got, rest := len(out.Responses["Big"]), len(out.UnprocessedKeys["Big"].Keys)
	if got+rest != 45 || rest == 0 || got == 0 {
		t.Fatalf("got %d items and %d unprocessed keys", got, rest)
	}
	out2, err := env.e.BatchGetItem(testCtx, a.scope("BatchGetItem"), &wire.BatchGetItemInput{RequestItems: out.UnprocessedKeys})
	noErr(t, err)
	if len(out2.Responses["Big"]) != rest || len(out2.UnprocessedKeys) != 0 {
		t.Fatalf("second round: %d items, %v unprocessed", len(out2.Responses["Big"]), out2.UnprocessedKeys)
	}
}
