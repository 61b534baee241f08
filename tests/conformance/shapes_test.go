package conformance

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestUpdateItemOnMissingItem: an update that only removes attributes or
// deletes from sets creates nothing on a missing item and returns nothing
// (DynamoDB's exception to UpdateItem's upsert); an update with no action
// at all creates the item with its key, as DynamoDB does; an invalid
// nested path is refused as on an existing item (our decision: the update
// is checked against the empty item first); ALL_NEW returns the key
// attributes when only they remain.
func TestUpdateItemOnMissingItem(t *testing.T) {
	srv, c := start(t)
	createTable(t, c, "Upd", keyDef{"pk", "S"}, nil, nil)
	tbl := aws.String("Upd")
	get := func(pk string) map[string]types.AttributeValue {
		t.Helper()
		out, err := c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S(pk)), ConsistentRead: aws.Bool(true)})
		ok(t, err)
		return out.Item
	}
	update := func(pk, expr string, vals map[string]types.AttributeValue) (*dynamodb.UpdateItemOutput, error) {
		in := &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S(pk)), ReturnValues: types.ReturnValueAllNew, ExpressionAttributeValues: vals}
		if expr != "" {
			in.UpdateExpression = aws.String(expr)
		}
		return c.UpdateItem(ctxT(t), in)
	}

	out, err := update("remove", "REMOVE x, y", nil)
	ok(t, err)
	if out.Attributes != nil || get("remove") != nil {
		t.Fatalf("REMOVE on a missing item: returned %v, stored %v", out.Attributes, get("remove"))
	}
	out, err = update("delete", "DELETE s :v", map[string]types.AttributeValue{":v": &types.AttributeValueMemberSS{Value: []string{"a"}}})
	ok(t, err)
	if out.Attributes != nil || get("delete") != nil {
		t.Fatalf("DELETE on a missing item: returned %v, stored %v", out.Attributes, get("delete"))
	}
	if !srv.Remote { // the remote backend does not serve AttributeUpdates (README)
		_, err = c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("legacy")),
			AttributeUpdates: map[string]types.AttributeValueUpdate{"x": {Action: types.AttributeActionDelete}}})
		ok(t, err)
		if get("legacy") != nil {
			t.Fatalf("AttributeUpdates DELETE on a missing item stored %v", get("legacy"))
		}
	}
	_, err = update("nested", "REMOVE m.n", nil)
	wantErr(t, err, validation, "The document path provided in the update expression is invalid for update")
	if get("nested") != nil {
		t.Fatal("a refused REMOVE stored an item")
	}

	out, err = update("empty", "", nil)
	ok(t, err)
	if len(out.Attributes) != 1 || len(get("empty")) != 1 {
		t.Fatalf("update without actions: returned %v, stored %v", out.Attributes, get("empty"))
	}
	out, err = update("mixed", "SET a = :v REMOVE x", map[string]types.AttributeValue{":v": N("1")})
	ok(t, err)
	if len(out.Attributes) != 2 {
		t.Fatalf("SET and REMOVE on a missing item: %v", out.Attributes)
	}
	out, err = update("mixed", "REMOVE a", nil)
	ok(t, err)
	if len(out.Attributes) != 1 || str(out.Attributes["pk"]) != "mixed" || len(get("mixed")) != 1 {
		t.Fatalf("ALL_NEW with only the key left: returned %v, stored %v", out.Attributes, get("mixed"))
	}
	_, err = c.TransactWriteItems(ctxT(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: tbl, Key: item("pk", S("tx")), UpdateExpression: aws.String("REMOVE x")}}}})
	ok(t, err)
	if get("tx") != nil {
		t.Fatalf("a transaction's REMOVE on a missing item stored %v", get("tx"))
	}
}

// TestDeleteTableDescription: DeleteTable answers the table's name, ARN,
// id, statistics, throughput and billing with status DELETING, without the
// key schema, attribute definitions, indexes or creation time (which
// members DynamoDB keeps is our reading of its answers).
func TestDeleteTableDescription(t *testing.T) {
	_, c := start(t)
	createTable(t, c, "Gone", keyDef{"pk", "S"}, nil, map[string][2]*keyDef{"byG": {{"g", "S"}, nil}})
	out, err := c.DeleteTable(ctxT(t), &dynamodb.DeleteTableInput{TableName: aws.String("Gone")})
	ok(t, err)
	d := out.TableDescription
	if d.TableStatus != types.TableStatusDeleting || aws.ToString(d.TableName) != "Gone" || d.TableArn == nil || d.TableId == nil ||
		d.ItemCount == nil || d.TableSizeBytes == nil || d.ProvisionedThroughput == nil || d.BillingModeSummary == nil {
		t.Fatalf("DeleteTable description lacks members: %+v", d)
	}
	if d.KeySchema != nil || d.AttributeDefinitions != nil || d.GlobalSecondaryIndexes != nil || d.CreationDateTime != nil {
		t.Fatalf("DeleteTable description has members DynamoDB leaves out: %+v", d)
	}
}

// TestBillingModeSummary: LastUpdateToPayPerRequestDateTime is the time a
// table became on-demand, at creation or by UpdateTable, and stays after
// it goes back to provisioned.
func TestBillingModeSummary(t *testing.T) {
	srv, c := start(t)
	if srv.Remote {
		t.Skip("remote backend: UpdateTable is not served yet (README)")
	}
	before := time.Now().Add(-time.Second)
	createTable(t, c, "OnDemand", keyDef{"pk", "S"}, nil, nil)
	desc := func(name string) *types.BillingModeSummary {
		out, err := c.DescribeTable(ctxT(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		ok(t, err)
		return out.Table.BillingModeSummary
	}
	if b := desc("OnDemand"); b.LastUpdateToPayPerRequestDateTime == nil || b.LastUpdateToPayPerRequestDateTime.Before(before) {
		t.Fatalf("on-demand table: %+v", b)
	}
	_, err := c.CreateTable(ctxT(t), &dynamodb.CreateTableInput{TableName: aws.String("Prov"),
		AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}})
	ok(t, err)
	harness.WaitActive(t, ctxT(t), c, "Prov")
	if b := desc("Prov"); b.BillingMode != types.BillingModeProvisioned || b.LastUpdateToPayPerRequestDateTime != nil {
		t.Fatalf("provisioned table: %+v", b)
	}
	switched := time.Now().Add(-time.Second)
	_, err = c.UpdateTable(ctxT(t), &dynamodb.UpdateTableInput{TableName: aws.String("Prov"), BillingMode: types.BillingModePayPerRequest})
	ok(t, err)
	harness.WaitActive(t, ctxT(t), c, "Prov")
	b := desc("Prov")
	if b.BillingMode != types.BillingModePayPerRequest || b.LastUpdateToPayPerRequestDateTime == nil || b.LastUpdateToPayPerRequestDateTime.Before(switched) {
		t.Fatalf("after the switch to on-demand: %+v", b)
	}
	at := *b.LastUpdateToPayPerRequestDateTime
	_, err = c.UpdateTable(ctxT(t), &dynamodb.UpdateTableInput{TableName: aws.String("Prov"), BillingMode: types.BillingModeProvisioned,
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}})
	ok(t, err)
	harness.WaitActive(t, ctxT(t), c, "Prov")
	if b := desc("Prov"); b.BillingMode != types.BillingModeProvisioned || b.LastUpdateToPayPerRequestDateTime == nil || !b.LastUpdateToPayPerRequestDateTime.Equal(at) {
		t.Fatalf("back to provisioned: %+v", b)
	}
}
