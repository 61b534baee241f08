package engine

import (
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestPutGetItem(t *testing.T) {
	env, a := itemTable(t)
	e := env.e
	item := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"n":{"N":"1.50"},"m":{"M":{"x":{"L":[{"S":"y"},{"NULL":true}]}}},"ss":{"SS":["p","q"]}}`)
	out, err := e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: item, ReturnValues: "ALL_OLD", ReturnConsumedCapacity: "TOTAL"})
	noErr(t, err)
	if out.Attributes != nil {
		t.Fatalf("ALL_OLD of a new item = %s", showItem(out.Attributes))
	}
	if out.ConsumedCapacity == nil || out.ConsumedCapacity.CapacityUnits != 1 || out.ConsumedCapacity.TableName != "Items" {
		t.Fatalf("consumed = %+v", out.ConsumedCapacity)
	}
	if out.U.WriteUnits != 1 || out.U.Table != "Items" {
		t.Fatalf("usage = %+v", out.U)
	}
	key := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`)
	sameItem(t, a.get("Items", key), item)

	// Replace, returning the old item.
	item2 := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"S":"two"}}`)
	out, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: item2, ReturnValues: "ALL_OLD"})
	noErr(t, err)
	sameItem(t, out.Attributes, item)
	if out.ConsumedCapacity != nil || out.U.WriteUnits != 1 {
		t.Fatalf("consumed %+v usage %+v", out.ConsumedCapacity, out.U)
	}

	// GetItem: projection, capacity, missing item.
	g, err := e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Items", Key: key, ProjectionExpression: strPtr("#v"),
		ExpressionAttributeNames: map[string]string{"#v": "v"}, ReturnConsumedCapacity: "TOTAL"})
	noErr(t, err)
	sameItem(t, g.Item, itemOf(t, `{"v":{"S":"two"}}`))
	if g.ConsumedCapacity.CapacityUnits != 0.5 || g.U.ReadUnits != 0.5 {
		t.Fatalf("eventually consistent read: consumed %+v usage %+v", g.ConsumedCapacity, g.U)
	}
	g, err = e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Items", Key: key, AttributesToGet: []string{"pk"}, ConsistentRead: boolPtr(true)})
	noErr(t, err)
	sameItem(t, g.Item, itemOf(t, `{"pk":{"S":"a"}}`))
	if g.U.ReadUnits != 1 {
		t.Fatalf("consistent read usage %+v", g.U)
	}
	if got := a.get("Items", itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"2"}}`)); got != nil {
		t.Fatalf("missing item = %s", showItem(got))
	}

	// Capacity grows with size: a 2.5 KB item costs 3 write units.
	big := itemOf(t, `{"pk":{"S":"b"},"sk":{"S":"1"}}`)
	big["blob"] = attr.Str(strings.Repeat("x", 2500))
	out, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: big})
	noErr(t, err)
	if out.U.WriteUnits != 3 {
		t.Fatalf("2.5 KB put: %v units", out.U.WriteUnits)
	}
}

