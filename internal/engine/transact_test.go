package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestTransactWriteItems(t *testing.T) {
	env, a := itemTable(t)
	e := env.e
	a.put("Items", itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"N":"1"}}`))
	a.put("Items", itemOf(t, `{"pk":{"S":"b"},"sk":{"S":"1"},"v":{"N":"1"}}`))
	keyA, keyB := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`), itemOf(t, `{"pk":{"S":"b"},"sk":{"S":"1"}}`)
	one := map[string]attr.Value{":one": attr.Num(attr.MustNumber("1"))}

	out, err := e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{
		TransactItems: []wire.TransactWriteItem{
			{ConditionCheck: &wire.ConditionCheck{TableName: "Items", Key: keyA, ConditionExpression: "v = :one", ExpressionAttributeValues: one}},
			{Update: &wire.TransactUpdate{TableName: "Items", Key: keyB, UpdateExpression: "SET v = v + :one", ExpressionAttributeValues: one}},
			{Put: &wire.TransactPut{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"c"},"sk":{"S":"1"}}`), ConditionExpression: strPtr("attribute_not_exists(pk)")}},
			{Delete: &wire.TransactDelete{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"none"},"sk":{"S":"1"}}`)}},
		},
		ReturnConsumedCapacity: "TOTAL",
	})
	noErr(t, err)
	if out.ConsumedCapacity[0].CapacityUnits != 8 || out.U.WriteUnits != 8 {
		t.Fatalf("consumed %+v usage %+v (transactions cost double)", out.ConsumedCapacity, out.U)
	}
	if got := a.get("Items", keyB); got["v"].N.String() != "2" {
		t.Fatalf("b = %s", showItem(got))
	}

	// A failing condition cancels everything, with one reason per action.
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{
		TransactItems: []wire.TransactWriteItem{
			{Update: &wire.TransactUpdate{TableName: "Items", Key: keyA, UpdateExpression: "SET v = v + :one", ExpressionAttributeValues: one}},
			{ConditionCheck: &wire.ConditionCheck{TableName: "Items", Key: keyB, ConditionExpression: "v = :one", ExpressionAttributeValues: one, ReturnValuesOnConditionCheckFailure: "ALL_OLD"}},
			{Put: &wire.TransactPut{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"c"},"sk":{"S":"1"}}`), ConditionExpression: strPtr("attribute_not_exists(pk)")}},
		},
	})
	ae := wantErr(t, err, apierr.TransactionCanceled, "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, ConditionalCheckFailed]")
	d, ok := ae.Detail.(*wire.TransactionCanceledDetail)
	if !ok || len(d.CancellationReasons) != 3 {
		t.Fatalf("detail %#v", ae.Detail)
	}
	if r := d.CancellationReasons[1]; r.Code != "ConditionalCheckFailed" || r.Item["v"].N.String() != "2" {
		t.Fatalf("reason 1 = %+v", r)
	}
	if r := d.CancellationReasons[2]; r.Item != nil {
		t.Fatalf("reason 2 has an item without ALL_OLD: %+v", r)
	}
	if got := a.get("Items", keyA); got["v"].N.String() != "1" {
		t.Fatalf("cancelled transaction changed a: %s", showItem(got))
	}

	// An update failing on the item's content cancels with ValidationError.
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{
		TransactItems: []wire.TransactWriteItem{
			{Update: &wire.TransactUpdate{TableName: "Items", Key: keyA, UpdateExpression: "ADD pk2 :s", ExpressionAttributeValues: map[string]attr.Value{":s": attr.Str("x")}}},
		},
	})
	if apierr.KindOf(err) != apierr.Validation && apierr.KindOf(err) != apierr.TransactionCanceled {
		t.Fatalf("ADD of a string: %v", err)
	}

	bad := []struct {
		name  string
		items []wire.TransactWriteItem
		msg   string
	}{
		{"same item twice", []wire.TransactWriteItem{
			{ConditionCheck: &wire.ConditionCheck{TableName: "Items", Key: keyA, ConditionExpression: "attribute_exists(pk)"}},
			{Delete: &wire.TransactDelete{TableName: "Items", Key: keyA}},
		}, "Transaction request cannot include multiple operations on one item"},
		{"two actions", []wire.TransactWriteItem{
			{Delete: &wire.TransactDelete{TableName: "Items", Key: keyA}, ConditionCheck: &wire.ConditionCheck{TableName: "Items", Key: keyA, ConditionExpression: "attribute_exists(pk)"}},
		}, "only contain one of"},
		{"none", nil, "transactItems"},
		{"update key", []wire.TransactWriteItem{
			{Update: &wire.TransactUpdate{TableName: "Items", Key: keyA, UpdateExpression: "SET sk = :s", ExpressionAttributeValues: map[string]attr.Value{":s": attr.Str("x")}}},
		}, "part of the key"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: c.items})
			wantErr(t, err, apierr.Validation, c.msg)
		})
	}
	var many []wire.TransactWriteItem
	for i := 0; i < 101; i++ {
		many = append(many, wire.TransactWriteItem{Delete: &wire.TransactDelete{TableName: "Items", Key: itemOf(t, fmt.Sprintf(`{"pk":{"S":"m%d"},"sk":{"S":"1"}}`, i))}})
	}
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: many})
	wantErr(t, err, apierr.Validation, "less than or equal to 100")
}

func TestTransactIdempotency(t *testing.T) {
	env, a := itemTable(t)
	e := env.e
	key := itemOf(t, `{"pk":{"S":"ctr"},"sk":{"S":"1"}}`)
	req := func(token string, by string) *wire.TransactWriteItemsInput {
		return &wire.TransactWriteItemsInput{
			ClientRequestToken: strPtr(token),
			TransactItems: []wire.TransactWriteItem{{Update: &wire.TransactUpdate{TableName: "Items", Key: key,
				UpdateExpression: "ADD n :d", ExpressionAttributeValues: map[string]attr.Value{":d": attr.Num(attr.MustNumber(by))}}}},
		}
	}
	value := func() string {
		t.Helper()
		return a.get("Items", key)["n"].N.String()
	}
	_, err := e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), req("tok-1", "1"))
	noErr(t, err)
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), req("tok-1", "1"))
	noErr(t, err)
	if v := value(); v != "1" {
		t.Fatalf("retry re-applied: n = %s", v)
	}
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), req("tok-1", "2"))
	wantErr(t, err, apierr.IdempotentParameterMismatch, "same client token")

	// Tokens are per tenant: another tenant's identical token is its own.
	b := env.tenant(tenancy.RoleApp)
	_, err = e.TransactWriteItems(testCtx, b.scope("TransactWriteItems"), req("tok-1", "5"))
	noErr(t, err)
	if v := b.get("Items", key)["n"].N.String(); v != "5" {
		t.Fatalf("tenant b n = %s", v)
	}

	// Tokens survive a restart.
	env.reopen()
	e = env.e
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), req("tok-1", "1"))
	noErr(t, err)
	if v := value(); v != "1" {
		t.Fatalf("retry after restart re-applied: n = %s", v)
	}

	// After ten minutes the token is forgotten and the sweeper removes it.
	env.clock.Set(env.clock.Now().Add(11 * time.Minute))
	noErr(t, e.sweep())
	if rec, err := e.readToken(resolve.Namespace(a.scope("GetItem")), "tok-1"); err != nil || rec != nil {
		t.Fatalf("expired token: %v %v", rec, err)
	}
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), req("tok-1", "1"))
	noErr(t, err)
	if v := value(); v != "2" {
		t.Fatalf("after expiry n = %s, want 2", v)
	}
}

func TestTransactGetItems(t *testing.T) {
	env, a := itemTable(t)
	a.put("Items", itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"N":"1"},"w":{"S":"x"}}`))
	out, err := env.e.TransactGetItems(testCtx, a.scope("TransactGetItems"), &wire.TransactGetItemsInput{
		TransactItems: []wire.TransactGetItem{
			{Get: &wire.Get{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`), ProjectionExpression: strPtr("w")}},
			{Get: &wire.Get{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"zz"},"sk":{"S":"1"}}`)}},
		},
		ReturnConsumedCapacity: "TOTAL",
	})
	noErr(t, err)
	if len(out.Responses) != 2 || out.Responses[1].Item != nil {
		t.Fatalf("responses %+v", out.Responses)
	}
	sameItem(t, out.Responses[0].Item, itemOf(t, `{"w":{"S":"x"}}`))
	if out.ConsumedCapacity[0].CapacityUnits != 4 || out.U.ReadUnits != 4 {
		t.Fatalf("consumed %+v", out.ConsumedCapacity)
	}
	_, err = env.e.TransactGetItems(testCtx, a.scope("TransactGetItems"), &wire.TransactGetItemsInput{TransactItems: []wire.TransactGetItem{{}}})
	wantErr(t, err, apierr.Validation, "must not be null")
}
