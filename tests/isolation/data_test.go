package isolation

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// dataAttacks attacks B's items in a table where A and B keep items under
// colliding keys and the server alone keeps them apart (namespace, silo,
// and same-named tenant-owned tables). Nothing here is an AccessDenied:
// to A, B's items simply do not exist.
func (w *world) dataAttacks(t *testing.T, table string) {
	A, B := w.A, w.B
	ctx := w.ctx
	tn := aws.String(table)
	bKey := w.bOnlyKey(table)
	shared := w.sharedKey(table)
	never := map[string]types.AttributeValue{"pk": S("P9"), "sk": S("never")}
	aKeys := ownKeys(A, table)

	// noItem fails if A got an item for a key only B has.
	noItem := func(t *testing.T, what string, it map[string]types.AttributeValue) {
		t.Helper()
		if it != nil {
			t.Errorf("LEAK: %s returned %s", what, describeItem(it))
		}
	}
	// ownItem fails unless it is A's own item (or nil).
	ownItem := func(t *testing.T, what string, it map[string]types.AttributeValue) {
		t.Helper()
		if it != nil && (str(it["owner"]) != "A" || it["blob"] != nil) {
			t.Errorf("LEAK: %s returned %s, not A's item", what, describeItem(it))
		}
	}
	// cleanup removes an item A created at a key it did not have.
	cleanup := func(t *testing.T, key map[string]types.AttributeValue) {
		t.Helper()
		if _, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: key}); err != nil {
			t.Fatalf("cleanup: %v", err)
		}
	}

	w.attack(t, "GetItem/guessed-key", func(t *testing.T) {
		for _, cr := range []*bool{nil, aws.Bool(true), aws.Bool(false)} {
			for _, proj := range []string{"", "secret, #b, pk, #o"} {
				in := &dynamodb.GetItemInput{TableName: tn, Key: bKey, ConsistentRead: cr, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
				if proj != "" {
					in.ProjectionExpression = aws.String(proj)
					in.ExpressionAttributeNames = map[string]string{"#o": "owner", "#b": "blob"}
				}
				out, err := A.App.GetItem(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				noItem(t, "GetItem of B's key", out.Item)
			}
		}
		out, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: bKey, AttributesToGet: []string{"secret", "blob", "owner"}})
		if err != nil {
			t.Fatal(err)
		}
		noItem(t, "GetItem (AttributesToGet) of B's key", out.Item)
	})

	w.attack(t, "GetItem/colliding-key", func(t *testing.T) {
		out, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: shared, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item == nil {
			t.Fatalf("A's own item %s is missing", keyStr(shared))
		}
		ownItem(t, "GetItem of a key both tenants have", out.Item)
	})

	w.attack(t, "PutItem/attribute_exists-on-B-key", func(t *testing.T) {
		_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: tn, Item: map[string]types.AttributeValue{"pk": bKey["pk"], "sk": bKey["sk"], "owner": S("A")},
			ConditionExpression:                 aws.String("attribute_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Fatalf("got %v, want ConditionalCheckFailedException (B's item must not exist for A)", err)
		}
		noItem(t, "ConditionalCheckFailed echo (ALL_OLD)", ccf.Item)
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "PutItem/ALL_OLD-on-B-key", func(t *testing.T) {
		out, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: tn, Item: map[string]types.AttributeValue{"pk": bKey["pk"], "sk": bKey["sk"], "owner": S("A")},
			ReturnValues: types.ReturnValueAllOld,
		})
		if err != nil {
			t.Fatal(err)
		}
		noItem(t, "PutItem ALL_OLD over B's key", out.Attributes)
		w.bIntact(t, table, bKey)
		cleanup(t, bKey)
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "UpdateItem/ADD-on-B-key-ALL_NEW", func(t *testing.T) {
		for _, rv := range []types.ReturnValue{types.ReturnValueAllNew, types.ReturnValueUpdatedNew} {
			out, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: tn, Key: bKey,
				UpdateExpression:          aws.String("ADD n :five, tags :t SET #o = :a"),
				ExpressionAttributeNames:  map[string]string{"#o": "owner"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":five": N("5"), ":t": &types.AttributeValueMemberSS{Value: []string{"x"}}, ":a": S("A")},
				ReturnValues:              rv,
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := str(out.Attributes["n"]); n != "5" {
				t.Errorf("LEAK: ADD n 5 on B's key gave n=%s (B's n is 1): %v", n, describeItem(out.Attributes))
			}
			if ss, ok := out.Attributes["tags"].(*types.AttributeValueMemberSS); ok && len(ss.Value) != 1 {
				t.Errorf("LEAK: ADD to a set on B's key merged with B's set: %v", ss.Value)
			}
			ownItem(t, "UpdateItem "+string(rv), out.Attributes)
			if rv == types.ReturnValueAllNew && len(out.Attributes) != 5 {
				t.Errorf("UpdateItem ALL_NEW on a fresh key: %s, want only pk, sk, n, tags, owner", describeItem(out.Attributes))
			}
			w.bIntact(t, table, bKey)
			cleanup(t, bKey)
		}
	})

	w.attack(t, "UpdateItem/condition-ALL_OLD-on-B-key", func(t *testing.T) {
		_, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: tn, Key: bKey,
			UpdateExpression:                    aws.String("SET x = :x"),
			ConditionExpression:                 aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":x": S("x")},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Fatalf("got %v, want ConditionalCheckFailedException", err)
		}
		noItem(t, "ConditionalCheckFailed echo", ccf.Item)
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "UpdateItem/condition-probe-of-B-value", func(t *testing.T) {
		// On a key both have, a condition that only B's item satisfies.
		for _, c := range []struct {
			cond string
			vals map[string]types.AttributeValue
		}{
			{"begins_with(secret, :p)", map[string]types.AttributeValue{":p": S("SECRET-B")}},
			{"attribute_exists(#b)", nil},
			{"size(secret) > :z AND contains(tags, :b)", map[string]types.AttributeValue{":z": N("0"), ":b": S("B")}},
		} {
			cond := c.cond
			_, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: tn, Key: shared,
				UpdateExpression:                    aws.String("REMOVE probe"),
				ConditionExpression:                 aws.String(cond),
				ExpressionAttributeNames:            names(cond),
				ExpressionAttributeValues:           c.vals,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			var ccf *types.ConditionalCheckFailedException
			if !errors.As(err, &ccf) {
				t.Errorf("condition %q on A's item: got %v, want ConditionalCheckFailedException", cond, err)
				continue
			}
			if ccf.Item == nil {
				t.Errorf("condition %q: ALL_OLD echo missing A's own item", cond)
			}
			ownItem(t, "ConditionalCheckFailed echo of "+cond, ccf.Item)
		}
		w.bIntact(t, table, shared)
	})

	w.attack(t, "DeleteItem/ALL_OLD-on-B-key", func(t *testing.T) {
		out, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: bKey, ReturnValues: types.ReturnValueAllOld})
		if err != nil {
			t.Fatal(err)
		}
		noItem(t, "DeleteItem ALL_OLD of B's key", out.Attributes)
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "DeleteItem/condition-ALL_OLD-on-B-key", func(t *testing.T) {
		_, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: tn, Key: bKey,
			ConditionExpression:                 aws.String("attribute_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Fatalf("got %v, want ConditionalCheckFailedException", err)
		}
		noItem(t, "ConditionalCheckFailed echo", ccf.Item)
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "BatchGetItem/B-keys", func(t *testing.T) {
		var keys []map[string]types.AttributeValue
		for _, it := range B.items[table] {
			keys = append(keys, keyOf(it))
		}
		for _, proj := range []string{"", "pk, sk, secret, #b, #o"} {
			ka := types.KeysAndAttributes{Keys: keys, ConsistentRead: aws.Bool(true)}
			if proj != "" {
				ka.ProjectionExpression = aws.String(proj)
				ka.ExpressionAttributeNames = map[string]string{"#o": "owner", "#b": "blob"}
			}
			out, err := A.App.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: ka}})
			if err != nil {
				t.Fatal(err)
			}
			got := onlyOwn(t, A, "BatchGetItem of B's keys", out.Responses[table])
			var want []string
			for _, k := range keys {
				if A.items[table][keyStr(k)] != nil {
					want = append(want, keyStr(k))
				}
			}
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("BatchGetItem of B's keys: got %v, want A's own %v", got, want)
			}
		}
	})

	w.attack(t, "BatchWriteItem/delete-and-put-B-keys", func(t *testing.T) {
		var reqs []types.WriteRequest
		var bOnly []map[string]types.AttributeValue
		for k, it := range B.items[table] {
			if A.items[table][k] == nil && len(reqs) < 24 {
				reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(it)}})
				bOnly = append(bOnly, keyOf(it))
			}
		}
		if _, err := A.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}}); err != nil {
			t.Fatal(err)
		}
		for _, k := range bOnly {
			w.bIntact(t, table, k)
		}
		put := []types.WriteRequest{{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": bKey["pk"], "sk": bKey["sk"], "owner": S("A")}}}}
		if _, err := A.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: put}}); err != nil {
			t.Fatal(err)
		}
		w.bIntact(t, table, bKey)
		cleanup(t, bKey)
	})

	w.attack(t, "TransactGetItems/B-keys", func(t *testing.T) {
		var tg []types.TransactGetItem
		for _, k := range []map[string]types.AttributeValue{bKey, shared, never} {
			tg = append(tg, types.TransactGetItem{Get: &types.Get{TableName: tn, Key: k}})
		}
		tg = append(tg, types.TransactGetItem{Get: &types.Get{TableName: tn, Key: bKey, ProjectionExpression: aws.String("secret, #b"), ExpressionAttributeNames: map[string]string{"#b": "blob"}}})
		out, err := A.App.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: tg})
		if err != nil {
			t.Fatal(err)
		}
		noItem(t, "TransactGetItems of B's key", out.Responses[0].Item)
		ownItem(t, "TransactGetItems of a shared key", out.Responses[1].Item)
		noItem(t, "TransactGetItems of B's key (projection)", out.Responses[3].Item)
	})

	w.attack(t, "TransactWriteItems/ConditionCheck-B-key-ALL_OLD", func(t *testing.T) {
		_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: tn, Key: bKey, ConditionExpression: aws.String("attribute_exists(pk)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			{Update: &types.Update{TableName: tn, Key: shared, UpdateExpression: aws.String("SET probe = :p"),
				ConditionExpression:                 aws.String("attribute_exists(#b)"),
				ExpressionAttributeNames:            map[string]string{"#b": "blob"},
				ExpressionAttributeValues:           map[string]types.AttributeValue{":p": S("p")},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		}})
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			t.Fatalf("got %v, want TransactionCanceledException", err)
		}
		if len(tc.CancellationReasons) != 2 {
			t.Fatalf("CancellationReasons: %+v", tc.CancellationReasons)
		}
		noItem(t, "cancellation reason of B's key", tc.CancellationReasons[0].Item)
		if aws.ToString(tc.CancellationReasons[0].Code) != "ConditionalCheckFailed" {
			t.Errorf("reason 0: %s, want ConditionalCheckFailed", aws.ToString(tc.CancellationReasons[0].Code))
		}
		ownItem(t, "cancellation reason of a shared key", tc.CancellationReasons[1].Item)
		w.bIntact(t, table, bKey)
		w.bIntact(t, table, shared)
	})

	w.attack(t, "TransactWriteItems/Delete-and-Put-B-key", func(t *testing.T) {
		_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: tn, Key: bKey}},
			{Update: &types.Update{TableName: tn, Key: w.keyAt(B, table, 2, "S2"), UpdateExpression: aws.String("SET owner2 = :a"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":a": S("A")}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		w.bIntact(t, table, bKey)
		w.bIntact(t, table, w.keyAt(B, table, 2, "S2"))
		cleanup(t, w.keyAt(B, table, 2, "S2"))
	})

	w.attack(t, "TransactWriteItems/ClientRequestToken-reuse", func(t *testing.T) {
		token := "iso-token-" + table + "-" + randHex(4)
		bIt := B.items[table][keyStr(bKey)]
		if _, err := B.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: tn, Item: bIt}}}}); err != nil {
			t.Fatalf("B's transaction: %v", err)
		}
		aIt := A.items[table][keyStr(shared)]
		_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: tn, Item: aIt}}}})
		if err != nil {
			t.Errorf("LEAK: A reusing B's ClientRequestToken with other items: %v (reveals B's token)", err)
		}
	})

	w.attack(t, "Query/B-only-partition", func(t *testing.T) {
		for _, sel := range []types.Select{types.SelectAllAttributes, types.SelectCount} {
			out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, Select: sel,
				KeyConditionExpression:    aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(pkv(A, table, 2))}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Count != 0 || out.ScannedCount != 0 || len(out.Items) != 0 || out.LastEvaluatedKey != nil {
				t.Errorf("LEAK: Query (%s) of a partition only B has: Count %d ScannedCount %d items %d LEK %v",
					sel, out.Count, out.ScannedCount, len(out.Items), out.LastEvaluatedKey)
			}
		}
	})

	w.attack(t, "Query/shared-partition-counts", func(t *testing.T) {
		p := pkv(A, table, 0)
		var want []string
		for _, k := range aKeys {
			if A.items[table][k] != nil && str(A.items[table][k]["pk"]) == p {
				want = append(want, k)
			}
		}
		for _, fwd := range []bool{true, false} {
			out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, ScanIndexForward: aws.Bool(fwd), ConsistentRead: aws.Bool(true),
				KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(p)}})
			if err != nil {
				t.Fatal(err)
			}
			if got := onlyOwn(t, A, "Query", out.Items); !slices.Equal(got, want) {
				t.Errorf("Query forward=%v: got %v, want %v", fwd, got, want)
			}
			if int(out.ScannedCount) != len(want) {
				t.Errorf("LEAK: Query ScannedCount %d, A has %d items in the partition", out.ScannedCount, len(want))
			}
		}
		out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, Select: types.SelectCount,
			KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("attribute_exists(#b) OR attribute_not_exists(#b)"),
			ExpressionAttributeNames: map[string]string{"#b": "blob"}, ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(p)}})
		if err != nil {
			t.Fatal(err)
		}
		if int(out.Count) != len(want) || int(out.ScannedCount) != len(want) {
			t.Errorf("LEAK: Query COUNT: Count %d ScannedCount %d, A has %d", out.Count, out.ScannedCount, len(want))
		}
		out, err = A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn,
			KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :s)"), FilterExpression: aws.String("attribute_exists(#b)"),
			ExpressionAttributeNames: map[string]string{"#b": "blob"}, ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(p), ":s": S("S")}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Count != 0 || int(out.ScannedCount) != len(want) {
			t.Errorf("LEAK: Query filtered on B's attribute: Count %d ScannedCount %d, want 0 and %d", out.Count, out.ScannedCount, len(want))
		}
	})

	w.attack(t, "Query/GSI-and-LSI", func(t *testing.T) {
		for _, q := range []struct{ index, attr, val string }{
			{"gsi", "gpk", gpkv(A, table, 0)}, {"gsi", "gpk", gpkv(A, table, 1)},
			{"gsik", "gpk2", gpkv(A, table, 0)}, {"lsi", "pk", pkv(A, table, 0)}, {"lsi", "pk", pkv(A, table, 2)},
		} {
			var want []string
			for k, it := range A.items[table] {
				if str(it[q.attr]) == q.val {
					want = append(want, k)
				}
			}
			sort.Strings(want)
			for _, sel := range []types.Select{"", types.SelectCount} {
				out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, IndexName: aws.String(q.index), Select: sel,
					KeyConditionExpression:    aws.String("#k = :v"),
					ExpressionAttributeNames:  map[string]string{"#k": q.attr},
					ExpressionAttributeValues: map[string]types.AttributeValue{":v": S(q.val)}})
				if err != nil {
					t.Fatalf("Query %s: %v", q.index, err)
				}
				if int(out.Count) != len(want) || int(out.ScannedCount) != len(want) {
					t.Errorf("LEAK: Query %s %s=%s (%s): Count %d ScannedCount %d, A has %d", q.index, q.attr, q.val, sel, out.Count, out.ScannedCount, len(want))
				}
				if sel == "" {
					if got := onlyOwn(t, A, "Query "+q.index, out.Items); !slices.Equal(got, want) {
						t.Errorf("Query %s %s=%s: got %v, want %v", q.index, q.attr, q.val, got, want)
					}
				}
			}
		}
	})

	w.attack(t, "Scan/all-and-counts", func(t *testing.T) {
		for _, index := range []string{"", "gsi", "gsik", "lsi"} {
			got := onlyOwn(t, A, "Scan "+index, w.scanAll(t, A.App, table, index))
			if !slices.Equal(got, aKeys) {
				t.Errorf("Scan %q: got %v, want A's %v", index, got, aKeys)
			}
			in := &dynamodb.ScanInput{TableName: tn, Select: types.SelectCount}
			if index != "" {
				in.IndexName = aws.String(index)
			}
			out, err := A.App.Scan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if int(out.Count) != len(aKeys) || int(out.ScannedCount) != len(aKeys) {
				t.Errorf("LEAK: Scan %q COUNT: Count %d ScannedCount %d, A has %d", index, out.Count, out.ScannedCount, len(aKeys))
			}
			in = &dynamodb.ScanInput{TableName: tn, FilterExpression: aws.String("attribute_exists(#b) OR begins_with(secret, :b)"),
				ExpressionAttributeNames: map[string]string{"#b": "blob"}, ExpressionAttributeValues: map[string]types.AttributeValue{":b": S("SECRET-B")}}
			if index != "" {
				in.IndexName = aws.String(index)
			}
			out, err = A.App.Scan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if out.Count != 0 || int(out.ScannedCount) != len(aKeys) {
				t.Errorf("LEAK: Scan %q filtered on B's values: Count %d ScannedCount %d, want 0 and %d", index, out.Count, out.ScannedCount, len(aKeys))
			}
		}
	})

	w.attack(t, "Scan/parallel-all-segments", func(t *testing.T) {
		for _, index := range []string{"", "gsi", "lsi"} {
			for _, total := range []int32{1, 2, 3, 4, 8} {
				var got []string
				scanned := 0
				for seg := int32(0); seg < total; seg++ {
					in := &dynamodb.ScanInput{TableName: tn, Segment: aws.Int32(seg), TotalSegments: aws.Int32(total)}
					if index != "" {
						in.IndexName = aws.String(index)
					}
					for {
						out, err := A.App.Scan(ctx, in)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, onlyOwn(t, A, fmt.Sprintf("Scan %q segment %d/%d", index, seg, total), out.Items)...)
						scanned += int(out.ScannedCount)
						if out.LastEvaluatedKey == nil {
							break
						}
						in.ExclusiveStartKey = out.LastEvaluatedKey
					}
				}
				sort.Strings(got)
				if !slices.Equal(got, aKeys) || scanned != len(aKeys) {
					t.Errorf("parallel Scan %q in %d segments: got %v (scanned %d), want %v", index, total, got, scanned, aKeys)
				}
			}
		}
	})

	w.attack(t, "Scan/pages-tokens-are-own", func(t *testing.T) {
		in := &dynamodb.ScanInput{TableName: tn, Limit: aws.Int32(1)}
		var got []string
		for i := 0; i < 100; i++ {
			out, err := A.App.Scan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, onlyOwn(t, A, "Scan page", out.Items)...)
			if out.LastEvaluatedKey == nil {
				break
			}
			if k := keyStr(out.LastEvaluatedKey); A.items[table][k] == nil {
				t.Errorf("LEAK: LastEvaluatedKey %s is not one of A's items", k)
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
		sort.Strings(got)
		if !slices.Equal(got, aKeys) {
			t.Errorf("paged Scan: got %v, want %v", got, aKeys)
		}
	})

	w.attack(t, "ExclusiveStartKey/B-real-tokens-replayed", func(t *testing.T) {
		lek := w.lekB[table]
		reads := []struct {
			name string
			run  func() ([]map[string]types.AttributeValue, error)
		}{
			{"Scan", func() ([]map[string]types.AttributeValue, error) {
				out, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ExclusiveStartKey: lek.scan})
				return items(out, err)
			}},
			{"Scan gsi", func() ([]map[string]types.AttributeValue, error) {
				out, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, IndexName: aws.String("gsi"), ExclusiveStartKey: lek.gsi})
				return items(out, err)
			}},
			{"Scan lsi", func() ([]map[string]types.AttributeValue, error) {
				out, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, IndexName: aws.String("lsi"), ExclusiveStartKey: lek.lsi})
				return items(out, err)
			}},
			{"Query", func() ([]map[string]types.AttributeValue, error) {
				out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, ExclusiveStartKey: lek.query,
					KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": lek.query["pk"]}})
				return qitems(out, err)
			}},
			{"Query lsi", func() ([]map[string]types.AttributeValue, error) {
				out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, IndexName: aws.String("lsi"), ExclusiveStartKey: lek.lsi,
					KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": lek.lsi["pk"]}})
				return qitems(out, err)
			}},
			{"Query gsi", func() ([]map[string]types.AttributeValue, error) {
				out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, IndexName: aws.String("gsi"), ExclusiveStartKey: lek.gsi,
					KeyConditionExpression: aws.String("gpk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": lek.gsi["gpk"]}})
				return qitems(out, err)
			}},
			{"Query gsik", func() ([]map[string]types.AttributeValue, error) {
				out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, IndexName: aws.String("gsik"), ExclusiveStartKey: lek.gsik,
					KeyConditionExpression: aws.String("gpk2 = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": lek.gsik["gpk2"]}})
				return qitems(out, err)
			}},
		}
		for total := int32(2); total <= 4; total++ {
			for seg := int32(0); seg < total; seg++ {
				seg, total := seg, total
				reads = append(reads, struct {
					name string
					run  func() ([]map[string]types.AttributeValue, error)
				}{fmt.Sprintf("Scan segment %d/%d", seg, total), func() ([]map[string]types.AttributeValue, error) {
					out, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ExclusiveStartKey: lek.scan, Segment: aws.Int32(seg), TotalSegments: aws.Int32(total)})
					if code(err) == "ValidationException" {
						return nil, nil // a token outside the segment
					}
					return items(out, err)
				}})
			}
		}
		for _, r := range reads {
			its, err := r.run()
			if err != nil {
				t.Errorf("%s with B's token: %v", r.name, err)
				continue
			}
			onlyOwn(t, A, r.name+" from B's token", its)
		}
	})

	w.attack(t, "ExclusiveStartKey/forged", func(t *testing.T) {
		forged := []map[string]types.AttributeValue{
			bKey,
			{"pk": S(""), "sk": S("")},
			{"pk": S("P2"), "sk": S("S3"), "secret": S("x")},
			{"pk": N("1"), "sk": S("S0")},
			{"pk": S("P2")},
			{"pk": &types.AttributeValueMemberB{Value: []byte{0, 0xff, 't'}}, "sk": S("S0")},
			{"pk": S("P2\u0000\uffff"), "sk": S("\uffff\uffff")},
		}
		for _, esk := range forged {
			for _, index := range []string{"", "gsi"} {
				in := &dynamodb.ScanInput{TableName: tn, ExclusiveStartKey: esk}
				if index != "" {
					in.IndexName = aws.String(index)
				}
				out, err := A.App.Scan(ctx, in)
				if err != nil {
					if c := code(err); c != "ValidationException" {
						t.Errorf("forged ExclusiveStartKey %s on %q: %v, want ValidationException or A's items", describeItem(esk), index, err)
					}
					continue
				}
				onlyOwn(t, A, "Scan from a forged token", out.Items)
			}
		}
	})

	w.attack(t, "DescribeTable/stats-per-tenant", func(t *testing.T) {
		before := w.stats(t, A.App, table)
		if before.items[""] != int64(len(aKeys)) {
			t.Errorf("LEAK: A's ItemCount %d, A has %d items", before.items[""], len(aKeys))
		}
		for _, ix := range []string{"gsi", "gsik", "lsi"} {
			if before.items[ix] != int64(len(aKeys)) {
				t.Errorf("LEAK: A's %s ItemCount %d, A has %d items", ix, before.items[ix], len(aKeys))
			}
		}
		// B writes (and later deletes) many large items; A's statistics
		// must not move.
		var extra []types.WriteRequest
		for i := 0; i < 20; i++ {
			extra = append(extra, types.WriteRequest{PutRequest: &types.PutRequest{Item: makeItem(B, table, 7, fmt.Sprintf("X%02d", i), 4<<10)}})
		}
		if _, err := B.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: extra}}); err != nil {
			t.Fatal(err)
		}
		after := w.stats(t, A.App, table)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("LEAK: A's DescribeTable statistics moved when B wrote: before %v, after %v", before, after)
		}
		bs := w.stats(t, B.App, table)
		if bs.items[""] != int64(len(B.items[table])+20) {
			t.Errorf("B's ItemCount %d, want %d", bs.items[""], len(B.items[table])+20)
		}
		for i := range extra {
			extra[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(extra[i].PutRequest.Item)}}
		}
		if _, err := B.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: extra}}); err != nil {
			t.Fatal(err)
		}
		if before.bytes[""] >= bs.bytes[""] {
			t.Errorf("A's TableSizeBytes %d not below B's %d (B's items are larger)", before.bytes[""], bs.bytes[""])
		}
	})

	w.attack(t, "ConsumedCapacity/side-channel", func(t *testing.T) {
		// B's item at bKey is ~8 KB; to A the key is as empty as a key
		// nobody ever wrote, and must cost the same.
		pairs := []struct {
			name string
			run  func(key map[string]types.AttributeValue) (string, error)
		}{
			{"GetItem", func(k map[string]types.AttributeValue) (string, error) {
				out, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: k, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
				if err != nil {
					return "", err
				}
				return capStr(out.ConsumedCapacity), nil
			}},
			{"PutItem", func(k map[string]types.AttributeValue) (string, error) {
				it := map[string]types.AttributeValue{"pk": k["pk"], "sk": k["sk"], "owner": S("A"), "gpk": S("G5"), "gsk": S("x"), "lsk": S("x"), "gpk2": S("G5")}
				out, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: it, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
					ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize})
				if err != nil {
					return "", err
				}
				return capStr(out.ConsumedCapacity) + icmStr(out.ItemCollectionMetrics), nil
			}},
			{"UpdateItem", func(k map[string]types.AttributeValue) (string, error) {
				out, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: k, UpdateExpression: aws.String("SET x = :x"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":x": S("x")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
					ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize})
				if err != nil {
					return "", err
				}
				return capStr(out.ConsumedCapacity) + icmStr(out.ItemCollectionMetrics), nil
			}},
			{"DeleteItem", func(k map[string]types.AttributeValue) (string, error) {
				out, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: k, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
					ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize})
				if err != nil {
					return "", err
				}
				return capStr(out.ConsumedCapacity) + icmStr(out.ItemCollectionMetrics), nil
			}},
			{"Query", func(k map[string]types.AttributeValue) (string, error) {
				out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": k["pk"]}, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
				if err != nil {
					return "", err
				}
				return capStr(out.ConsumedCapacity), nil
			}},
		}
		for _, p := range pairs {
			onB, err := p.run(bKey)
			if err != nil {
				t.Fatalf("%s on B's key: %v", p.name, err)
			}
			onNever, err := p.run(map[string]types.AttributeValue{"pk": S("P9"), "sk": S("S3")})
			if err != nil {
				t.Fatalf("%s on a fresh key: %v", p.name, err)
			}
			if onB != onNever {
				t.Errorf("LEAK: %s on B's key costs %s, on a never-written key %s", p.name, onB, onNever)
			}
		}
		for _, k := range []map[string]types.AttributeValue{bKey, {"pk": S("P9"), "sk": S("S3")}} {
			cleanup(t, k)
		}
		w.bIntact(t, table, bKey)
	})
}

