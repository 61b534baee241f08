package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// aggShow runs `tenantdb aggregate show --json` with key.
func aggShow(t *testing.T, srv *harness.Server, key, tenant, name string) client.Aggregate {
	t.Helper()
	var a client.Aggregate
	out := qcli(t, srv, key, false, "aggregate", "show", "--tenant", tenant, "--name", name, "--json")
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("aggregate show --json printed %q: %v", out, err)
	}
	return a
}

// waitGroups polls show until the groups are want (count and sums, as
// "count/sum" per group) and returns the last answer.
func waitGroups(t *testing.T, srv *harness.Server, key, tenant, name string, want map[string]string) client.Aggregate {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := aggShow(t, srv, key, tenant, name)
		got := map[string]string{}
		for k, g := range a.Groups {
			c := "-"
			if g.Count != nil {
				c = fmt.Sprint(*g.Count)
			}
			got[k] = c + "/" + g.Sum["amount"]
		}
		if a.State == "ready" && fmt.Sprint(got) == fmt.Sprint(want) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("aggregate %s: groups %v (state %s, error %q), want %v", name, got, a.State, a.Error, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAggregateCLI: a tenant admin defines an aggregate on a table with
// the CLI; it counts the items already there, follows puts, updates that
// move an item between groups, deletes and transactions, with exact
// decimal sums; the materialised items are read with GetItem and not
// counted; rebuild, list and delete work; every change is audited.
func TestAggregateCLI(t *testing.T) {
	srv := harness.Start(t)
	ctx := context.Background()
	admin := srv.NewTenant(t, "agg", "admin")
	db := srv.Client(admin)
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
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
	put := func(id, status, amount string) {
		t.Helper()
		it := map[string]types.AttributeValue{"pk": s("ORDER#" + id), "sk": s("A"), "status": s(status), "amount": n(amount), "kind": s("order")}
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	put("1", "OPEN", "10.25")
	put("2", "OPEN", "99999999999999999999999999999999999999")
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"),
		Item: map[string]types.AttributeValue{"pk": s("NOTE#1"), "sk": s("A"), "status": s("OPEN"), "amount": n("1"), "kind": s("note")}}); err != nil {
		t.Fatal(err)
	}

	out := qcli(t, srv, admin.Key, false, "aggregate", "create", "--tenant", admin.TenantID, "--table", "orders", "--name", "by-status",
		"--group-by", "status", "--where", "kind = :k", "--values", `{":k": {"S": "order"}}`, "--count", "--sum", "amount",
		"--item", "pk=AGG", "--item", "sk=STATUS#{group}", "--json")
	var created client.Aggregate
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Name != "by-status" || created.GroupBy != "status" || !created.Count {
		t.Fatalf("create printed %q (%v)", out, err)
	}
	waitGroups(t, srv, admin.Key, admin.TenantID, "by-status", map[string]string{"OPEN": "2/100000000000000000000000000000000000009.25"})

	// MODIFY moves order 1 to CLOSED; order 3 arrives; order 2 is deleted;
	// a transaction closes 3 and re-opens 1.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("orders"),
		Key:                       map[string]types.AttributeValue{"pk": s("ORDER#1"), "sk": s("A")},
		UpdateExpression:          aws.String("SET #s = :c"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": s("CLOSED")}}); err != nil {
		t.Fatal(err)
	}
	put("3", "OPEN", "0.1")
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("orders"),
		Key: map[string]types.AttributeValue{"pk": s("ORDER#2"), "sk": s("A")}}); err != nil {
		t.Fatal(err)
	}
	waitGroups(t, srv, admin.Key, admin.TenantID, "by-status", map[string]string{"OPEN": "1/0.1", "CLOSED": "1/10.25"})
	tx := func(id, status string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String("orders"),
			Key:                       map[string]types.AttributeValue{"pk": s("ORDER#" + id), "sk": s("A")},
			UpdateExpression:          aws.String("SET #s = :v"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(status)}}}
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{tx("3", "CLOSED"), tx("1", "OPEN")}}); err != nil {
		t.Fatal(err)
	}
	a := waitGroups(t, srv, admin.Key, admin.TenantID, "by-status", map[string]string{"OPEN": "1/10.25", "CLOSED": "1/0.1"})
	if a.Cursor == "" || a.Applied == 0 {
		t.Errorf("show: cursor %q, applied %d", a.Cursor, a.Applied)
	}

	// The materialised items, read as the application reads them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("orders"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": s("AGG"), "sk": s("STATUS#CLOSED")}})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := g.Item["count"].(*types.AttributeValueMemberN)
		sum, _ := g.Item["sum_amount"].(*types.AttributeValueMemberN)
		if c != nil && sum != nil && c.Value == "1" && sum.Value == "0.1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("materialised item AGG/STATUS#CLOSED = %v", g.Item)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Rebuild gives the same groups; list shows the aggregate.
	out = qcli(t, srv, admin.Key, false, "aggregate", "rebuild", "--tenant", admin.TenantID, "by-status", "--json")
	if !strings.Contains(out, `"name": "by-status"`) {
		t.Fatalf("rebuild printed %q", out)
	}
	deadline = time.Now().Add(20 * time.Second)
	for aggShow(t, srv, admin.Key, admin.TenantID, "by-status").Rebuilds < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the rebuild did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitGroups(t, srv, admin.Key, admin.TenantID, "by-status", map[string]string{"OPEN": "1/10.25", "CLOSED": "1/0.1"})
	var list client.AggregateList
	if err := json.Unmarshal([]byte(qcli(t, srv, admin.Key, false, "aggregate", "list", "--tenant", admin.TenantID, "--json")), &list); err != nil ||
		len(list.Aggregates) != 1 || list.Aggregates[0].Name != "by-status" || list.Aggregates[0].Groups != nil {
		t.Fatalf("list = %+v, %v", list, err)
	}
	human := qcli(t, srv, admin.Key, false, "aggregate", "show", "--tenant", admin.TenantID, "--name", "by-status")
	if !strings.Contains(human, "CLOSED") || !strings.Contains(human, "SUM(amount)") {
		t.Errorf("show printed %q", human)
	}

	// Bad input says what is wrong.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--table", "orders", "--name", "x", "--group-by", "status"}, "--count or at least one --sum"},
		{[]string{"--table", "nope", "--name", "x", "--group-by", "status", "--count"}, "not found"},
		{[]string{"--table", "orders", "--name", "by-status", "--group-by", "status", "--count"}, "already exists"},
		{[]string{"--table", "orders", "--name", "x", "--group-by", "status", "--count", "--where", "kind = :missing"}, "not defined"},
	} {
		args := append([]string{"aggregate", "create", "--tenant", admin.TenantID}, c.args...)
		if msg := qcli(t, srv, admin.Key, true, args...); !strings.Contains(msg, c.want) {
			t.Errorf("create %v: %q, want it to say %q", c.args, msg, c.want)
		}
	}

	qcli(t, srv, admin.Key, false, "aggregate", "delete", "--tenant", admin.TenantID, "--name", "by-status")
	if msg := qcli(t, srv, admin.Key, true, "aggregate", "show", "--tenant", admin.TenantID, "--name", "by-status"); !strings.Contains(msg, "not found") {
		t.Errorf("show after delete: %q", msg)
	}

	// Every change is in the tenant's audit log.
	recs, err := srv.Admin().Audit(ctx, admin.TenantID, client.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs.Records {
		seen[r.Action] = true
	}
	for _, a := range []string{"CreateAggregate", "RebuildAggregate", "DeleteAggregate"} {
		if !seen[a] {
			t.Errorf("audit log has no %s", a)
		}
	}
}

