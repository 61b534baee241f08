package isolation

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// leadingKeysAttacks attacks the leading-keys table: every partition key
// A names — of the table or of a GSI, in writes, reads, key conditions,
// batch entries, transaction items and page tokens — must start with
// TENANT#<A>|, or the request is refused with AccessDeniedException,
// audited in A's log, and has no effect.
func (w *world) leadingKeysAttacks(t *testing.T) {
	A, B := w.A, w.B
	ctx := w.ctx
	table := tblLK
	tn := aws.String(table)
	bKey := w.keyAt(B, table, 0, "S0")
	aKey := w.keyAt(A, table, 0, "S0")
	aNew := map[string]types.AttributeValue{"pk": S(pkv(A, table, 5)), "sk": S("new")}
	bPK := S(pkv(B, table, 0))
	bGPK := S(gpkv(B, table, 0))
	aKeys := ownKeys(A, table)

	// deny expects op to be refused and audited, and its message to name
	// neither B's tenant nor the key.
	deny := func(t *testing.T, op string, fn func() error) {
		t.Helper()
		var err error
		w.denied(t, A.id, A.app.AccessKeyID, "dynamodb:"+op, func() error { err = fn(); return err })
		if m := message(err); strings.Contains(m, B.id) || strings.Contains(m, "P0") {
			t.Errorf("LEAK: the AccessDenied message names the key or B's tenant: %s", m)
		}
	}
	absent := func(t *testing.T, key map[string]types.AttributeValue) {
		t.Helper()
		out, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item != nil {
			t.Errorf("a refused request wrote %s", describeItem(out.Item))
		}
	}
	aItem := func(key map[string]types.AttributeValue, extra ...string) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{"pk": key["pk"], "sk": key["sk"], "owner": S("A")}
		for i := 0; i+1 < len(extra); i += 2 {
			it[extra[i]] = S(extra[i+1])
		}
		return it
	}

	w.attack(t, "positive-control", func(t *testing.T) {
		if _, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: aItem(aNew, "gpk", gpkv(A, table, 3), "gsk", "x")}); err != nil {
			t.Fatalf("A's own prefixed write: %v", err)
		}
		out, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, IndexName: aws.String("gsi"), KeyConditionExpression: aws.String("gpk = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": S(gpkv(A, table, 3))}})
		if _, derr := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: aNew}); derr != nil {
			t.Fatal(derr)
		}
		if err != nil || out.Count != 1 {
			t.Fatalf("A's own GSI query: %v, count %d", err, out.Count)
		}
	})

	w.attack(t, "PutItem/B-prefix", func(t *testing.T) {
		deny(t, "PutItem", func() error {
			_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: aItem(bKey)})
			return err
		})
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "PutItem/GSI-key-B-prefix", func(t *testing.T) {
		for _, attr := range []string{"gpk", "gpk2"} {
			deny(t, "PutItem", func() error {
				_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: aItem(aNew, attr, gpkv(B, table, 0), "gsk", "x")})
				return err
			})
			absent(t, aNew)
		}
	})

	w.attack(t, "PutItem/prefix-variants", func(t *testing.T) {
		for _, pk := range []string{
			"TENANT#" + A.id, // no separator
			"TENANT#" + A.id + "#x",
			"tenant#" + A.id + "|x",
			"TENANT#" + strings.ToUpper(A.id) + "|x",
			" TENANT#" + A.id + "|x",
			"TENANT#" + B.id + "|TENANT#" + A.id + "|x",
			"TENANT#{tenant}|x",
			"TENANT#|x",
			"TENANT#" + A.id[:31] + "|x",
		} {
			key := map[string]types.AttributeValue{"pk": S(pk), "sk": S("v")}
			deny(t, "PutItem", func() error {
				_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: aItem(key)})
				return err
			})
		}
	})

	w.attack(t, "UpdateItem/B-prefix", func(t *testing.T) {
		deny(t, "UpdateItem", func() error {
			_, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: bKey, UpdateExpression: aws.String("ADD n :one"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": N("1")}, ReturnValues: types.ReturnValueAllNew})
			return err
		})
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "UpdateItem/SET-GSI-key-to-B-prefix", func(t *testing.T) {
		for _, attr := range []string{"gpk", "gpk2"} {
			deny(t, "UpdateItem", func() error {
				_, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: aKey, UpdateExpression: aws.String("SET #g = :g"),
					ExpressionAttributeNames: map[string]string{"#g": attr}, ExpressionAttributeValues: map[string]types.AttributeValue{":g": bGPK}})
				return err
			})
		}
		out, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: aKey, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if !sameItem(out.Item, A.items[table][keyStr(aKey)]) {
			t.Errorf("a refused update changed A's item: %s", describeItem(out.Item))
		}
	})

	w.attack(t, "DeleteItem/B-prefix", func(t *testing.T) {
		deny(t, "DeleteItem", func() error {
			_, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: bKey, ReturnValues: types.ReturnValueAllOld})
			return err
		})
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "GetItem/B-prefix", func(t *testing.T) {
		deny(t, "GetItem", func() error {
			_, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: bKey})
			return err
		})
	})

	w.attack(t, "Query/B-prefix-key-conditions", func(t *testing.T) {
		for _, q := range []struct{ index, attr string }{{"", "pk"}, {"lsi", "pk"}, {"gsi", "gpk"}, {"gsik", "gpk2"}} {
			v := bPK
			if q.attr != "pk" {
				v = bGPK
			}
			for _, sel := range []types.Select{"", types.SelectCount} {
				deny(t, "Query", func() error {
					in := &dynamodb.QueryInput{TableName: tn, Select: sel, KeyConditionExpression: aws.String("#k = :v"),
						ExpressionAttributeNames: map[string]string{"#k": q.attr}, ExpressionAttributeValues: map[string]types.AttributeValue{":v": v}}
					if q.index != "" {
						in.IndexName = aws.String(q.index)
					}
					_, err := A.App.Query(ctx, in)
					return err
				})
			}
		}
		// The legacy KeyConditions parameter too.
		deny(t, "Query", func() error {
			_, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditions: map[string]types.Condition{
				"pk": {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{bPK}}}})
			return err
		})
	})

	w.attack(t, "page-tokens/B-real-tokens", func(t *testing.T) {
		lek := w.lekB[table]
		deny(t, "Scan", func() error {
			_, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ExclusiveStartKey: lek.scan})
			return err
		})
		deny(t, "Scan", func() error {
			_, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, IndexName: aws.String("gsi"), ExclusiveStartKey: lek.gsi})
			return err
		})
		deny(t, "Scan", func() error {
			_, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ExclusiveStartKey: lek.scan, Segment: aws.Int32(0), TotalSegments: aws.Int32(1)})
			return err
		})
		// A's own partition with B's token.
		deny(t, "Query", func() error {
			_, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, ExclusiveStartKey: lek.query, KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": aKey["pk"]}})
			return err
		})
		deny(t, "Query", func() error {
			_, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: tn, IndexName: aws.String("gsi"), ExclusiveStartKey: lek.gsi,
				KeyConditionExpression:    aws.String("gpk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(gpkv(A, table, 0))}})
			return err
		})
		// A forged token: A's table key with B's GSI key.
		forged := map[string]types.AttributeValue{"pk": aKey["pk"], "sk": aKey["sk"], "gpk": bGPK, "gsk": S("S0")}
		deny(t, "Scan", func() error {
			_, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, IndexName: aws.String("gsi"), ExclusiveStartKey: forged})
			return err
		})
	})

	w.attack(t, "BatchGetItem/mixed-entries", func(t *testing.T) {
		deny(t, "BatchGetItem", func() error {
			_, err := A.App.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				table: {Keys: []map[string]types.AttributeValue{aKey, bKey}}}})
			return err
		})
	})

	w.attack(t, "BatchWriteItem/mixed-entries", func(t *testing.T) {
		deny(t, "BatchWriteItem", func() error {
			_, err := A.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: {
				{PutRequest: &types.PutRequest{Item: aItem(aNew)}},
				{DeleteRequest: &types.DeleteRequest{Key: bKey}},
			}}})
			return err
		})
		absent(t, aNew)
		w.bIntact(t, table, bKey)
		deny(t, "BatchWriteItem", func() error {
			_, err := A.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				table: {{PutRequest: &types.PutRequest{Item: aItem(aNew, "gpk", gpkv(B, table, 1), "gsk", "x")}}},
				tblNS: {{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": S("P8"), "sk": S("lk")}}}},
			}})
			return err
		})
		absent(t, aNew)
		out, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: map[string]types.AttributeValue{"pk": S("P8"), "sk": S("lk")}})
		if err != nil || out.Item != nil {
			t.Errorf("a refused batch wrote to another table: %v %v", err, out.Item)
		}
	})

	w.attack(t, "TransactWriteItems/mixed-items", func(t *testing.T) {
		items := []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: tn, Key: bKey, ConditionExpression: aws.String("attribute_exists(pk)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			{Put: &types.Put{TableName: tn, Item: aItem(bKey)}},
			{Delete: &types.Delete{TableName: tn, Key: bKey}},
			{Update: &types.Update{TableName: tn, Key: bKey, UpdateExpression: aws.String("SET x = :x"), ExpressionAttributeValues: map[string]types.AttributeValue{":x": S("x")}}},
			{Update: &types.Update{TableName: tn, Key: aKey, UpdateExpression: aws.String("SET gpk = :x"), ExpressionAttributeValues: map[string]types.AttributeValue{":x": bGPK}}},
		}
		for _, bad := range items {
			deny(t, "TransactWriteItems", func() error {
				_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: tn, Item: aItem(aNew)}}, bad}})
				return err
			})
			absent(t, aNew)
		}
		w.bIntact(t, table, bKey)
	})

	w.attack(t, "TransactGetItems/mixed-items", func(t *testing.T) {
		deny(t, "TransactGetItems", func() error {
			_, err := A.App.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
				{Get: &types.Get{TableName: tn, Key: aKey}}, {Get: &types.Get{TableName: tn, Key: bKey}}}})
			return err
		})
	})

	w.attack(t, "Scan/only-own-items", func(t *testing.T) {
		for _, index := range []string{"", "gsi", "gsik", "lsi"} {
			got := onlyOwn(t, A, "Scan "+index, w.scanAll(t, A.App, table, index))
			if !slices.Equal(got, aKeys) {
				t.Errorf("Scan %q: got %v, want A's %v", index, got, aKeys)
			}
			for _, total := range []int32{2, 5} {
				var all []string
				for seg := int32(0); seg < total; seg++ {
					in := &dynamodb.ScanInput{TableName: tn, Segment: aws.Int32(seg), TotalSegments: aws.Int32(total)}
					if index != "" {
						in.IndexName = aws.String(index)
					}
					out, err := A.App.Scan(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, onlyOwn(t, A, "parallel Scan", out.Items)...)
				}
				slices.Sort(all)
				if !slices.Equal(all, aKeys) {
					t.Errorf("parallel Scan %q/%d: got %v, want %v", index, total, all, aKeys)
				}
			}
		}
		out, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: tn, Select: types.SelectCount})
		if err != nil {
			t.Fatal(err)
		}
		if int(out.Count) != len(aKeys) || int(out.ScannedCount) != len(aKeys) {
			t.Errorf("LEAK: Scan COUNT on the leading-keys table: Count %d ScannedCount %d, A has %d", out.Count, out.ScannedCount, len(aKeys))
		}
		st := w.stats(t, A.App, table)
		if st.items[""] != int64(len(aKeys)) || st.items["gsi"] != int64(len(aKeys)) {
			t.Errorf("LEAK: DescribeTable of the leading-keys table as A: %v, A has %d items", st, len(aKeys))
		}
	})

	w.attack(t, "B-own-prefix-as-B-works", func(t *testing.T) {
		out, err := B.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: bKey})
		if err != nil || out.Item == nil {
			t.Fatalf("B reading its own prefixed item: %v", err)
		}
		// ...and B cannot reach A's.
		since := w.auditTail(t, B.id)
		_, err = B.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: aKey})
		wantCode(t, err, "AccessDeniedException")
		w.wantAudited(t, B.id, since, B.app.AccessKeyID, "dynamodb:GetItem")
	})
}