func TestItemValidation(t *testing.T) {
	env, a := itemTable(t)
	e := env.e
	put := func(item attr.Item) error {
		_, err := e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: item})
		return err
	}
	wantErr(t, put(itemOf(t, `{"pk":{"S":"a"}}`)), apierr.Validation, "Missing the key sk in the item")
	wantErr(t, put(itemOf(t, `{"pk":{"N":"1"},"sk":{"S":"a"}}`)), apierr.Validation, "Type mismatch for key pk expected: S actual: N")
	wantErr(t, put(itemOf(t, `{"pk":{"S":""},"sk":{"S":"a"}}`)), apierr.Validation, "empty string value")
	big := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`)
	big["blob"] = attr.Str(strings.Repeat("x", 400*1024))
	wantErr(t, put(big), apierr.Validation, "Item size has exceeded the maximum allowed size")
	long := itemOf(t, `{"sk":{"S":"1"}}`)
	long["pk"] = attr.Str(strings.Repeat("k", 2049))
	wantErr(t, put(long), apierr.Validation, "Size of hashkey has exceeded")

	_, err := e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"a"}}`)})
	wantErr(t, err, apierr.Validation, "The provided key element does not match the schema")
	_, err = e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"x":{"S":"1"}}`)})
	wantErr(t, err, apierr.Validation, "The provided key element does not match the schema")
	_, err = e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Nope", Key: itemOf(t, `{"pk":{"S":"a"}}`)})
	wantErr(t, err, apierr.ResourceNotFound, "Nope not found")

	// Expression and legacy parameters do not mix.
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`),
		ConditionExpression: strPtr("attribute_not_exists(pk)"), Expected: map[string]wire.ExpectedAttributeValue{"pk": {Exists: boolPtr(false)}}})
	wantErr(t, err, apierr.Validation, "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}")
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`),
		UpdateExpression: strPtr("SET a = :a"), ExpressionAttributeValues: map[string]attr.Value{":a": attr.Str("x")},
		AttributeUpdates: map[string]wire.AttributeValueUpdate{"b": {Action: "DELETE"}}})
	wantErr(t, err, apierr.Validation, "Non-expression parameters: {AttributeUpdates} Expression parameters: {UpdateExpression}")
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`),
		ExpressionAttributeValues: map[string]attr.Value{":a": attr.Str("x")}})
	wantErr(t, err, apierr.Validation, "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null")
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`),
		ConditionExpression: strPtr("attribute_exists(pk)"), ExpressionAttributeValues: map[string]attr.Value{":a": attr.Str("x")}})
	wantErr(t, err, apierr.Validation, "unused in expressions")

	// ReturnValues are checked per operation.
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`), ReturnValues: "ALL_NEW"})
	wantErr(t, err, apierr.Validation, "ReturnValues can only be ALL_OLD or NONE")
	_, err = e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`), ReturnValues: "UPDATED_OLD"})
	wantErr(t, err, apierr.Validation, "ReturnValues can only be ALL_OLD or NONE")
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`), ReturnValues: "SOME"})
	wantErr(t, err, apierr.Validation, "Member must satisfy enum value set")
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`), ReturnConsumedCapacity: "ALL"})
	wantErr(t, err, apierr.Validation, "returnConsumedCapacity")

	// Keys cannot be updated.
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`),
		UpdateExpression: strPtr("SET sk = :v"), ExpressionAttributeValues: map[string]attr.Value{":v": attr.Str("2")}})
	wantErr(t, err, apierr.Validation, "Cannot update attribute sk. This attribute is part of the key")

	// The operator has no data access.
	_, err = e.PutItem(testCtx, env.operator().scope("DescribeTable"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`)})
	wantErr(t, err, apierr.AccessDenied, "operator")
}

func TestConditionsAndReturnValues(t *testing.T) {
	env, a := itemTable(t)
	e := env.e
	key := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`)
	notExists := &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"N":"1"}}`), ConditionExpression: strPtr("attribute_not_exists(pk)")}
	_, err := e.PutItem(testCtx, a.scope("PutItem"), notExists)
	noErr(t, err)
	_, err = e.PutItem(testCtx, a.scope("PutItem"), notExists)
	ae := wantErr(t, err, apierr.ConditionalCheckFailed, "The conditional request failed")
	if ae.Detail != nil {
		t.Fatalf("detail without ALL_OLD: %#v", ae.Detail)
	}
	notExists.ReturnValuesOnConditionCheckFailure = "ALL_OLD"
	_, err = e.PutItem(testCtx, a.scope("PutItem"), notExists)
	ae = wantErr(t, err, apierr.ConditionalCheckFailed, "The conditional request failed")
	d, ok := ae.Detail.(*wire.ConditionalCheckFailedDetail)
	if !ok {
		t.Fatalf("detail = %#v", ae.Detail)
	}
	sameItem(t, d.Item, notExists.Item)

	// Legacy Expected.
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"N":"2"}}`),
		Expected: map[string]wire.ExpectedAttributeValue{"v": {Value: &attr.Value{Type: attr.N, N: attr.MustNumber("5")}}}})
	wantErr(t, err, apierr.ConditionalCheckFailed, "conditional request failed")
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"N":"2"},"w":{"S":"x"}}`),
		Expected: map[string]wire.ExpectedAttributeValue{"v": {Value: &attr.Value{Type: attr.N, N: attr.MustNumber("1")}}}})
	noErr(t, err)

	upd := func(in *wire.UpdateItemInput) *wire.UpdateItemOutput {
		t.Helper()
		in.TableName, in.Key = "Items", key
		out, err := e.UpdateItem(testCtx, a.scope("UpdateItem"), in)
		noErr(t, err)
		return out
	}
	out := upd(&wire.UpdateItemInput{UpdateExpression: strPtr("SET v = v + :one, x = :x"), ExpressionAttributeValues: map[string]attr.Value{":one": attr.Num(attr.MustNumber("1")), ":x": attr.Str("new")}, ReturnValues: "UPDATED_NEW"})
	sameItem(t, out.Attributes, itemOf(t, `{"v":{"N":"3"},"x":{"S":"new"}}`))
	out = upd(&wire.UpdateItemInput{UpdateExpression: strPtr("SET v = :v REMOVE w"), ExpressionAttributeValues: map[string]attr.Value{":v": attr.Num(attr.MustNumber("10"))}, ReturnValues: "UPDATED_OLD"})
	sameItem(t, out.Attributes, itemOf(t, `{"v":{"N":"3"},"w":{"S":"x"}}`))
	out = upd(&wire.UpdateItemInput{UpdateExpression: strPtr("ADD v :d"), ExpressionAttributeValues: map[string]attr.Value{":d": attr.Num(attr.MustNumber("-4"))}, ReturnValues: "ALL_NEW"})
	sameItem(t, out.Attributes, itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"N":"6"},"x":{"S":"new"}}`))
	out = upd(&wire.UpdateItemInput{UpdateExpression: strPtr("SET x = :x"), ExpressionAttributeValues: map[string]attr.Value{":x": attr.Str("newer")}, ReturnValues: "ALL_OLD"})
	sameItem(t, out.Attributes, itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"N":"6"},"x":{"S":"new"}}`))
	out = upd(&wire.UpdateItemInput{UpdateExpression: strPtr("SET x = :x"), ExpressionAttributeValues: map[string]attr.Value{":x": attr.Str("n")}})
	if out.Attributes != nil {
		t.Fatalf("NONE returned %s", showItem(out.Attributes))
	}
	// Legacy AttributeUpdates.
	out = upd(&wire.UpdateItemInput{AttributeUpdates: map[string]wire.AttributeValueUpdate{"v": {Action: "ADD", Value: &attr.Value{Type: attr.N, N: attr.MustNumber("1")}}}, ReturnValues: "UPDATED_NEW"})
	sameItem(t, out.Attributes, itemOf(t, `{"v":{"N":"7"}}`))

	// A failed update condition changes nothing.
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: key, UpdateExpression: strPtr("SET v = :z"),
		ConditionExpression: strPtr("v > :big"), ExpressionAttributeValues: map[string]attr.Value{":z": attr.Num(attr.MustNumber("0")), ":big": attr.Num(attr.MustNumber("100"))},
		ReturnValuesOnConditionCheckFailure: "ALL_OLD"})
	ae = wantErr(t, err, apierr.ConditionalCheckFailed, "conditional request failed")
	if d, ok := ae.Detail.(*wire.ConditionalCheckFailedDetail); !ok || d.Item["v"].N.String() != "7" {
		t.Fatalf("detail %#v", ae.Detail)
	}
	// An update that fails on the item's content is a ValidationException.
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: key, UpdateExpression: strPtr("ADD x :one"),
		ExpressionAttributeValues: map[string]attr.Value{":one": attr.Num(attr.MustNumber("1"))}})
	if apierr.KindOf(err) != apierr.Validation {
		t.Fatalf("ADD to a string: %v", err)
	}

	// UpdateItem on a missing item creates it.
	key2 := itemOf(t, `{"pk":{"S":"new"},"sk":{"S":"1"}}`)
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: key2, UpdateExpression: strPtr("SET c = :c"), ExpressionAttributeValues: map[string]attr.Value{":c": attr.Str("z")}})
	noErr(t, err)
	sameItem(t, a.get("Items", key2), itemOf(t, `{"pk":{"S":"new"},"sk":{"S":"1"},"c":{"S":"z"}}`))

	// DeleteItem with condition and ALL_OLD.
	_, err = e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Items", Key: key, ConditionExpression: strPtr("v = :v"), ExpressionAttributeValues: map[string]attr.Value{":v": attr.Num(attr.MustNumber("1"))}})
	wantErr(t, err, apierr.ConditionalCheckFailed, "conditional request failed")
	del, err := e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Items", Key: key, ReturnValues: "ALL_OLD", ReturnConsumedCapacity: "INDEXES"})
	noErr(t, err)
	if del.Attributes["v"].N.String() != "7" || del.ConsumedCapacity.Table == nil || del.ConsumedCapacity.Table.CapacityUnits != 1 {
		t.Fatalf("delete: attrs %s consumed %+v", showItem(del.Attributes), del.ConsumedCapacity)
	}
	if got := a.get("Items", key); got != nil {
		t.Fatalf("deleted item still there: %s", showItem(got))
	}
	// Deleting an absent item succeeds and costs a unit.
	del, err = e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Items", Key: key, ReturnValues: "ALL_OLD"})
	noErr(t, err)
	if del.Attributes != nil || del.U.WriteUnits != 1 {
		t.Fatalf("delete of absent item: %s %+v", showItem(del.Attributes), del.U)
	}
	if n, _ := a.counters("Items", 0); n != 1 {
		t.Fatalf("item count %d, want 1", n)
	}
}

func TestSharedTableTenantsSeeOwnItems(t *testing.T) {
	env, a := itemTable(t)
	b := env.tenant(tenancy.RoleApp)
	key := itemOf(t, `{"pk":{"S":"same"},"sk":{"S":"key"}}`)
	ia := itemOf(t, `{"pk":{"S":"same"},"sk":{"S":"key"},"owner":{"S":"a"}}`)
	ib := itemOf(t, `{"pk":{"S":"same"},"sk":{"S":"key"},"owner":{"S":"b"}}`)
	a.put("Items", ia)
	// b's conditional create succeeds: a's item does not exist for b.
	_, err := env.e.PutItem(testCtx, b.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: ib, ConditionExpression: strPtr("attribute_not_exists(pk)")})
	noErr(t, err)
	sameItem(t, a.get("Items", key), ia)
	sameItem(t, b.get("Items", key), ib)
	// Another environment of tenant a is another namespace.
	aTest := a
	aTest.p.Env = "test"
	if got := aTest.get("Items", key); got != nil {
		t.Fatalf("test env sees live item %s", showItem(got))
	}
	_, err = env.e.DeleteItem(testCtx, b.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Items", Key: key})
	noErr(t, err)
	sameItem(t, a.get("Items", key), ia)
	// A read-only key cannot write (the guard refuses to admit it).
	var g tenancy.Guard
	if _, err := g.Admit(a.as(tenancy.RoleRead).p, dynamo.ActionOf("PutItem")); apierr.KindOf(err) != apierr.AccessDenied {
		t.Fatalf("read role admitted for PutItem: %v", err)
	}
}

func TestLeadingKeys(t *testing.T) {
	env := openEnv(t)
	in := tableInput("Tickets", true)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "gpk", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "GSI1", KeySchema: []wire.KeySchemaElement{{AttributeName: "gpk", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "ALL"}}}
	in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "leading-keys"}, {Key: tenancy.TagLeadingKeyPattern, Value: "TENANT#{tenant}|*"}}
	d := env.operator().create(in)
	_ = d
	a := env.tenant(tenancy.RoleApp)
	b := env.tenant(tenancy.RoleApp)
	pa := "TENANT#" + a.p.Tenant.String() + "|"
	pb := "TENANT#" + b.p.Tenant.String() + "|"
	ok := itemOf(t, `{"pk":{"S":"`+pa+`T1"},"sk":{"S":"1"},"gpk":{"S":"`+pa+`open"}}`)
	a.put("Tickets", ok)
	e := env.e
	_, err := e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Tickets", Item: itemOf(t, `{"pk":{"S":"`+pb+`T1"},"sk":{"S":"1"}}`)})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Tickets", Item: itemOf(t, `{"pk":{"S":"`+pa+`T2"},"sk":{"S":"1"},"gpk":{"S":"`+pb+`open"}}`)})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = e.GetItem(testCtx, b.scope("GetItem"), &wire.GetItemInput{TableName: "Tickets", Key: itemOf(t, `{"pk":{"S":"`+pa+`T1"},"sk":{"S":"1"}}`)})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Tickets", Key: itemOf(t, `{"pk":{"S":"`+pa+`T1"},"sk":{"S":"1"}}`),
		UpdateExpression: strPtr("SET gpk = :g"), ExpressionAttributeValues: map[string]attr.Value{":g": attr.Str(pb + "x")}})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = e.DeleteItem(testCtx, b.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Tickets", Key: itemOf(t, `{"pk":{"S":"`+pa+`T1"},"sk":{"S":"1"}}`)})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = e.BatchWriteItem(testCtx, b.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{"Tickets": {{DeleteRequest: &wire.DeleteRequest{Key: itemOf(t, `{"pk":{"S":"`+pa+`T1"},"sk":{"S":"1"}}`)}}}}})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	_, err = e.TransactGetItems(testCtx, b.scope("TransactGetItems"), &wire.TransactGetItemsInput{TransactItems: []wire.TransactGetItem{{Get: &wire.Get{TableName: "Tickets", Key: itemOf(t, `{"pk":{"S":"`+pa+`T1"},"sk":{"S":"1"}}`)}}}})
	wantErr(t, err, apierr.AccessDenied, "LeadingKeys")
	sameItem(t, a.get("Tickets", itemOf(t, `{"pk":{"S":"`+pa+`T1"},"sk":{"S":"1"}}`)), ok)
}

func TestSiloTable(t *testing.T) {
	env := openEnv(t)
	in := tableInput("Silo", false)
	in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
	env.operator().create(in)
	a := env.tenant(tenancy.RoleApp)
	b := env.tenant(tenancy.RoleApp)
	a.put("Silo", itemOf(t, `{"pk":{"S":"k"},"who":{"S":"a"}}`))
	b.put("Silo", itemOf(t, `{"pk":{"S":"k"},"who":{"S":"b"}}`))
	if got := a.get("Silo", itemOf(t, `{"pk":{"S":"k"}}`)); got["who"].S != "a" {
		t.Fatalf("a reads %s", showItem(got))
	}
	// The items are not in the main store.
	lo, hi := keyspaceNS(a)
	it := env.db.NewIter(lo, hi)
	if it.First() {
		t.Fatalf("silo item in main store at %q", it.Key())
	}
	it.Close()
	if n := a.describe("Silo").ItemCount; n != 1 {
		t.Fatalf("silo count %d", n)
	}
	_, err := env.e.DeleteTable(testCtx, env.operator().scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Silo"})
	noErr(t, err)
	// The tenant's store stays (its other silo data would be there); the
	// table's data in it is gone.
	db, release, err := env.e.siloStoreOf(testCtx, a.p.Tenant)
	noErr(t, err)
	defer release()
	if db == nil {
		t.Fatal("the tenant's silo store is gone")
	}
	it = db.NewIter(lo, hi)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if k := it.Key(); !isCeiling(a.p.Tenant, k) {
			t.Fatalf("dropped silo table left %q in the tenant's store", k)
		}
	}
}

func TestLegacyDeleteOnMissingItem(t *testing.T) {
	env, a := itemTable(t)
	key := itemOf(t, `{"pk":{"S":"ghost"},"sk":{"S":"1"}}`)
	out, err := env.e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: key,
		AttributeUpdates: map[string]wire.AttributeValueUpdate{"x": {Action: "DELETE"}}, ReturnValues: "ALL_NEW"})
	noErr(t, err)
	if out.Attributes != nil || out.U.WriteUnits != 1 {
		t.Fatalf("attrs %s usage %+v", showItem(out.Attributes), out.U)
	}
	if got := a.get("Items", key); got != nil {
		t.Fatalf("DELETE-only update created %s", showItem(got))
	}
	// Without any update, UpdateItem creates the item from its key.
	_, err = env.e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: key})
	noErr(t, err)
	sameItem(t, a.get("Items", key), key)
}
