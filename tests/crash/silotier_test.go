package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestSiloTierPlacement: tenants created with `tenant create --tier silo`
// keep their data of a shared (namespace) table in a store of their own
// from their first write, a pool tenant's stays in the server's store;
// `tenant show` says so; with more silo tenants than --max-open-silos
// their stores are evicted and reopened; after kill -9 and a restart
// every acknowledged write is there, each tenant reading only its own.
func TestSiloTierPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := binary(t)
	dir := t.TempDir()
	args := []string{"--fairness=false", "--max-open-silos", "2"}
	srv := harness.StartBinary(t, bin, dir, args...)
	ctx := context.Background()
	_, err := srv.Client(srv.Operator).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("Orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "TENANTDB_ENDPOINT="+srv.Endpoint, "TENANTDB_KEY="+srv.Operator.Key)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tenantdb %v: %v\n%s", args, err, out)
		}
		return out
	}
	type tenant struct {
		id   string
		tier string
		cred harness.Credential
	}
	var tenants []tenant
	for i, tier := range []string{"pool", "silo", "silo", "silo", "silo"} {
		var tn client.Tenant
		if err := json.Unmarshal(cli("tenant", "create", fmt.Sprintf("t%d", i), "--tier", tier, "--json"), &tn); err != nil {
			t.Fatal(err)
		}
		if tn.Tier != tier {
			t.Fatalf("tenant created with --tier %s has tier %q", tier, tn.Tier)
		}
		tenants = append(tenants, tenant{tn.ID, tier, srv.NewKey(t, tn.ID, "app")})
	}
	put := func(srv *harness.Server, tn tenant, k string) {
		t.Helper()
		_, err := srv.Client(tn.cred).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: k}, "owner": &types.AttributeValueMemberS{Value: tn.id}}})
		if err != nil {
			t.Fatalf("tenant %s (%s) PutItem: %v", tn.id, tn.tier, err)
		}
	}
	check := func(srv *harness.Server, when string, n int) {
		t.Helper()
		for _, tn := range tenants {
			c := srv.Client(tn.cred)
			for i := range n {
				out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Orders"), ConsistentRead: aws.Bool(true),
					Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}})
				if err != nil {
					t.Fatalf("%s: GetItem: %v", when, err)
				}
				if o, ok := out.Item["owner"].(*types.AttributeValueMemberS); !ok || o.Value != tn.id {
					t.Fatalf("%s: tenant %s reads %v as its item %d", when, tn.id, out.Item, i)
				}
			}
			sc, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("Orders"), ConsistentRead: aws.Bool(true)})
			if err != nil || len(sc.Items) != n {
				t.Fatalf("%s: tenant %s scans %d items (%v), want %d", when, tn.id, len(sc.Items), err, n)
			}
		}
	}
	const items = 20
	for i := range items { // interleaved: the silo stores are evicted all the time
		for _, tn := range tenants {
			put(srv, tn, fmt.Sprint(i))
		}
	}
	check(srv, "before the kill", items)

	for _, tn := range tenants {
		_, err := os.Stat(filepath.Join(dir, "silos", tn.id, "store"))
		if tn.tier == "silo" && err != nil {
			t.Errorf("silo-tier tenant %s has no store of its own: %v", tn.id, err)
		}
		if tn.tier == "pool" && !os.IsNotExist(err) {
			t.Errorf("pool-tier tenant %s has a silo store (stat: %v)", tn.id, err)
		}
		var shown client.Tenant
		if err := json.Unmarshal(cli("tenant", "show", tn.id, "--json"), &shown); err != nil {
			t.Fatal(err)
		}
		var orders *client.TablePlacement
		for i := range shown.Placement {
			if shown.Placement[i].Table == "Orders" {
				orders = &shown.Placement[i]
			}
		}
		if orders == nil || orders.Store != tn.tier || !orders.HasData || orders.Isolation != "namespace" ||
			(tn.tier == "silo") != (orders.Path == filepath.Join("silos", tn.id, "store")) {
			t.Errorf("tenant show %s (tier %s): Orders placement %+v", tn.id, tn.tier, orders)
		}
	}
	if out := string(cli("tenant", "show", tenants[1].id)); !containsAll(out, "Orders", "silo", filepath.Join("silos", tenants[1].id, "store")) {
		t.Errorf("tenant show (text) does not say where the data lives:\n%s", out)
	}

	srv.Kill(t)
	srv = harness.StartBinary(t, bin, dir, args...)
	check(srv, "after kill -9", items)
	for _, tn := range tenants {
		put(srv, tn, fmt.Sprint(items))
	}
	check(srv, "writing after the restart", items+1)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
