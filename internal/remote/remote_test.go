package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// These tests drive a gateway over a stand-in engine (a second
// in-process tenantdb, reached with a tenant credential through the AWS
// shared-credentials chain) through the DynamoDB API only.

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func createTable(t testing.TB, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// engines returns the engines to run a test against: the tenantdb
// stand-in and, when it is installed, dynalite (without transactions,
// which dynalite lacks).
func engines(t *testing.T, transactions bool) map[string]func(t *testing.T) *harness.Server {
	m := map[string]func(t *testing.T) *harness.Server{
		"tenantdb": func(t *testing.T) *harness.Server { return harness.Start(t, harness.Options{Remote: true}) },
	}
	if !transactions {
		m["dynalite"] = func(t *testing.T) *harness.Server {
			return harness.Start(t, harness.Options{Remote: true, RemoteEngine: harness.StartDynalite(t)})
		}
	}
	return m
}

func TestItemsQueriesAndIsolation(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { itemsQueriesAndIsolation(t, start(t)) })
	}
}

func itemsQueriesAndIsolation(t *testing.T, srv *harness.Server) {
	ctx := context.Background()
	a := srv.Client(srv.Default)
	b := srv.Client(srv.NewTenant(t, "other", "admin"))
	createTable(t, a, "tbl")
	createTable(t, b, "tbl") // the same name, another tenant: another table

	for i := range 10 {
		for _, pk := range []string{"x", "xy", "y"} {
			if _, err := a.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("tbl"),
				Item: map[string]types.AttributeValue{"pk": s(pk), "sk": n(fmt.Sprint(i - 5)), "v": s("a")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := b.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("tbl"),
		Item: map[string]types.AttributeValue{"pk": s("x"), "sk": n("0"), "v": s("b")}}); err != nil {
		t.Fatal(err)
	}

	// Key conditions on the sort key, over a prefix-sharing partition key.
	for _, c := range []struct {
		cond string
		want int
	}{
		{"pk = :p", 10}, {"pk = :p AND sk = :v", 1}, {"pk = :p AND sk < :v", 6}, {"pk = :p AND sk <= :v", 7},
		{"pk = :p AND sk > :v", 3}, {"pk = :p AND sk >= :v", 4}, {"pk = :p AND sk BETWEEN :lo AND :v", 3},
	} {
		vals := map[string]types.AttributeValue{":p": s("x")}
		if c.cond != "pk = :p" {
			vals[":v"] = n("1")
		}
		if c.want == 3 && c.cond[len(c.cond)-3:] == " :v" && len(c.cond) > 30 {
			vals[":lo"] = n("-1")
		}
		out, err := a.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("tbl"), KeyConditionExpression: aws.String(c.cond), ExpressionAttributeValues: vals})
		if err != nil {
			t.Fatalf("%s: %v", c.cond, err)
		}
		if int(out.Count) != c.want {
			t.Errorf("%s: %d items, want %d", c.cond, out.Count, c.want)
		}
		for _, it := range out.Items {
			if it["pk"].(*types.AttributeValueMemberS).Value != "x" || len(it) != 3 {
				t.Errorf("%s: item %v", c.cond, it)
			}
		}
	}

	// DynamoDB's key-condition errors, not the engine's on physical keys.
	for _, cond := range []string{"pk = :p AND begins_with(sk, :v)", "pk = :p AND sk BETWEEN :v AND :lo"} {
		_, err := a.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("tbl"), KeyConditionExpression: aws.String(cond),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("x"), ":v": n("1"), ":lo": n("-1")}})
		if err == nil || !strings.Contains(err.Error(), "ValidationException") || strings.Contains(err.Error(), "tenantdb") {
			t.Errorf("%s: %v, want DynamoDB's ValidationException", cond, err)
		}
	}

	// A scan pages through the tenant's own items only, with logical page tokens.
	var got int
	var start map[string]types.AttributeValue
	for {
		out, err := b.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("tbl"), Limit: aws.Int32(1), ExclusiveStartKey: start})
		if err != nil {
			t.Fatal(err)
		}
		got += int(out.Count)
		for k := range out.LastEvaluatedKey {
			if k != "pk" && k != "sk" {
				t.Fatalf("page token %v names a physical attribute", out.LastEvaluatedKey)
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	if got != 1 {
		t.Errorf("tenant b scanned %d items, want its 1", got)
	}
	out, err := a.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("tbl")})
	if err != nil || out.Count != 30 {
		t.Errorf("tenant a scan: %v items, %v; want 30", out.Count, err)
	}

	// Conditional writes are the engine's.
	_, err = a.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("tbl"),
		Item:                map[string]types.AttributeValue{"pk": s("x"), "sk": n("0")},
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Errorf("conditional put on an existing item: %v", err)
	}
	// A key attribute cannot be updated, and an update creating an item stores its key.
	if _, err := a.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("tbl"), Key: map[string]types.AttributeValue{"pk": s("x"), "sk": n("0")},
		UpdateExpression: aws.String("SET pk = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("z")}}); err == nil {
		t.Error("an update of the partition key succeeded")
	}
	up, err := a.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("tbl"), Key: map[string]types.AttributeValue{"pk": s("new"), "sk": n("1")},
		UpdateExpression: aws.String("ADD c :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}, ReturnValues: types.ReturnValueAllNew})
	if err != nil || len(up.Attributes) != 3 {
		t.Fatalf("update creating an item: %v, %v", up, err)
	}
}

