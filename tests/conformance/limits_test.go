package conformance

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// DynamoDB's limits on attribute names, nesting, expressions, key values
// and transactions, at their exact boundaries. Where DynamoDB's wording is
// not documented, the message pinned here is tenantdb's decision and the
// test says so.

const validation = "ValidationException"

// TestAttributeNameLimits: a non-key attribute name may have up to 65,535
// bytes, none may be empty. (DynamoDB refuses 65,536 with a message that
// names the limit and refuses empty names; both texts are our wording.)
func TestAttributeNameLimits(t *testing.T) {
	_, c := start(t)
	createTable(t, c, "Names", keyDef{"pk", "S"}, nil, nil)
	tbl := aws.String("Names")
	long := strings.Repeat("n", 65535)
	ok(t, putErr(t, c, item("pk", S("a"), long, S("x"))))
	got, err := c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S("a")),
		ProjectionExpression: aws.String("#n"), ExpressionAttributeNames: map[string]string{"#n": long}})
	ok(t, err)
	if str(got.Item[long]) != "x" {
		t.Fatalf("65,535-byte name: got %v", got.Item)
	}

	tooLong := long + "n"
	const msgLong = "One or more parameter values were invalid: Attribute name has exceeded the maximum size limit of 65535 bytes"
	const msgEmpty = "One or more parameter values were invalid: An attribute name cannot be empty"
	wantErr(t, putErr(t, c, item("pk", S("a"), tooLong, S("x"))), validation, msgLong)
	wantErr(t, putErr(t, c, item("pk", S("a"), "", S("x"))), validation, msgEmpty)
	_, err = c.BatchWriteItem(ctxT(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"Names": {{PutRequest: &types.PutRequest{Item: item("pk", S("a"), "", S("x"))}}}}})
	wantErr(t, err, validation, msgEmpty)
	_, err = c.TransactWriteItems(ctxT(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: tbl, Item: item("pk", S("a"), tooLong, S("x"))}}}})
	wantErr(t, err, validation, msgLong)

	_, err = c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("a")),
		UpdateExpression: aws.String("SET #n = :v"), ExpressionAttributeNames: map[string]string{"#n": tooLong},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": S("x")}})
	wantErr(t, err, validation, "ExpressionAttributeNames contains invalid value: Attribute name has exceeded the maximum size limit of 65535 bytes for key #n")
	_, err = c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S("a")),
		ProjectionExpression: aws.String("#n"), ExpressionAttributeNames: map[string]string{"#n": ""}})
	wantErr(t, err, validation, "ExpressionAttributeNames contains invalid value: An attribute name cannot be empty for key #n")
}

func putErr(t *testing.T, c *dynamodb.Client, it map[string]types.AttributeValue) error {
	t.Helper()
	_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: aws.String("Names"), Item: it})
	return err
}