func items(out *dynamodb.ScanOutput, err error) ([]map[string]types.AttributeValue, error) {
	if err != nil {
		return nil, err
	}
	return out.Items, nil
}

func qitems(out *dynamodb.QueryOutput, err error) ([]map[string]types.AttributeValue, error) {
	if err != nil {
		return nil, err
	}
	return out.Items, nil
}

func capStr(c *types.ConsumedCapacity) string {
	if c == nil {
		return "<none>"
	}
	s := fmt.Sprintf("total=%v read=%v write=%v", aws.ToFloat64(c.CapacityUnits), aws.ToFloat64(c.ReadCapacityUnits), aws.ToFloat64(c.WriteCapacityUnits))
	if c.Table != nil {
		s += fmt.Sprintf(" table=%v", aws.ToFloat64(c.Table.CapacityUnits))
	}
	var ix []string
	for n, v := range c.GlobalSecondaryIndexes {
		ix = append(ix, fmt.Sprintf("%s=%v", n, aws.ToFloat64(v.CapacityUnits)))
	}
	for n, v := range c.LocalSecondaryIndexes {
		ix = append(ix, fmt.Sprintf("%s=%v", n, aws.ToFloat64(v.CapacityUnits)))
	}
	sort.Strings(ix)
	return s + fmt.Sprint(ix)
}

