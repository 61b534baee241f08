package conformance

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestLegacyAndExpressionParameters: which legacy and expression
// parameters combine, as DynamoDB allows and refuses them; Select with
// projections; AttributesToGet: []; BETWEEN's arity in legacy filters; a
// Query filter on key attributes.
func TestLegacyAndExpressionParameters(t *testing.T) {
	_, c := start(t)
	sk := keyDef{"sk", "N"}
	createTable(t, c, "Mix", keyDef{"pk", "S"}, &sk, nil)
	tbl := aws.String("Mix")
	for i, x := range []string{"1", "2", "3"} {
		_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: tbl, Item: item("pk", S("a"), "sk", N(x), "x", N(x), "y", N("9"), "i", N(string(rune('0'+i))))})
		ok(t, err)
	}
	keyConds := map[string]types.Condition{"pk": {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{S("a")}}}
	vals := func(kv ...any) map[string]types.AttributeValue { return item(kv...) }

	// Accepted: KeyConditions with FilterExpression, ProjectionExpression, Select.
	out, err := c.Query(ctxT(t), &dynamodb.QueryInput{TableName: tbl, KeyConditions: keyConds,
		FilterExpression: aws.String("x > :v"), ProjectionExpression: aws.String("x"), ExpressionAttributeValues: vals(":v", N("1"))})
	ok(t, err)
	if out.Count != 2 || out.ScannedCount != 3 || len(out.Items[0]) != 1 {
		t.Fatalf("KeyConditions with FilterExpression and ProjectionExpression: count %d scanned %d items %v", out.Count, out.ScannedCount, out.Items)
	}
	out, err = c.Query(ctxT(t), &dynamodb.QueryInput{TableName: tbl, KeyConditions: keyConds, Select: types.SelectCount})
	ok(t, err)
	if out.Count != 3 || out.Items != nil {
		t.Fatalf("KeyConditions with Select COUNT: %d %v", out.Count, out.Items)
	}
	out, err = c.Query(ctxT(t), &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: vals(":p", S("a")), Select: types.SelectSpecificAttributes, ProjectionExpression: aws.String("y")})
	ok(t, err)
	if len(out.Items) != 3 || len(out.Items[0]) != 1 {
		t.Fatalf("SPECIFIC_ATTRIBUTES with ProjectionExpression: %v", out.Items)
	}

	mix := func(legacy, exprs string) string {
		return "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {" + legacy + "} Expression parameters: {" + exprs + "}"
	}
	for _, tc := range []struct {
		name string
		in   *dynamodb.QueryInput
		msg  string
	}{
		{"KeyConditions with KeyConditionExpression", &dynamodb.QueryInput{KeyConditions: keyConds, KeyConditionExpression: aws.String("pk = :p"),
			ExpressionAttributeValues: vals(":p", S("a"))}, mix("KeyConditions", "KeyConditionExpression")},
		{"QueryFilter with KeyConditionExpression", &dynamodb.QueryInput{KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: vals(":p", S("a")),
			QueryFilter: map[string]types.Condition{"x": {ComparisonOperator: types.ComparisonOperatorNotNull}}}, mix("QueryFilter", "KeyConditionExpression")},
		{"AttributesToGet with ProjectionExpression", &dynamodb.QueryInput{KeyConditions: keyConds, AttributesToGet: []string{"x"},
			ProjectionExpression: aws.String("x")}, mix("AttributesToGet", "ProjectionExpression")},
		{"AttributesToGet empty", &dynamodb.QueryInput{KeyConditions: keyConds, AttributesToGet: []string{}},
			"1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"SPECIFIC_ATTRIBUTES without projection", &dynamodb.QueryInput{KeyConditions: keyConds, Select: types.SelectSpecificAttributes},
			"Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"},
		{"ALL_ATTRIBUTES with ProjectionExpression", &dynamodb.QueryInput{KeyConditions: keyConds, Select: types.SelectAllAttributes, ProjectionExpression: aws.String("x")},
			"Cannot specify the ProjectionExpression when choosing to get ALL_ATTRIBUTES"},
		{"COUNT with AttributesToGet", &dynamodb.QueryInput{KeyConditions: keyConds, Select: types.SelectCount, AttributesToGet: []string{"x"}},
			"Cannot specify the AttributesToGet when choosing to get only the Count"},
		{"ALL_PROJECTED_ATTRIBUTES on the table", &dynamodb.QueryInput{KeyConditions: keyConds, Select: types.SelectAllProjectedAttributes},
			"ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"},
		{"filter on the sort key", &dynamodb.QueryInput{KeyConditions: keyConds, FilterExpression: aws.String("sk > :v"), ExpressionAttributeValues: vals(":v", N("1"))},
			"Filter Expression can only contain non-primary key attributes: Primary key attribute: sk"},
		{"filter on the partition key", &dynamodb.QueryInput{KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("begins_with(#k, :p)"),
			ExpressionAttributeNames: map[string]string{"#k": "pk"}, ExpressionAttributeValues: vals(":p", S("a"))},
			"Filter Expression can only contain non-primary key attributes: Primary key attribute: pk"},
		{"QueryFilter on the sort key", &dynamodb.QueryInput{KeyConditions: keyConds, QueryFilter: map[string]types.Condition{"sk": {ComparisonOperator: types.ComparisonOperatorNotNull}}},
			"QueryFilter can only contain non-primary key attributes: Primary key attribute: sk"},
		{"filter comparing an attribute with itself", &dynamodb.QueryInput{KeyConditions: keyConds, FilterExpression: aws.String("x = x")},
			"Invalid FilterExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: =, first operand: [x]"},
		{"BETWEEN with one value", &dynamodb.QueryInput{KeyConditions: keyConds, QueryFilter: map[string]types.Condition{"x": {ComparisonOperator: types.ComparisonOperatorBetween,
			AttributeValueList: []types.AttributeValue{N("1")}}}}, "The attempted filter operation is not supported for the provided filter argument count"},
		{"BETWEEN with three values", &dynamodb.QueryInput{KeyConditions: keyConds, QueryFilter: map[string]types.Condition{"x": {ComparisonOperator: types.ComparisonOperatorBetween,
			AttributeValueList: []types.AttributeValue{N("1"), N("2"), N("3")}}}}, "The attempted filter operation is not supported for the provided filter argument count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.TableName = tbl
			_, err := c.Query(ctxT(t), tc.in)
			wantErr(t, err, validation, tc.msg)
		})
	}

	// A filter comparing two different attributes is accepted.
	out, err = c.Query(ctxT(t), &dynamodb.QueryInput{TableName: tbl, KeyConditions: keyConds, FilterExpression: aws.String("x < y")})
	ok(t, err)
	if out.Count != 3 {
		t.Fatalf("x < y: count %d", out.Count)
	}
	_, err = c.Scan(ctxT(t), &dynamodb.ScanInput{TableName: tbl, AttributesToGet: []string{}})
	wantErr(t, err, validation, "1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1")
	_, err = c.Scan(ctxT(t), &dynamodb.ScanInput{TableName: tbl, ScanFilter: map[string]types.Condition{"x": {ComparisonOperator: types.ComparisonOperatorBetween,
		AttributeValueList: []types.AttributeValue{N("1")}}}})
	wantErr(t, err, validation, "The attempted filter operation is not supported for the provided filter argument count")
	_, err = c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S("a"), "sk", N("1")), AttributesToGet: []string{}})
	wantErr(t, err, validation, "1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1")
}

// TestFilterOnUnprojectedAttribute: a filter expression on a GSI that does
// not project the attribute it reads is not refused; the attribute is
// absent from what the index holds, so nothing matches.
func TestFilterOnUnprojectedAttribute(t *testing.T) {
	_, c := start(t)
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	_, err := c.CreateTable(ctxT(t), &dynamodb.CreateTableInput{TableName: aws.String("KeysOnly"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{s("pk"), s("g")},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}}}}})
	ok(t, err)
	harness.WaitActive(t, ctxT(t), c, "KeysOnly")
	_, err = c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: aws.String("KeysOnly"), Item: item("pk", S("a"), "g", S("x"), "secret", S("s"))})
	ok(t, err)
	out, err := c.Query(ctxT(t), &dynamodb.QueryInput{TableName: aws.String("KeysOnly"), IndexName: aws.String("byG"),
		KeyConditionExpression: aws.String("g = :g"), FilterExpression: aws.String("secret = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": S("x"), ":s": S("s")}})
	ok(t, err)
	if out.Count != 0 || out.ScannedCount != 1 {
		t.Fatalf("filter on an unprojected attribute: count %d scanned %d, want 0 1", out.Count, out.ScannedCount)
	}
}
