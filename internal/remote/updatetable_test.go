package remote_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestUpdateTableSettings: UpdateTable changes billing, throughput,
// deletion protection and table class on the remote backend, as the
// embedded engine validates and reports them, seen by DescribeTable;
// another tenant's same-named table is untouched.
func TestUpdateTableSettings(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { updateTableSettings(t, start(t)) })
	}
}

func updateTableSettings(t *testing.T, srv *harness.Server) {
	ctx := context.Background()
	a := srv.Client(srv.Default)
	b := srv.Client(srv.NewTenant(t, "ut-other", "admin"))
	createTable(t, a, "utab")
	createTable(t, b, "utab")
	upd := func(in *dynamodb.UpdateTableInput) error {
		in.TableName = aws.String("utab")
		_, err := a.UpdateTable(ctx, in)
		return err
	}
	describe := func(c *dynamodb.Client) *types.TableDescription {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("utab")})
		if err != nil {
			t.Fatal(err)
		}
		return out.Table
	}
	if err := upd(&dynamodb.UpdateTableInput{BillingMode: types.BillingModeProvisioned}); err == nil || !strings.Contains(err.Error(), "ProvisionedThroughput must be specified") {
		t.Errorf("PROVISIONED without throughput: %v", err)
	}
	if err := upd(&dynamodb.UpdateTableInput{BillingMode: types.BillingModeProvisioned,
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(7), WriteCapacityUnits: aws.Int64(3)}}); err != nil {
		t.Fatal(err)
	}
	d := describe(a)
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModeProvisioned ||
		aws.ToInt64(d.ProvisionedThroughput.ReadCapacityUnits) != 7 || aws.ToInt64(d.ProvisionedThroughput.WriteCapacityUnits) != 3 {
		t.Errorf("after the update: billing %+v, throughput %+v", d.BillingModeSummary, d.ProvisionedThroughput)
	}
	if err := upd(&dynamodb.UpdateTableInput{DeletionProtectionEnabled: aws.Bool(true), TableClass: types.TableClassStandardInfrequentAccess}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("utab")}); err == nil || !strings.Contains(err.Error(), "protected against deletion") {
		t.Errorf("DeleteTable of a protected table: %v", err)
	}
	if err := upd(&dynamodb.UpdateTableInput{TableClass: "COLD"}); err == nil || !strings.Contains(err.Error(), "ValidationException") {
		t.Errorf("a bad table class: %v", err)
	}
	if err := upd(&dynamodb.UpdateTableInput{DeletionProtectionEnabled: aws.Bool(false), BillingMode: types.BillingModePayPerRequest}); err != nil {
		t.Fatal(err)
	}
	if d := describe(a); d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest || len(d.GlobalSecondaryIndexes) != 0 {
		t.Errorf("back on demand: %+v, indexes %v", d.BillingModeSummary, d.GlobalSecondaryIndexes)
	}
	if d := describe(b); (d.BillingModeSummary != nil && d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest) || aws.ToBool(d.DeletionProtectionEnabled) {
		t.Errorf("LEAK: B's table of the same name changed: %+v", d)
	}
	if _, err := a.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("utab")}); err != nil {
		t.Errorf("DeleteTable after protection was turned off: %v", err)
	}
}

// TestUpdateTableCreatesIndex: a GSI created by UpdateTable on a table
// with items is CREATING (Backfilling) until every existing item has its
// entry, then ACTIVE; items written meanwhile are indexed by their
// writes; items without the index key are not; another tenant's table of
// the same name gets no index and its items never show in it. Deleting an
// index is refused as not served yet.
func TestUpdateTableCreatesIndex(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { updateTableCreatesIndex(t, start(t)) })
	}
}

func updateTableCreatesIndex(t *testing.T, srv *harness.Server) {
	ctx := context.Background()
	a := srv.Client(srv.Default)
	b := srv.Client(srv.NewTenant(t, "gsi-other", "admin"))
	createTable(t, a, "gtab")
	createTable(t, b, "gtab")
	put := func(c *dynamodb.Client, pk string, sk int, g string) {
		t.Helper()
		it := map[string]types.AttributeValue{"pk": s(pk), "sk": n(fmt.Sprint(sk))}
		if g != "" {
			it["g"] = s(g)
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("gtab"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	want := 0
	for i := range 250 {
		switch i % 3 {
		case 0:
			put(a, "p"+fmt.Sprint(i%7), i, "")
		case 1:
			put(a, "p"+fmt.Sprint(i%7), i, "x")
			want++
		default:
			put(a, "p"+fmt.Sprint(i%7), i, "y")
		}
		put(b, "p"+fmt.Sprint(i%7), i, "x")
	}
	out, err := a.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("gtab"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("byg"), KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.TableDescription.TableStatus != types.TableStatusUpdating || len(out.TableDescription.GlobalSecondaryIndexes) != 1 ||
		out.TableDescription.GlobalSecondaryIndexes[0].IndexStatus != types.IndexStatusCreating {
		t.Errorf("UpdateTable's answer: %s, %+v", out.TableDescription.TableStatus, out.TableDescription.GlobalSecondaryIndexes)
	}
	for i := range 10 {
		put(a, "new", i, "x") // indexed by the writes themselves
		want++
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		d, err := a.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("gtab")})
		if err != nil {
			t.Fatal(err)
		}
		g := d.Table.GlobalSecondaryIndexes[0]
		if g.IndexStatus == types.IndexStatusActive {
			if aws.ToBool(g.Backfilling) {
				t.Errorf("ACTIVE and Backfilling")
			}
			break
		}
		if g.IndexStatus != types.IndexStatusCreating || !aws.ToBool(g.Backfilling) {
			t.Fatalf("while backfilling: %s, Backfilling %v", g.IndexStatus, aws.ToBool(g.Backfilling))
		}
		if time.Now().After(deadline) {
			t.Fatal("the index is not ACTIVE after 60 s")
		}
	}
	got := 0
	in := &dynamodb.QueryInput{TableName: aws.String("gtab"), IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("x")}}
	for {
		q, err := a.Query(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got += int(q.Count)
		if len(q.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = q.LastEvaluatedKey
	}
	if got != want {
		t.Errorf("the index holds %d items with g = x, want %d (A's only)", got, want)
	}
	d, err := b.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("gtab")})
	if err != nil || len(d.Table.GlobalSecondaryIndexes) != 0 {
		t.Errorf("LEAK: B's table of the same name: %v, %v", d, err)
	}
	if _, err := b.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("gtab"), IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("x")}}); err == nil {
		t.Errorf("LEAK: B queries an index A created on its own table of the same name")
	}
	_, err = a.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("gtab"),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("byg")}}}})
	if err == nil || !strings.Contains(err.Error(), "not supported by the remote") {
		t.Errorf("deleting an index: %v, want it refused as not served", err)
	}
}