func icmStr(m *types.ItemCollectionMetrics) string {
	if m == nil {
		return " icm=<none>"
	}
	return fmt.Sprintf(" icm=%v", m.SizeEstimateRangeGB)
}

// keyAt is tenant tn's key (partition p, sort sk) in table.
func (w *world) keyAt(tn *tenant, table string, p int, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": S(pkv(tn, table, p)), "sk": S(sk)}
}

// tableStats are DescribeTable's counts: "" is the table, else an index.
type tableStats struct {
	items, bytes map[string]int64
}

func (s tableStats) String() string {
	var parts []string
	for k, v := range s.items {
		parts = append(parts, fmt.Sprintf("%s:%d/%dB", k, v, s.bytes[k]))
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

func (w *world) stats(t *testing.T, c *dynamodb.Client, table string) tableStats {
	t.Helper()
	out, err := c.DescribeTable(w.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTable %s: %v", table, err)
	}
	s := tableStats{items: map[string]int64{}, bytes: map[string]int64{}}
	d := out.Table
	s.items[""], s.bytes[""] = aws.ToInt64(d.ItemCount), aws.ToInt64(d.TableSizeBytes)
	for _, g := range d.GlobalSecondaryIndexes {
		s.items[aws.ToString(g.IndexName)], s.bytes[aws.ToString(g.IndexName)] = aws.ToInt64(g.ItemCount), aws.ToInt64(g.IndexSizeBytes)
	}
	for _, l := range d.LocalSecondaryIndexes {
		s.items[aws.ToString(l.IndexName)], s.bytes[aws.ToString(l.IndexName)] = aws.ToInt64(l.ItemCount), aws.ToInt64(l.IndexSizeBytes)
	}
	return s
}

// names returns ExpressionAttributeNames for the placeholders expr uses.
func names(expr string) map[string]string {
	all := map[string]string{"#b": "blob", "#o": "owner"}
	out := map[string]string{}
	for k, v := range all {
		if strings.Contains(expr, k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
