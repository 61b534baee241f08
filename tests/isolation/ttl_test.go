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

// TestTTLIsolation checks that items expire only by their own table's TTL
// setting and their own tenant's values: on a shared table with TTL, each
// tenant's items under colliding keys expire by their own attribute; of
// two same-named tenant-owned tables, only the one whose owner enabled
// TTL loses items; and TTL settings are per tenant table. It waits for
// the server's TTL sweeper (10 s by default), so it runs in parallel.
func TestTTLIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	op := srv.Client(srv.Operator)
	a := srv.NewTenant(t, "ttl-a", "admin")
	b := srv.NewTenant(t, "ttl-b", "admin")
	A, B := srv.Client(a), srv.Client(b)

	create := func(c *dynamodb.Client, name string, ttl bool) {
		t.Helper()
		_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		if err != nil {
			t.Fatalf("CreateTable %s: %v", name, err)
		}
		if ttl {
			if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}}); err != nil {
				t.Fatalf("UpdateTimeToLive %s: %v", name, err)
			}
		}
	}
	create(op, "ttl_shared", true)
	create(A, "ttl_own", false)
	create(B, "ttl_own", true)
	create(B, "ttl_bonly", true)

	past := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	put := func(c *dynamodb.Client, table, pk, exp string) {
		t.Helper()
		it := map[string]types.AttributeValue{"pk": S(pk)}
		if exp != "" {
			it["exp"] = N(exp)
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatalf("PutItem %s %s: %v", table, pk, err)
		}
	}
	// Shared table, colliding keys: k1 expired for A only, k2 for B only.
	put(A, "ttl_shared", "k1", past)
	put(B, "ttl_shared", "k1", future)
	put(A, "ttl_shared", "k2", "")
	put(B, "ttl_shared", "k2", past)
	// Same-named tenant tables: only B enabled TTL.
	put(A, "ttl_own", "k1", past)
	put(B, "ttl_own", "k1", past)

	exists := func(c *dynamodb.Client, table, pk string) bool {
		t.Helper()
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": S(pk)}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("GetItem %s %s: %v", table, pk, err)
		}
		return out.Item != nil
	}

	t.Run("DescribeTimeToLive", func(t *testing.T) {
		status := func(c *dynamodb.Client, table string) (string, error) {
			out, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
			if err != nil {
				return "", err
			}
			return string(out.TimeToLiveDescription.TimeToLiveStatus) + " " + aws.ToString(out.TimeToLiveDescription.AttributeName), nil
		}
		if s, err := status(A, "ttl_own"); err != nil || s != "DISABLED " {
			t.Errorf("LEAK: A's DescribeTimeToLive of its own ttl_own: %q %v, want DISABLED (B enabled TTL on its own)", s, err)
		}
		if s, err := status(B, "ttl_own"); err != nil || s != "ENABLED exp" {
			t.Errorf("B's DescribeTimeToLive of ttl_own: %q %v", s, err)
		}
		_, eB := status(A, "ttl_bonly")
		_, eN := status(A, "ttl_never")
		if shape(eB, "ttl_bonly") != shape(eN, "ttl_never") {
			t.Errorf("LEAK: A's DescribeTimeToLive of B's table %q, of a never-existing one %q", shape(eB, "ttl_bonly"), shape(eN, "ttl_never"))
		}
		_, err := A.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("ttl_shared"),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(false)}})
		wantCode(t, err, "AccessDeniedException")
	})

	t.Run("expiry", func(t *testing.T) {
		// Wait until the sweeper has deleted both items it must delete.
		deadline := time.Now().Add(90 * time.Second)
		for exists(A, "ttl_shared", "k1") || exists(B, "ttl_shared", "k2") || exists(B, "ttl_own", "k1") {
			if time.Now().After(deadline) {
				t.Fatalf("TTL sweeper did not delete expired items within 90s: A shared k1 %v, B shared k2 %v, B own k1 %v",
					exists(A, "ttl_shared", "k1"), exists(B, "ttl_shared", "k2"), exists(B, "ttl_own", "k1"))
			}
			time.Sleep(250 * time.Millisecond)
		}
		if !exists(B, "ttl_shared", "k1") {
			t.Errorf("LEAK: B's unexpired k1 was deleted when A's k1 (same key) expired")
		}
		if !exists(A, "ttl_shared", "k2") {
			t.Errorf("LEAK: A's k2 (no TTL attribute) was deleted when B's k2 (same key) expired")
		}
		if !exists(A, "ttl_own", "k1") {
			t.Errorf("LEAK: A's item in its own ttl_own (TTL disabled) expired by B's TTL setting on B's ttl_own")
		}
	})
}
