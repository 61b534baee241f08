package conformance

import (
	"bytes"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestItemRoundTripAllTypes(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	createTable(t, c, "Items", keyDef{"pk", "S"}, &keyDef{"sk", "N"}, nil)

	in := item(
		"pk", S("user#1"), "sk", N("10"),
		"s", S("héllo \"world\"\n"),
		"n", N("12345678901234567890123456789012345678"),
		"small", N("-0.000000000000000000000000000000000000001"),
		"b", B([]byte{0, 1, 2, 255}),
		"t", &types.AttributeValueMemberBOOL{Value: true},
		"z", &types.AttributeValueMemberNULL{Value: true},
		"m", &types.AttributeValueMemberM{Value: item("x", N("1"), "y", &types.AttributeValueMemberL{Value: []types.AttributeValue{S("a"), N("2")}})},
		"ss", &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns", &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs", &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
	)
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Items"), Item: in}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Items"), Key: item("pk", S("user#1"), "sk", N("10")), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Item
	if len(got) != len(in) {
		t.Fatalf("got %d attributes, want %d: %v", len(got), len(in), got)
	}
	if str(got["s"]) != "héllo \"world\"\n" || str(got["n"]) != "12345678901234567890123456789012345678" {
		t.Errorf("s=%q n=%q", str(got["s"]), str(got["n"]))
	}
	if str(got["small"]) != "-0.000000000000000000000000000000000000001" {
		t.Errorf("small = %q", str(got["small"]))
	}
	if b := got["b"].(*types.AttributeValueMemberB).Value; !bytes.Equal(b, []byte{0, 1, 2, 255}) {
		t.Errorf("b = %v", b)
	}
	m := got["m"].(*types.AttributeValueMemberM).Value
	if str(m["x"]) != "1" || len(m["y"].(*types.AttributeValueMemberL).Value) != 2 {
		t.Errorf("m = %v", m)
	}
	if len(got["ss"].(*types.AttributeValueMemberSS).Value) != 2 || len(got["bs"].(*types.AttributeValueMemberBS).Value) != 2 {
		t.Errorf("sets = %v %v", got["ss"], got["bs"])
	}

	// A missing item: no Item member.
	out, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Items"), Key: item("pk", S("nobody"), "sk", N("1"))})
	if err != nil || out.Item != nil {
		t.Errorf("GetItem of a missing item: %v, %v", out.Item, err)
	}
}

func TestUpdateDeleteConditional(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	createTable(t, c, "Items", keyDef{"pk", "S"}, nil, nil)
	key := item("pk", S("a"))

	// Conditional put that must succeed once and then fail.
	put := &dynamodb.PutItemInput{TableName: aws.String("Items"), Item: item("pk", S("a"), "v", N("1")),
		ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if _, err := c.PutItem(ctx, put); err != nil {
		t.Fatal(err)
	}
	put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	_, err := c.PutItem(ctx, put)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second conditional put: %v, want ConditionalCheckFailedException", err)
	}
	if str(ccf.Item["v"]) != "1" {
		t.Errorf("ConditionalCheckFailedException.Item = %v, want the old item", ccf.Item)
	}

	up, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Items"), Key: key,
		UpdateExpression:          aws.String("SET v = v + :d, tags = list_append(if_not_exists(tags, :empty), :t) ADD cnt :one"),
		ExpressionAttributeValues: item(":d", N("41"), ":empty", &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, ":t", &types.AttributeValueMemberL{Value: []types.AttributeValue{S("x")}}, ":one", N("1")),
		ReturnValues:              types.ReturnValueAllNew})
	if err != nil {
		t.Fatal(err)
	}
	if str(up.Attributes["v"]) != "42" || str(up.Attributes["cnt"]) != "1" {
		t.Errorf("UpdateItem ALL_NEW = %v", up.Attributes)
	}

	del, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("Items"), Key: key,
		ConditionExpression: aws.String("v = :v"), ExpressionAttributeValues: item(":v", N("42")),
		ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		t.Fatal(err)
	}
	if str(del.Attributes["v"]) != "42" {
		t.Errorf("DeleteItem ALL_OLD = %v", del.Attributes)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Items"), Key: key})
	if err != nil || out.Item != nil {
		t.Errorf("after delete: %v %v", out.Item, err)
	}
}

func TestValidationErrors(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	createTable(t, c, "Items", keyDef{"pk", "S"}, nil, nil)
	for name, in := range map[string]*dynamodb.PutItemInput{
		"missing key":   {TableName: aws.String("Items"), Item: item("x", S("1"))},
		"key type":      {TableName: aws.String("Items"), Item: item("pk", N("1"))},
		"empty set":     {TableName: aws.String("Items"), Item: item("pk", S("a"), "s", &types.AttributeValueMemberSS{Value: []string{}})},
		"duplicate set": {TableName: aws.String("Items"), Item: item("pk", S("a"), "s", &types.AttributeValueMemberSS{Value: []string{"x", "x"}})},
		"bad number":    {TableName: aws.String("Items"), Item: item("pk", S("a"), "n", N("1e400"))},
		"unused value": {TableName: aws.String("Items"), Item: item("pk", S("a")),
			ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeValues: item(":unused", S("x"))},
		"bad expression": {TableName: aws.String("Items"), Item: item("pk", S("a")), ConditionExpression: aws.String("pk ==")},
		"item too large": {TableName: aws.String("Items"), Item: item("pk", S("a"), "big", S(string(make([]byte, 400*1024+1))))},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.PutItem(ctx, in)
			wantCode(t, err, "ValidationException")
		})
	}
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Nope"), Item: item("pk", S("a"))})
	wantCode(t, err, "ResourceNotFoundException")
}
