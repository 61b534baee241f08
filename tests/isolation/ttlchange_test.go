package isolation

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestTTLChangeIsolation: tenant B turning TTL on and off on its own table
// of the same name as A's never changes how A's items expire. On the
// remote backend each change runs a job over the table's collections
// (copying or removing the engine's TTL copies): B's jobs must not reach
// A's collection — A's items written while A's TTL is on still expire
// after B disabled TTL on its table, and A's items in a table without
// TTL never expire after B enabled TTL on its own.
func TestTTLChangeIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	a := srv.NewTenant(t, "ttlc-a", "admin")
	b := srv.NewTenant(t, "ttlc-b", "admin")
	A, B := srv.Client(a), srv.Client(b)
	create := func(c *dynamodb.Client, name string) {
		t.Helper()
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatalf("CreateTable %s: %v", name, err)
		}
	}
	ttl := func(c *dynamodb.Client, name string, on bool) {
		t.Helper()
		if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(on)}}); err != nil {
			t.Fatalf("UpdateTimeToLive %s %v: %v", name, on, err)
		}
	}
	put := func(c *dynamodb.Client, name, pk, exp string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name),
			Item: map[string]types.AttributeValue{"pk": S(pk), "exp": N(exp)}}); err != nil {
			t.Fatalf("PutItem %s %s: %v", name, pk, err)
		}
	}
	exists := func(c *dynamodb.Client, name, pk string) bool {
		t.Helper()
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: map[string]types.AttributeValue{"pk": S(pk)}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("GetItem %s %s: %v", name, pk, err)
		}
		return out.Item != nil
	}
	disabled := func(c *dynamodb.Client, name string) bool {
		t.Helper()
		out, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return out.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusDisabled
	}

	// ttlc_on: A's TTL on, B's turned on and then off.
	create(A, "ttlc_on")
	create(B, "ttlc_on")
	ttl(A, "ttlc_on", true)
	ttl(B, "ttlc_on", true)
	soon := strconv.FormatInt(time.Now().Add(5*time.Second).Unix(), 10)
	put(A, "ttlc_on", "k", soon)
	put(B, "ttlc_on", "k", soon)
	ttl(B, "ttlc_on", false)
	// ttlc_off: A's TTL off, B's on; A's item long expired.
	create(A, "ttlc_off")
	create(B, "ttlc_off")
	past := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	put(A, "ttlc_off", "k", past)
	ttl(B, "ttlc_off", true)
	put(B, "ttlc_off", "k", past)

	for deadline := time.Now().Add(60 * time.Second); !disabled(B, "ttlc_on"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("B's ttlc_on still not DISABLED after 60 s")
		}
	}
	if !disabled(A, "ttlc_off") {
		t.Errorf("LEAK: A's ttlc_off reports TTL after B enabled TTL on its own ttlc_off")
	}
	deadline := time.Now().Add(90 * time.Second)
	for exists(A, "ttlc_on", "k") || exists(B, "ttlc_off", "k") {
		if time.Now().After(deadline) {
			t.Fatalf("not expired within 90 s: A's ttlc_on k %v (B disabled TTL on its own ttlc_on), B's ttlc_off k %v",
				exists(A, "ttlc_on", "k"), exists(B, "ttlc_off", "k"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !exists(A, "ttlc_off", "k") {
		t.Errorf("LEAK: A's item in its ttlc_off (TTL disabled) expired after B enabled TTL on its own ttlc_off")
	}
	if !exists(B, "ttlc_on", "k") {
		t.Errorf("B's item expired after B disabled TTL on ttlc_on (the same key expired in A's table)")
	}
}

// TestPhysicalNames: a tenant naming a backend's physical attributes in
// an update (on the remote backend, the key of an index slot, which would
// file the item under an index partition of its choice, or the engine's
// TTL copy) gains nothing: it is refused, or (on a backend without such
// attributes) stores a plain attribute; another tenant's index query
// shows only its own items either way.
func TestPhysicalNames(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	a := srv.NewTenant(t, "phys-a", "admin")
	b := srv.NewTenant(t, "phys-b", "admin")
	A, B := srv.Client(a), srv.Client(b)
	for _, c := range []*dynamodb.Client{A, B} {
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String("phys"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byg"),
				KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
			BillingMode: types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := A.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("phys"), Item: map[string]types.AttributeValue{"pk": S("a1"), "g": S("x")}}); err != nil {
		t.Fatal(err)
	}
	past := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	for _, name := range []string{"tenantdb:x1p", "tenantdb:x1s", "tenantdb:ttl", "tenantdb:v"} {
		val := S("x")
		if name == "tenantdb:ttl" {
			val = N(past)
		}
		_, err := B.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("phys"),
			Key:                       map[string]types.AttributeValue{"pk": S("b-" + name)},
			UpdateExpression:          aws.String("SET #n = :v, g = :g"),
			ExpressionAttributeNames:  map[string]string{"#n": name},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": val, ":g": S("x")}})
		if srv.Remote {
			wantCode(t, err, "ValidationException")
		}
	}
	out, err := A.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("phys"), IndexName: aws.String("byg"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 || out.Items[0]["pk"].(*types.AttributeValueMemberS).Value != "a1" {
		t.Errorf("LEAK: A's index query shows %v, want only A's a1", out.Items)
	}
}
