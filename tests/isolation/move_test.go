package isolation

import (
	"context"
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

// TestMoveIsolation attacks tenant moves between the pool and a silo
// store. Only the operator may move a tenant or see its moves: A's admin
// key (on B or on A itself), A's app key are refused, and the refusal
// moves nothing. While the operator moves A to its silo store and back,
// B writes the same keys in the same table: afterwards each sees exactly
// its own items (values, count, index), A's secret never reaches B, B's
// data never moved, and the move is audited in A's log, not in B's.
func TestMoveIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t, harness.Options{MaxOpenSilos: 1})
	if srv.Remote {
		t.Skip("a gateway over a remote engine has no silo stores; moves are not served there")
	}
	// NB: moves have no stated time bound, and under -race beside the
	// package's other suites this test takes from under a second to a
	// minute: it waits for them until shortly before the test binary's
	// deadline (a hang still fails, with the state it was in).
	patience := time.Now().Add(10 * time.Minute)
	if d, ok := t.Deadline(); ok {
		patience = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), patience)
	defer cancel()
	op := srv.Client(srv.Operator)
	_, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("iso_move"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}})
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, op, "iso_move")
	aAdmin := srv.NewTenant(t, "move-a", "admin")
	bAdmin := srv.NewTenant(t, "move-b", "admin")
	aApp, bApp := srv.NewKey(t, aAdmin.TenantID, "app"), srv.NewKey(t, bAdmin.TenantID, "app")
	da, db := srv.Client(aApp), srv.Client(bApp)
	secretA, secretB := "SECRET-A-"+randHex(8), "SECRET-B-"+randHex(8)
	put := func(c *dynamodb.Client, i int, v string) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("iso_move"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("p%d", i)}, "g": &types.AttributeValueMemberS{Value: "G"},
			"v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		put(da, i, secretA)
		put(db, i, secretB)
	}

	// Refused: tenant admin keys (another tenant's, or its own) and app keys.
	for _, k := range []struct {
		who, key, tenant string
	}{{"A's admin on B", aAdmin.Key, bAdmin.TenantID}, {"A's admin on A", aAdmin.Key, aAdmin.TenantID}, {"A's app key on A", aApp.Key, aAdmin.TenantID},
		{"B's admin on A", bAdmin.Key, aAdmin.TenantID}} {
		c := client.New(srv.Endpoint, k.key)
		if _, err := c.MoveTenant(ctx, k.tenant, client.MoveRequest{Table: "iso_move", To: "silo"}); !client.IsForbidden(err) {
			t.Errorf("%s: MoveTenant: %v, want 403", k.who, err)
		}
		if _, err := c.Moves(ctx, k.tenant); !client.IsForbidden(err) {
			t.Errorf("%s: Moves: %v, want 403", k.who, err)
		}
	}
	show := func(id string) string {
		tn, err := srv.Admin().Tenant(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(tn.Placement)
	}
	if p := show(aAdmin.TenantID); strings.Contains(p, "silo") {
		t.Fatalf("a refused move moved A: %s", p)
	}

	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			ddb          *dynamodb.Client
			mine, theirs string
		}{{da, secretA, secretB}, {db, secretB, secretA}} {
			out, err := c.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("iso_move"), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if out.Count != 40 {
				t.Fatalf("%s: %d items, want 40", when, out.Count)
			}
			for _, it := range out.Items {
				if v := it["v"].(*types.AttributeValueMemberS).Value; v != c.mine {
					t.Fatalf("%s: a tenant sees %q (want its own %q; the other's is %q)", when, v, c.mine, c.theirs)
				}
			}
			q, err := c.ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("iso_move"), IndexName: aws.String("byG"),
				KeyConditionExpression:    aws.String("g = :g"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: "G"}}})
			if err != nil {
				t.Fatal(err)
			}
			if q.Count != 40 {
				t.Fatalf("%s: the index shows %d entries, want 40", when, q.Count)
			}
			for _, it := range q.Items {
				if v := it["v"].(*types.AttributeValueMemberS).Value; v != c.mine {
					t.Fatalf("%s: the index shows a tenant %q", when, v)
				}
			}
		}
	}
	move := func(to string) {
		t.Helper()
		if _, err := srv.Admin().MoveTenant(ctx, aAdmin.TenantID, client.MoveRequest{Table: "iso_move", To: to}); err != nil {
			t.Fatal(err)
		}
		// B keeps writing its own keys, the same names as A's, meanwhile.
		for i := 0; ; i++ {
			put(db, i%40, secretB)
			ms, err := srv.Admin().Moves(ctx, aAdmin.TenantID)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) > 0 && ms[0].Done() {
				if ms[0].Phase != "done" {
					t.Fatalf("move to %s: %+v", to, ms[0])
				}
				break
			}
		}
		if p := show(bAdmin.TenantID); strings.Contains(p, "silo") {
			t.Fatalf("moving A moved B: %s", p)
		}
		if p := show(aAdmin.TenantID); !strings.Contains(p, to) {
			t.Fatalf("A after the move to %s: %s", to, p)
		}
	}
	move("silo")
	check("after the move to silo")
	move("pool")
	check("after the move back to the pool")

	// The finished moves are kept (durably) and listed for the operator
	// only: B's admin key cannot list A's (nor its own), and the refusal
	// names nothing of A's; the operator's view of B has none of A's.
	hist, err := srv.Admin().Moves(ctx, aAdmin.TenantID)
	if err != nil || len(hist) < 2 || hist[0].Table != "iso_move" || !hist[0].Done() {
		t.Fatalf("A's finished moves: %+v, %v", hist, err)
	}
	for _, k := range []struct{ who, key, tenant string }{{"B's admin on A", bAdmin.Key, aAdmin.TenantID},
		{"B's admin on B", bAdmin.Key, bAdmin.TenantID}, {"B's app key on A", bApp.Key, aAdmin.TenantID}} {
		_, err := client.New(srv.Endpoint, k.key).Moves(ctx, k.tenant)
		if !client.IsForbidden(err) {
			t.Errorf("%s: Moves after A's moves: %v, want 403", k.who, err)
		} else if strings.Contains(err.Error(), "iso_move") || strings.Contains(err.Error(), "silo") {
			t.Errorf("%s: the refusal tells of A's moves: %v", k.who, err)
		}
	}
	if ms, err := srv.Admin().Moves(ctx, bAdmin.TenantID); err != nil || len(ms) != 0 {
		t.Fatalf("the operator's view of B's moves: %+v, %v (want none)", ms, err)
	}

	// Moving all of B's tables sets B's tier, not A's, and lists nothing
	// of A's; A's data stays where it is.
	if _, err := srv.Admin().MoveTenant(ctx, bAdmin.TenantID, client.MoveRequest{To: "silo"}); err != nil {
		t.Fatal(err)
	}
	for ; ; time.Sleep(20 * time.Millisecond) {
		ms, err := srv.Admin().Moves(ctx, bAdmin.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ms); n > 0 && ms[0].Tier == "silo" && ms[0].Done() {
			if ms[0].Phase != "done" {
				t.Fatalf("B's tier move: %+v", ms[0])
			}
			for _, m := range ms {
				if m.Table != "" && m.Table != "iso_move" {
					t.Fatalf("B's moves list %+v", m)
				}
			}
			if n != 2 {
				t.Fatalf("B's moves: %+v (want its table move and its tier move)", ms)
			}
			break
		}
		if time.Now().After(patience.Add(-10 * time.Second)) {
			t.Fatalf("B's tier move did not end: %+v", ms)
		}
	}
	tb, err := srv.Admin().Tenant(ctx, bAdmin.TenantID)
	if err != nil || tb.Tier != "silo" {
		t.Fatalf("B after its tier move: %+v, %v", tb, err)
	}
	ta, err := srv.Admin().Tenant(ctx, aAdmin.TenantID)
	if err != nil || ta.Tier != "pool" || strings.Contains(fmt.Sprint(ta.Placement), "silo") {
		t.Fatalf("A after B's tier move: %+v, %v", ta, err)
	}
	if ms, _ := srv.Admin().Moves(ctx, aAdmin.TenantID); len(ms) != len(hist) {
		t.Fatalf("A's moves changed with B's: %d, were %d", len(ms), len(hist))
	}
	check("after B's tier move")

	audited := func(id string) bool {
		page, err := srv.Admin().Audit(ctx, id, client.AuditQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range page.Records {
			if strings.HasPrefix(r.Action, "tenant.move") {
				n++
			}
		}
		return n >= 4 // two starts, two ends
	}
	if !audited(aAdmin.TenantID) {
		t.Error("A's moves are not in A's audit log")
	}
	if audited(bAdmin.TenantID) {
		t.Error("A's moves are in B's audit log")
	}
}
