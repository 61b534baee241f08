package isolation

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestFleetStorageIsolation attacks the storage metering and the gateway
// listing of a fleet of two gateways: tenant B's usage report, through
// either gateway, counts B's items only — not A's items in the same
// shared table under the same keys, nor A's own table of the same name —
// and equals a recount of B's items; B's keys cannot list the gateways
// (operator only, and the refusal names none); once A is deleted, no
// storage counter of A is left in the engine and B's are intact.
func TestFleetStorageIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	gws := f.Gateways
	ctx := context.Background()
	op := gws[0].Client(gws[0].Operator)
	if _, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("fleetst"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, op, "fleetst")
	aAdmin := gws[0].NewTenant(t, "st-victim", "admin")
	bAdmin := gws[1].NewTenant(t, "st-attacker", "admin")
	bApp := gws[1].NewKey(t, bAdmin.TenantID, "app")
	secret := strings.Repeat("S", 2000)

	// Both tenants own a table named "mine" (their own namespaces).
	for _, c := range []*dynamodb.Client{gws[0].Client(aAdmin), gws[1].Client(bAdmin)} {
		if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("mine"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}); err != nil {
			t.Fatal(err)
		}
	}
	putOn := func(c *dynamodb.Client, table, pk, v string) {
		t.Helper()
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}})
			if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "ResourceNotFound") {
				break
			}
		}
		if err != nil {
			t.Fatalf("put %s/%s: %v", table, pk, err)
		}
	}
	for i := range 8 {
		c := gws[i%2].Client(aAdmin)
		putOn(c, "fleetst", fmt.Sprintf("k-%d", i), secret)
		putOn(c, "mine", fmt.Sprintf("k-%d", i), secret)
	}
	// B's items under A's keys, in the same shared table and in its own "mine".
	putOn(gws[1].Client(bApp), "fleetst", "k-0", "b")
	putOn(gws[0].Client(bApp), "fleetst", "k-1", "b")
	putOn(gws[0].Client(bApp), "mine", "k-0", "b")

	recountOf := func(c *dynamodb.Client, table string) (items, bytes int64) {
		t.Helper()
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToInt64(out.Table.ItemCount), aws.ToInt64(out.Table.TableSizeBytes)
	}
	wantItems, wantBytes := int64(0), int64(0)
	for _, table := range []string{"fleetst", "mine"} {
		i, b := recountOf(gws[0].Client(bApp), table)
		wantItems, wantBytes = wantItems+i, wantBytes+b
	}
	if wantItems != 3 || wantBytes >= int64(len(secret)) {
		t.Fatalf("a recount of B's items: %d items, %d bytes", wantItems, wantBytes)
	}
	for gi, g := range gws {
		var r client.UsageReport
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, body := rawAdmin(t, ctx, g.Endpoint, "GET", "/v1/tenants/"+bAdmin.TenantID+"/usage", bAdmin.Key, "")
			if st != http.StatusOK {
				t.Fatalf("gateway %d: B's own usage: %d %s", gi, st, body)
			}
			if strings.Contains(body, aAdmin.TenantID) {
				t.Errorf("LEAK: gateway %d: B's usage report names A", gi)
			}
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatal(err)
			}
			if r.Items == wantItems && r.StorageBytes == wantBytes {
				break
			}
			if r.StorageBytes >= int64(len(secret)) {
				t.Fatalf("LEAK: gateway %d: B's storage counts A's items: %+v", gi, r.Storage)
			}
			if time.Now().After(deadline) {
				t.Fatalf("gateway %d: B's storage %d items, %d bytes; a recount of B's items %d, %d", gi, r.Items, r.StorageBytes, wantItems, wantBytes)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// The fleet's listing is the operator's.
	for gi, g := range gws {
		st, body := rawAdmin(t, ctx, g.Endpoint, "GET", "/v1/gateways", gws[0].Operator.Key, "")
		var gl client.GatewaysResult
		if st != http.StatusOK || json.Unmarshal([]byte(body), &gl) != nil || len(gl.Gateways) != 2 {
			t.Fatalf("gateway %d: the operator's GET /v1/gateways: %d %s", gi, st, body)
		}
		for _, cred := range []harness.Credential{bAdmin, bApp} {
			st, got := rawAdmin(t, ctx, g.Endpoint, "GET", "/v1/gateways", cred.Key, "")
			if st != http.StatusForbidden {
				t.Errorf("LEAK: gateway %d: GET /v1/gateways with B's key: %d %s, want 403", gi, st, got)
			}
			for _, gw := range gl.Gateways {
				if strings.Contains(got, gw.ID) || strings.Contains(got, gw.Endpoint) {
					t.Errorf("LEAK: gateway %d: the refusal names a gateway: %s", gi, got)
				}
			}
		}
	}

	// A deleted: none of its counters stays in the engine; B's do.
	statOf := func(tenant string) int {
		t.Helper()
		id, err := tenancy.ParseTenantID(tenant)
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.EngineClient(t).Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(f.EngineTable()),
			KeyConditionExpression:    aws.String("#p = :p"),
			ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "stat#" + hex.EncodeToString(keyspace.Tenant(id))}},
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Items)
	}
	if n := statOf(aAdmin.TenantID); n != 2 {
		t.Fatalf("A's storage counters before its deletion: %d, want 2 (its two tables)", n)
	}
	putOn(gws[1].Client(aAdmin), "fleetst", "late", secret) // a delta pending on the other gateway
	if _, err := gws[0].Admin().DeleteTenant(ctx, aAdmin.TenantID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // every gateway flushed
	if n := statOf(aAdmin.TenantID); n != 0 {
		t.Errorf("A's storage counters after its deletion: %d left in the engine", n)
	}
	if n := statOf(bAdmin.TenantID); n != 2 {
		t.Errorf("B's storage counters after A's deletion: %d, want 2", n)
	}
}
