package isolation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/sdkhttp"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// siloTenant is a tenant of the silo tier: all of its data, of shared and
// of its own tables, lives in one store of its own.
type siloTenant struct {
	label, id, secret string
	adminKey          harness.Credential
	App, Admin        *dynamodb.Client
	rec               *recorder
	tables            []string // the tables it wrote to
}

// TestSiloTierStoreIsolation attacks the per-tenant silo store. A and B
// are silo-tier tenants (each has one store for all its tables) on a
// server that keeps one silo store open at a time, so that every request
// of one evicts the other's store and reopens its own: A's requests must
// never open, read, count or change B's store — whatever table names A
// uses (B's table names, B's tenant id, store-like names such as "...",
// "1000" or "silos-<B>"), whatever page tokens of B it replays, whichever
// admin route it calls — nor must dropping A touch B's store.
func TestSiloTierStoreIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t, harness.Options{MaxOpenSilos: 1})
	if srv.Remote {
		t.Skip("a gateway over a remote engine has no silo stores and refuses the silo tier (tests/conformance TestSiloTier)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := srv.Admin()
	newSilo := func(label string) *siloTenant {
		tn, err := adm.CreateTenant(ctx, admin.CreateTenantRequest{Name: "silo-" + label, Slug: "silo-" + strings.ToLower(label) + "-" + randHex(3), Tier: "silo"})
		if err != nil || tn.Tier != "silo" {
			t.Fatalf("create silo-tier tenant %s: %+v, %v", label, tn, err)
		}
		st := &siloTenant{label: label, id: tn.ID, secret: "SECRET-SILO-" + label + "-" + randHex(8), rec: newRecorder("silo-" + label)}
		st.adminKey = srv.NewKey(t, tn.ID, "admin")
		app := srv.NewKey(t, tn.ID, "app")
		mk := func(c harness.Credential) *dynamodb.Client {
			return dynamodb.New(dynamodb.Options{Region: harness.Region, BaseEndpoint: aws.String(srv.Endpoint), RetryMaxAttempts: 1,
				Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
					return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
				}),
				HTTPClient: sdkhttp.OwnBody(&http.Client{Transport: st.rec})}) // NB: no retries (see sdkhttp)
		}
		st.App, st.Admin = mk(app), mk(st.adminKey)
		return st
	}
	A, B := newSilo("A"), newSilo("B")
	A.rec.forbid(B.secret, B.id)
	B.rec.forbid(A.secret, A.id)
	t.Cleanup(func() { A.rec.check(t, 0); B.rec.check(t, 0) })

	op := srv.Client(srv.Operator)
	create := func(c *dynamodb.Client, name string, tags ...types.Tag) {
		t.Helper()
		in := tableInput(name, tags)
		if _, err := c.CreateTable(ctx, in); err != nil {
			t.Fatalf("CreateTable %s: %v", name, err)
		}
		harness.WaitActive(t, ctx, c, name)
	}
	create(op, "silo_tier_ns")
	create(op, "silo_tier_silo", types.Tag{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")})
	// Each tenant owns tables named after the other: its id, store-like
	// names, and a name only the victim uses.
	attackNames := func(victim *siloTenant) []string {
		return []string{victim.id, "silos-" + victim.id, "...", "1000", "store"}
	}
	for _, tn := range []*siloTenant{A, B} {
		other := B
		if tn == B {
			other = A
		}
		tn.tables = []string{"silo_tier_ns", "silo_tier_silo"}
		for _, name := range attackNames(other) {
			create(tn.Admin, name)
			tn.tables = append(tn.tables, name)
		}
	}
	create(B.Admin, "b_private")
	B.tables = append(B.tables, "b_private")

	item := func(tn *siloTenant, i int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": S(fmt.Sprintf("P%d", i%2)), "sk": S(fmt.Sprintf("S%d", i)),
			"owner": S(tn.label), "secret": S(tn.secret), "gpk": S("G"), "gsk": S(fmt.Sprint(i)), "gpk2": S("G2"), "lsk": S("L")}
	}
	const n = 6
	for i := range n { // interleaved: each write evicts the other tenant's store
		for _, tn := range []*siloTenant{A, B} {
			for _, table := range tn.tables {
				if _, err := tn.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(tn, i)}); err != nil {
					t.Fatalf("%s PutItem %s: %v", tn.label, table, err)
				}
			}
		}
	}

	onlyOwn := func(t *testing.T, tn *siloTenant, what string, items []map[string]types.AttributeValue, want int) {
		t.Helper()
		for _, it := range items {
			if str(it["owner"]) != tn.label && str(it["pk"]) != "" {
				t.Errorf("%s: %s reads %s's item %v", what, tn.label, str(it["owner"]), keyStr(it))
			}
		}
		if want >= 0 && len(items) != want {
			t.Errorf("%s: %s reads %d items, want %d", what, tn.label, len(items), want)
		}
	}
	t.Run("reads see only the tenant's own store", func(t *testing.T) {
		for _, tn := range []*siloTenant{A, B} {
			for _, table := range tn.tables {
				sc, err := tn.App.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
				if err != nil {
					t.Fatalf("%s Scan %s: %v", tn.label, table, err)
				}
				onlyOwn(t, tn, "Scan "+table, sc.Items, n)
				q, err := tn.App.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi"),
					KeyConditionExpression: aws.String("gpk = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S("G")}})
				if err != nil {
					t.Fatalf("%s Query gsi %s: %v", tn.label, table, err)
				}
				onlyOwn(t, tn, "Query gsi "+table, q.Items, n)
				d, err := tn.App.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
				if err != nil {
					t.Fatalf("%s DescribeTable %s: %v", tn.label, table, err)
				}
				if c := aws.ToInt64(d.Table.ItemCount); c != n {
					t.Errorf("%s DescribeTable %s counts %d items, want its own %d", tn.label, table, c, n)
				}
			}
		}
	})
	t.Run("the victim's table names do not resolve", func(t *testing.T) {
		for _, name := range []string{"b_private", "B", B.id + "/store", "silos/" + B.id + "/store"} {
			_, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: keyOf(item(B, 0))})
			var nf *types.ResourceNotFoundException
			var ve interface{ ErrorCode() string }
			if !errors.As(err, &nf) && !(errors.As(err, &ve) && ve.ErrorCode() == "ValidationException") {
				t.Errorf("A GetItem on table %q: %v; want ResourceNotFound or ValidationException", name, err)
			}
		}
	})
	t.Run("the victim's page tokens read the attacker's store", func(t *testing.T) {
		for _, table := range []string{"silo_tier_ns", "silo_tier_silo"} {
			page, err := B.App.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(1)})
			if err != nil || page.LastEvaluatedKey == nil {
				t.Fatalf("B Scan %s Limit 1: %v", table, err)
			}
			sc, err := A.App.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: page.LastEvaluatedKey})
			if err != nil {
				continue // refused is fine too
			}
			onlyOwn(t, A, "Scan from B's token "+table, sc.Items, -1)
		}
	})
	t.Run("writes land in the writer's store", func(t *testing.T) {
		for _, table := range A.tables {
			if _, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: keyOf(item(A, 0))}); err != nil {
				t.Fatalf("A DeleteItem %s: %v", table, err)
			}
		}
		for _, table := range B.tables {
			out, err := B.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: keyOf(item(B, 0)), ConsistentRead: aws.Bool(true)})
			if err != nil || str(out.Item["owner"]) != "B" {
				t.Errorf("B's item in %s after A deleted the same key in its own: %v, %v", table, out.Item, err)
			}
		}
	})
	t.Run("admin routes", func(t *testing.T) {
		bAdmin := &client.Client{Endpoint: srv.Endpoint, Key: B.adminKey.Key}
		if _, err := bAdmin.Tenant(ctx, A.id); err == nil {
			t.Errorf("B's admin key shows tenant A")
		}
		shown, err := bAdmin.Tenant(ctx, B.id)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range shown.Placement {
			if strings.Contains(p.Table+p.Path, A.id) && p.Table != A.id && p.Table != "silos-"+A.id {
				t.Errorf("B's placement mentions A: %+v", p)
			}
			if p.Store != "silo" {
				t.Errorf("silo-tier B's table %s is in the %s store", p.Table, p.Store)
			}
		}
	})
	t.Run("dropping the attacker leaves the victim's store", func(t *testing.T) {
		if _, err := adm.DeleteTenant(ctx, A.id); err != nil {
			t.Fatalf("delete tenant A: %v", err)
		}
		for _, table := range B.tables {
			sc, err := B.App.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatalf("B Scan %s after A's deletion: %v", table, err)
			}
			onlyOwn(t, B, "Scan "+table+" after A's deletion", sc.Items, n)
		}
	})
}