// TestKeyNameLimits: names in key schemas, attribute definitions and a
// projection's NonKeyAttributes have at most 255 bytes; the errors are the
// request constraint's, at the member that breaks it (DynamoDB reports the
// length before any inconsistency between the members).
func TestKeyNameLimits(t *testing.T) {
	srv, c := start(t)
	n255, n256 := strings.Repeat("k", 255), strings.Repeat("k", 256)
	def := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	ks := func(h string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(h), KeyType: types.KeyTypeHash}}
	}
	gsi := func(h string, p *types.Projection) []types.GlobalSecondaryIndex {
		return []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"), KeySchema: ks(h), Projection: p}}
	}
	all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
	create := func(name string, defs []types.AttributeDefinition, key []types.KeySchemaElement, g []types.GlobalSecondaryIndex) error {
		_, err := c.CreateTable(ctxT(t), &dynamodb.CreateTableInput{TableName: aws.String(name), AttributeDefinitions: defs,
			KeySchema: key, GlobalSecondaryIndexes: g, BillingMode: types.BillingModePayPerRequest})
		return err
	}
	ok(t, create("Long255", []types.AttributeDefinition{def(n255), def("g" + n255[1:])}, ks(n255), gsi("g"+n255[1:], all)))
	harness.WaitActive(t, ctxT(t), c, "Long255")
	_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: aws.String("Long255"), Item: item(n255, S("a"), "g"+n255[1:], S("b"))})
	ok(t, err)

	tooLong := func(field string) string {
		return "1 validation error detected: Value '" + n256 + "' at '" + field + "' failed to satisfy constraint: Member must have length less than or equal to 255"
	}
	wantErr(t, create("Long256", []types.AttributeDefinition{def(n256)}, ks(n256), nil), validation,
		tooLong("attributeDefinitions.1.member.attributeName"))
	wantErr(t, create("Long256", []types.AttributeDefinition{def("pk")}, ks(n256), nil), validation,
		tooLong("keySchema.1.member.attributeName"))
	wantErr(t, create("Long256", []types.AttributeDefinition{def("pk"), def("g")}, ks("pk"), gsi(n256, all)), validation,
		tooLong("globalSecondaryIndexes.1.member.keySchema.1.member.attributeName"))

	// Empty names: the request constraint's minimum length; an absent
	// name is "Value null" (sent raw, as the SDK refuses it client-side).
	tooShort := func(field string) string {
		return "1 validation error detected: Value '' at '" + field + "' failed to satisfy constraint: Member must have length greater than or equal to 1"
	}
	wantErr(t, create("Empty", []types.AttributeDefinition{def("")}, ks("pk"), nil), validation,
		tooShort("attributeDefinitions.1.member.attributeName"))
	wantErr(t, create("Empty", []types.AttributeDefinition{def("pk")}, ks(""), nil), validation,
		tooShort("keySchema.1.member.attributeName"))
	wantErr(t, create("Empty", []types.AttributeDefinition{def("pk"), def("g")}, ks("pk"), gsi("", all)), validation,
		tooShort("globalSecondaryIndexes.1.member.keySchema.1.member.attributeName"))
	status, body := rawBody(t, srv, "DynamoDB_20120810.CreateTable", `{"TableName":"Null","BillingMode":"PAY_PER_REQUEST",`+
		`"AttributeDefinitions":[{"AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`)
	if want := "Value null at 'attributeDefinitions.1.member.attributeName' failed to satisfy constraint: Member must not be null"; status != 400 || !strings.Contains(body, want) {
		t.Errorf("absent attribute name: got %d %s, want 400 with %q", status, body, want)
	}

	include := func(names ...string) *types.Projection {
		return &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: names}
	}
	ok(t, create("Include255", []types.AttributeDefinition{def("pk"), def("g")}, ks("pk"), gsi("g", include(n255))))
	// NB: the wording of a constraint on a list's members.
	listErr := func(list string) string {
		return "1 validation error detected: Value '[" + list + "]' at 'globalSecondaryIndexes.1.member.projection.nonKeyAttributes' failed to satisfy constraint: " +
			"Member must satisfy constraint: [Member must have length less than or equal to 255, Member must have length greater than or equal to 1]"
	}
	wantErr(t, create("Include256", []types.AttributeDefinition{def("pk"), def("g")}, ks("pk"), gsi("g", include("a", n256))), validation, listErr("a, "+n256))
	wantErr(t, create("Include0", []types.AttributeDefinition{def("pk"), def("g")}, ks("pk"), gsi("g", include(""))), validation, listErr(""))
}

// nested returns a value of depth containers (L or M) around a string.
func nested(kind string, depth int) types.AttributeValue {
	var v types.AttributeValue = S("x")
	for i := 0; i < depth; i++ {
		if kind == "L" {
			v = &types.AttributeValueMemberL{Value: []types.AttributeValue{v}}
		} else {
			v = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": v}}
		}
	}
	return v
}

// TestNestingBoundary: a top-level attribute's value may hold 32 levels of
// lists or maps, not 33; lists and maps count alike. DynamoDB documents
// "up to 32 levels" without saying where the count starts: the boundary is
// our decision (attr.MaxDepth), the message DynamoDB's. A document path
// may address anything a document can hold, the value at depth 32 (a path
// of 33 elements), and no deeper; that message is our wording.
func TestNestingBoundary(t *testing.T) {
	_, c := start(t)
	createTable(t, c, "Deep", keyDef{"pk", "S"}, nil, nil)
	tbl := aws.String("Deep")
	const msg = "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
	for _, kind := range []string{"L", "M"} {
		_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: tbl, Item: item("pk", S(kind), "d", nested(kind, 33))})
		wantErr(t, err, validation, msg)
		_, err = c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: tbl, Item: item("pk", S(kind), "d", nested(kind, 32))})
		ok(t, err)
	}
	path := func(n int) string { return "d" + strings.Repeat(".a", n) }
	// An update may not set a value deeper than a document can be.
	setAt := func(v types.AttributeValue) error {
		_, err := c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("M")), UpdateExpression: aws.String("SET " + path(31) + " = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": v}})
		return err
	}
	ok(t, setAt(nested("M", 1)))
	wantErr(t, setAt(nested("M", 2)), validation, msg)
	ok(t, setAt(nested("M", 1)))
	got, err := c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S("M")), ProjectionExpression: aws.String(path(32))})
	ok(t, err)
	if len(got.Item) != 1 {
		t.Fatalf("projection of the deepest value: got %v", got.Item)
	}
	_, err = c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S("M")), ProjectionExpression: aws.String(path(33))})
	wantErr(t, err, validation, "Invalid ProjectionExpression: The document path has too many nesting levels; nesting levels: 33")
	_, err = c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("M")), UpdateExpression: aws.String("REMOVE " + path(33))})
	wantErr(t, err, validation, "Invalid UpdateExpression: The document path has too many nesting levels; nesting levels: 33")
	_, err = c.DeleteItem(ctxT(t), &dynamodb.DeleteItemInput{TableName: tbl, Key: item("pk", S("M")), ConditionExpression: aws.String("attribute_exists(" + path(33) + ")")})
	wantErr(t, err, validation, "Invalid ConditionExpression: The document path has too many nesting levels; nesting levels: 33")
}