// TestAggregateEveryTenantCLI: the operator defines one aggregate on a
// shared table for every tenant at once; each tenant's copy counts only
// its own items, a tenant that starts writing later gets its copy, a
// tenant may not delete it, and the operator's delete removes every copy.
func TestAggregateEveryTenantCLI(t *testing.T) {
	srv := harness.Start(t)
	ctx := context.Background()
	if _, err := srv.Client(srv.Operator).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("tickets"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	put := func(c harness.Credential, id, status string) {
		t.Helper()
		if _, err := srv.Client(c).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("tickets"),
			Item: map[string]types.AttributeValue{"pk": s(id), "status": s(status), "amount": n("1.5")}}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := srv.NewTenant(t, "fleet-a", "admin"), srv.NewTenant(t, "fleet-b", "admin")
	put(a, "1", "OPEN")
	put(a, "2", "OPEN")
	put(a, "3", "CLOSED")
	put(b, "1", "OPEN") // the same key as a's: another tenant's item
	put(b, "9", "OPEN")

	op := srv.Operator.Key
	if msg := qcli(t, srv, a.Key, true, "aggregate", "create", "--all-tenants", "--table", "tickets", "--name", "by-status", "--group-by", "status", "--count"); !strings.Contains(msg, "only the operator") {
		t.Errorf("a tenant defines an aggregate for every tenant: %q", msg)
	}
	qcli(t, srv, op, false, "aggregate", "create", "--all-tenants", "--table", "tickets", "--name", "by-status", "--group-by", "status",
		"--count", "--sum", "amount", "--json")
	waitGroups(t, srv, a.Key, a.TenantID, "by-status", map[string]string{"OPEN": "2/3", "CLOSED": "1/1.5"})
	waitGroups(t, srv, b.Key, b.TenantID, "by-status", map[string]string{"OPEN": "2/3"})
	put(b, "10", "CLOSED")
	waitGroups(t, srv, b.Key, b.TenantID, "by-status", map[string]string{"OPEN": "2/3", "CLOSED": "1/1.5"})
	waitGroups(t, srv, a.Key, a.TenantID, "by-status", map[string]string{"OPEN": "2/3", "CLOSED": "1/1.5"})

	// A tenant that starts writing later gets its copy.
	c := srv.NewTenant(t, "fleet-c", "admin")
	put(c, "1", "NEW")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if out := qcli(t, srv, c.Key, false, "aggregate", "list", "--tenant", c.TenantID, "--json"); strings.Contains(out, `"by-status"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new tenant got no copy of the aggregate")
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitGroups(t, srv, c.Key, c.TenantID, "by-status", map[string]string{"NEW": "1/1.5"})

	if msg := qcli(t, srv, a.Key, true, "aggregate", "delete", "--tenant", a.TenantID, "--name", "by-status"); !strings.Contains(msg, "only the operator deletes it") {
		t.Errorf("a tenant deletes its copy: %q", msg)
	}
	if msg := qcli(t, srv, a.Key, true, "aggregate", "list", "--all-tenants"); !strings.Contains(msg, "operator") {
		t.Errorf("a tenant lists the every-tenant aggregates: %q", msg)
	}
	var list client.AggregateList
	if err := json.Unmarshal([]byte(qcli(t, srv, op, false, "aggregate", "list", "--all-tenants", "--json")), &list); err != nil ||
		len(list.Aggregates) != 1 || list.Aggregates[0].Name != "by-status" || list.Aggregates[0].Table != "tickets" {
		t.Fatalf("list --all-tenants = %+v, %v", list, err)
	}
	qcli(t, srv, op, false, "aggregate", "delete", "--all-tenants", "--name", "by-status")
	for _, tn := range []harness.Credential{a, b, c} {
		if msg := qcli(t, srv, tn.Key, true, "aggregate", "show", "--tenant", tn.TenantID, "--name", "by-status"); !strings.Contains(msg, "not found") {
			t.Errorf("tenant %s still has the deleted aggregate: %q", tn.TenantID, msg)
		}
	}
}
