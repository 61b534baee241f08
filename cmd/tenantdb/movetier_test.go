package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestTenantMoveSetsTier: `tenant move ID --to silo` (every shared table)
// moves the tenant's data and then sets its tier to silo, which `tenant
// show` reports; a shared table created afterwards holds the tenant's
// data in its silo store from its first write (another tenant's stays in
// the pool); `tenant moves` lists the table moves and the tier's; `--to
// pool` sets everything back.
func TestTenantMoveSetsTier(t *testing.T) {
	srv := harness.Start(t)
	if srv.Remote {
		t.Skip("a gateway over a remote engine has no silo stores")
	}
	ctx := context.Background()
	op := srv.Client(srv.Operator)
	create := func(name string) {
		t.Helper()
		_, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}})
		if err != nil {
			t.Fatal(err)
		}
		harness.WaitActive(t, ctx, op, name)
	}
	put := func(c *dynamodb.Client, table, k string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: k}}}); err != nil {
			t.Fatal(err)
		}
	}
	create("Orders")
	a, b := srv.NewTenant(t, "tier-mover", "app"), srv.NewTenant(t, "tier-stayer", "app")
	da, db := srv.Client(a), srv.Client(b)
	for i := range 50 {
		put(da, "Orders", fmt.Sprintf("a%d", i))
		put(db, "Orders", fmt.Sprintf("b%d", i))
	}
	show := func(c harness.Credential) client.Tenant {
		t.Helper()
		var tn client.Tenant
		if err := json.Unmarshal([]byte(tcli(t, srv, srv.Operator.Key, "tenant", "show", c.TenantID, "--json")), &tn); err != nil {
			t.Fatal(err)
		}
		return tn
	}
	store := func(tn client.Tenant, table string) string {
		for _, p := range tn.Placement {
			if p.Table == table && p.Env == "" {
				return p.Store
			}
		}
		return "none"
	}
	move := func(to string) {
		t.Helper()
		var ms []client.TenantMove
		out := tcli(t, srv, srv.Operator.Key, "tenant", "move", a.TenantID, "--to", to, "--json")
		if err := json.Unmarshal([]byte(out), &ms); err != nil {
			t.Fatalf("tenant move output %q: %v", out, err)
		}
		tier := false
		for _, m := range ms {
			if m.Phase != "done" || m.To != to {
				t.Fatalf("move to %s: %+v", to, m)
			}
			tier = tier || m.Tier == to
		}
		if !tier {
			t.Fatalf("move to %s: no tier move in %+v", to, ms)
		}
	}

	move("silo")
	tn := show(a)
	if tn.Tier != "silo" || store(tn, "Orders") != "silo" {
		t.Fatalf("after the move to silo: tier %q, Orders in %q", tn.Tier, store(tn, "Orders"))
	}
	if tb := show(b); tb.Tier != "pool" || store(tb, "Orders") != "pool" {
		t.Fatalf("the other tenant: tier %q, Orders in %q", tb.Tier, store(tb, "Orders"))
	}

	// A shared table created now: a's data in its silo store from the
	// first write, b's in the pool.
	create("Later")
	put(da, "Later", "first")
	put(db, "Later", "first")
	if s := store(show(a), "Later"); s != "silo" {
		t.Fatalf("a's data of the table created after the move is in %q, want silo", s)
	}
	if s := store(show(b), "Later"); s != "pool" {
		t.Fatalf("b's data of the new table is in %q, want pool", s)
	}
	got, err := da.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Later"), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "first"}}})
	if err != nil || got.Item == nil {
		t.Fatalf("a's item of the new table: %v, %v", got, err)
	}
	moves := tcli(t, srv, srv.Operator.Key, "tenant", "moves", a.TenantID)
	if !strings.Contains(moves, "(tier)") || !strings.Contains(moves, "Orders") {
		t.Fatalf("tenant moves:\n%s", moves)
	}

	// Back: both shared tables move to the pool and the tier follows.
	move("pool")
	tn = show(a)
	if tn.Tier != "pool" || store(tn, "Orders") != "pool" || store(tn, "Later") != "pool" {
		t.Fatalf("after the move to pool: tier %q, Orders in %q, Later in %q", tn.Tier, store(tn, "Orders"), store(tn, "Later"))
	}
	n := 0
	p := dynamodb.NewScanPaginator(da, &dynamodb.ScanInput{TableName: aws.String("Orders"), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if k := it["pk"].(*types.AttributeValueMemberS).Value; !strings.HasPrefix(k, "a") {
				t.Fatalf("a sees %q", k)
			}
			n++
		}
	}
	if n != 50 {
		t.Fatalf("a has %d items of Orders, want 50", n)
	}
}