// TestCountersAreExact: concurrent increments, in transactions and in
// UpdateItem, on one item are exact: the engine's writes decide them (the
// gateway holds no lock). Several gateways are a later stage's test.
func TestCountersAreExact(t *testing.T) {
	ctx := context.Background()
	srv := harness.Start(t, harness.Options{Remote: true})
	c := srv.Client(srv.Default)
	createTable(t, c, "ctr")
	key := map[string]types.AttributeValue{"pk": s("k"), "sk": n("0")}
	var wg sync.WaitGroup
	const workers, each = 8, 10
	errs := make(chan error, workers*each)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{TableName: aws.String("ctr"), Key: key, UpdateExpression: aws.String("ADD n :one"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}},
				}})
				if err != nil {
					var tce *types.TransactionCanceledException
					if errors.As(err, &tce) {
						continue // a conflict: retried below by counting
					}
					errs <- err
				}
				if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("ctr"), Key: key,
					UpdateExpression: aws.String("ADD m :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ctr"), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if m := out.Item["m"].(*types.AttributeValueMemberN).Value; m != fmt.Sprint(workers*each) {
		t.Errorf("m = %s, want %d", m, workers*each)
	}
}

// TestIndexKeyUpdatesAreExact: updates that move a GSI key are computed
// by the gateway and committed over the version they read; concurrent
// ones lose nothing, and the index holds only the item's current key.
func TestIndexKeyUpdatesAreExact(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { indexKeyUpdatesAreExact(t, start(t)) })
	}
}

func indexKeyUpdatesAreExact(t *testing.T, srv *harness.Server) {
	ctx := context.Background()
	c := srv.Client(srv.Default)
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("idx"),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byg"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("gk"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"pk": s("k")}
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("idx"), Key: key,
					UpdateExpression:          aws.String("SET gk = :g ADD n :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":g": s(fmt.Sprintf("g%d-%d", w, i)), ":one": n("1")}})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("idx"), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Item["n"].(*types.AttributeValueMemberN).Value; got != fmt.Sprint(workers*each) {
		t.Errorf("n = %s, want %d: an update was lost", got, workers*each)
	}
	g := out.Item["gk"].(*types.AttributeValueMemberS).Value
	q, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("idx"), IndexName: aws.String("byg")})
	if err != nil {
		t.Fatal(err)
	}
	if q.Count != 1 || q.Items[0]["gk"].(*types.AttributeValueMemberS).Value != g || len(q.Items[0]) != 2 {
		t.Errorf("the index holds %v, want only the current key %s (keys only)", q.Items, g)
	}
	// A condition that fails is the client's, not a conflict.
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("idx"), Key: key,
		UpdateExpression: aws.String("SET gk = :g"), ConditionExpression: aws.String("n = :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("x"), ":zero": n("0")}})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Errorf("failed condition: %v, want ConditionalCheckFailedException", err)
	}
}