// TestExpressionLength: any expression may have 4,096 bytes, not 4,097.
func TestExpressionLength(t *testing.T) {
	srv, c := start(t)
	createTable(t, c, "Exprs", keyDef{"pk", "S"}, nil, nil)
	tbl := aws.String("Exprs")
	_, err := c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S("a")), ProjectionExpression: aws.String(strings.Repeat("x", 4096))})
	ok(t, err)
	_, err = c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S("a")), ProjectionExpression: aws.String(strings.Repeat("x", 4097))})
	wantErr(t, err, validation, "Invalid ProjectionExpression: Expression size has exceeded the maximum allowed size; expression size: 4097")
	if srv.Remote {
		// NB: a gateway adds the key attributes to an update expression
		// it sends on, so its clients' update and condition expressions
		// have less than 4,096 bytes (README, remote backend).
		t.Log("remote backend: update expressions of 4,096 bytes exceed the engine's limit once the gateway adds the key")
		return
	}
	spaces := strings.Repeat(" ", 4087) // "SET" + spaces + "a = :v" is 4,096 bytes
	_, err = c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("a")),
		UpdateExpression: aws.String("SET" + spaces + "a = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": N("1")}})
	ok(t, err)
	_, err = c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("a")),
		UpdateExpression: aws.String("SET " + spaces + "a = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": N("1")}})
	wantErr(t, err, validation, "Invalid UpdateExpression: Expression size has exceeded the maximum allowed size; expression size: 4097")
	_, err = c.Query(ctxT(t), &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("pk = :p"),
		FilterExpression: aws.String("a" + spaces + "     = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": S("a"), ":v": N("1")}})
	wantErr(t, err, validation, "Invalid FilterExpression: Expression size has exceeded the maximum allowed size; expression size: 4097")
}

// TestIndexKeySizeLimits: an index's partition key value over 2,048 bytes
// or sort key value over 1,024 bytes is refused on write, however the
// item is written.
func TestIndexKeySizeLimits(t *testing.T) {
	srv, c := start(t)
	if srv.Remote {
		t.Skip("remote backend: an index key's encoding must fit the engine's 1,024-byte sort key of an index slot (README, remote backend)")
	}
	createTable(t, c, "IxKeys", keyDef{"pk", "S"}, nil, map[string][2]*keyDef{"byGH": {{"gh", "S"}, {"gr", "B"}}})
	tbl := aws.String("IxKeys")
	const hashMsg = "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
	const rangeMsg = "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
	put := func(gh string, gr []byte) error {
		_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: tbl, Item: item("pk", S("a"), "gh", S(gh), "gr", B(gr))})
		return err
	}
	ok(t, put(strings.Repeat("h", 2048), make([]byte, 1024)))
	wantErr(t, put(strings.Repeat("h", 2049), make([]byte, 1)), validation, hashMsg)
	wantErr(t, put("h", make([]byte, 1025)), validation, rangeMsg)
	update := func(v types.AttributeValue, name string) error {
		_, err := c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("a")),
			UpdateExpression: aws.String("SET " + name + " = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": v}})
		return err
	}
	wantErr(t, update(S(strings.Repeat("h", 2049)), "gh"), validation, hashMsg)
	wantErr(t, update(B(make([]byte, 1025)), "gr"), validation, rangeMsg)
	_, err := c.TransactWriteItems(ctxT(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: tbl, Item: item("pk", S("b"), "gh", S(strings.Repeat("h", 2049)))}}}})
	wantErr(t, err, validation, hashMsg)
	_, err = c.BatchWriteItem(ctxT(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"IxKeys": {{PutRequest: &types.PutRequest{Item: item("pk", S("b"), "gr", B(make([]byte, 1025)))}}}}})
	wantErr(t, err, validation, rangeMsg)
}

// TestTransactionSizeLimit: the items of one TransactWriteItems may
// aggregate 4 MB, not more. The message is DynamoDB's as its clients
// report it; what counts is our decision (each Put's item, each other
// action's key: what the request carries).
func TestTransactionSizeLimit(t *testing.T) {
	srv, c := start(t)
	if srv.Remote {
		t.Skip("remote backend: the gateway's physical attributes count against the engine's 4 MB, so the client's limit is lower (README, remote backend)")
	}
	createTable(t, c, "BigTx", keyDef{"pk", "S"}, nil, nil)
	tx := func(n, size int) error {
		var items []types.TransactWriteItem
		for i := 0; i < n; i++ {
			pk := string(rune('a' + i))
			items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String("BigTx"),
				Item: item("pk", S(pk), "v", S(strings.Repeat("v", size-len("pk")-len(pk)-len("v"))))}})
		}
		_, err := c.TransactWriteItems(ctxT(t), &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	}
	ok(t, tx(16, 256<<10)) // exactly 4 MB
	wantErr(t, tx(11, 390<<10), validation, "Transaction request cannot be larger than 4 MB")
}
