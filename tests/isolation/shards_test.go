package isolation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestShardIsolation attacks the reads of sharded collections on a
// gateway over the remote backend: tenant B, whose table of the same
// name is spread over 8 shards like A's, replays A's page tokens, forges
// tokens naming physical partitions or shards, and reads every parallel
// scan segment; it must only ever see and count its own items. Changing
// shard counts is the operator's alone (the admin-routes attacks).
func TestShardIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a gateway and its engine")
	}
	srv := harness.Start(t, harness.Options{Remote: true})
	ctx := context.Background()
	credA, credB := srv.NewTenant(t, "shard-a", "admin"), srv.NewTenant(t, "shard-b", "admin")
	a, b := srv.Client(credA), srv.Client(credB)
	for _, cr := range []harness.Credential{credA, credB} {
		if _, err := srv.Admin().SetShards(ctx, cr.TenantID, client.ShardRequest{Shards: 8}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*dynamodb.Client{a, b} {
		_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String("iso_shard"),
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
			},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName:  aws.String("byg"),
				KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			}},
			BillingMode: types.BillingModePayPerRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sv := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for i := range 40 {
		// The same keys in both tenants: only the owner's value may show.
		for c, owner := range map[*dynamodb.Client]string{a: "A", b: "B"} {
			if i%2 == 1 && owner == "B" {
				continue // B has fewer items: a count of A's would show
			}
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("iso_shard"), Item: map[string]types.AttributeValue{
				"pk": sv(fmt.Sprintf("p%d", i)), "sk": sv("s"), "g": sv("g"), "owner": sv(owner)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := srv.Admin().Shards(ctx, credB.TenantID)
	if err != nil || len(st.Tables) != 1 || st.Tables[0].Shards != 8 {
		t.Fatalf("B's layout: %+v, %v", st, err)
	}
	only := func(label string, items []map[string]types.AttributeValue) {
		for _, it := range items {
			if o := it["owner"].(*types.AttributeValueMemberS).Value; o != "B" {
				t.Errorf("%s: B read %s's item %v", label, o, it["pk"])
			}
		}
	}
	// A's page tokens, replayed by B, only position B within its own items.
	var tokensA []map[string]types.AttributeValue
	q := &dynamodb.ScanInput{TableName: aws.String("iso_shard"), Limit: aws.Int32(7)}
	for {
		o, err := a.Scan(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if o.LastEvaluatedKey == nil {
			break
		}
		for k := range o.LastEvaluatedKey {
			if strings.HasPrefix(k, "tenantdb:") {
				t.Fatalf("a page token names a physical attribute: %v", o.LastEvaluatedKey)
			}
		}
		tokensA = append(tokensA, o.LastEvaluatedKey)
		q.ExclusiveStartKey = o.LastEvaluatedKey
	}
	for _, tok := range tokensA {
		o, err := b.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("iso_shard"), ExclusiveStartKey: tok})
		if err != nil {
			t.Fatal(err)
		}
		only("scan after A's token", o.Items)
		o2, err := b.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("iso_shard"), IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": sv("g")}, ExclusiveStartKey: map[string]types.AttributeValue{"pk": tok["pk"], "sk": tok["sk"], "g": sv("g")}})
		if err != nil {
			t.Fatal(err)
		}
		only("index query after A's token", o2.Items)
	}
	// Forged tokens naming a physical partition or a shard are refused.
	for _, forged := range []map[string]types.AttributeValue{
		{"pk": sv("p0"), "sk": sv("s"), "tenantdb:pk": sv("00#1#3")},
		{"pk": sv("p0"), "sk": sv("s"), "tenantdb:shard": &types.AttributeValueMemberN{Value: "3"}},
		{"pk": sv("p0"), "sk": sv("s"), "shard": &types.AttributeValueMemberN{Value: "3"}},
		{"tenantdb:pk": sv("00#1#3"), "tenantdb:sk": &types.AttributeValueMemberB{Value: []byte{1}}},
	} {
		_, err := b.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("iso_shard"), ExclusiveStartKey: forged})
		if err == nil || !strings.Contains(err.Error(), "ValidationException") {
			t.Errorf("forged token %v: %v, want a ValidationException", forged, err)
		}
		_, err = b.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("iso_shard"), IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": sv("g")}, ExclusiveStartKey: forged})
		if err == nil || !strings.Contains(err.Error(), "ValidationException") {
			t.Errorf("forged index token %v: %v, want a ValidationException", forged, err)
		}
	}
	// Every segment of a parallel scan, and counts, are B's own.
	total := 0
	for seg := range int32(10) {
		o, err := b.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("iso_shard"), Segment: aws.Int32(seg), TotalSegments: aws.Int32(10)})
		if err != nil {
			t.Fatal(err)
		}
		only(fmt.Sprintf("segment %d", seg), o.Items)
		total += int(o.Count)
	}
	cnt, err := b.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("iso_shard"), Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	gcnt, err := b.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("iso_shard"), IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": sv("g")}, Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("iso_shard")})
	if err != nil {
		t.Fatal(err)
	}
	if total != 20 || cnt.Count != 20 || gcnt.Count != 20 || aws.ToInt64(d.Table.ItemCount) != 20 {
		t.Errorf("B counts %d (segments), %d (scan), %d (index), %d (describe); it has 20 items", total, cnt.Count, gcnt.Count, aws.ToInt64(d.Table.ItemCount))
	}
	// B's admin key cannot change or read A's shards (nor its own: the
	// operator's alone).
	bc := &client.Client{Endpoint: srv.Endpoint, Key: credB.Key}
	if _, err := bc.SetShards(ctx, credA.TenantID, client.ShardRequest{Shards: 1}); err == nil {
		t.Error("B's admin key changed A's shards")
	}
	if _, err := bc.Shards(ctx, credB.TenantID); err == nil {
		t.Error("B's admin key read shard layouts")
	}
}
