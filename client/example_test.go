package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// The examples run against a real server that TestMain starts; endpoint
// is its URL and operatorKey the operator's API key (in a deployment:
// the key in tenantdb-data/operator-credentials, or a secret store).
var endpoint, operatorKey string

func TestMain(m *testing.M) {
	srv, stop, err := harness.StartInProcess(harness.Options{})
	if err != nil {
		log.Fatal(err)
	}
	endpoint, operatorKey = srv.Endpoint, srv.Operator.Key
	code := m.Run()
	if err := stop(); err != nil {
		log.Print(err)
		code = 1
	}
	os.Exit(code)
}

// Signup: your SaaS application's signup handler creates a tenant for the
// new customer and hands its first key to the application (a secret
// store, or the customer's configuration). The secret is shown only in
// this answer.
func Example_signup() {
	ctx := context.Background()
	c := client.New(endpoint, operatorKey)

	t, err := c.CreateTenant(ctx, client.CreateTenantRequest{Name: "Acme Corp", Slug: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	k, err := c.CreateKey(ctx, t.ID, client.CreateKeyRequest{Role: "app"})
	if err != nil {
		log.Fatal(err)
	}
	// Hand these to the application: the AWS SDKs take the pair, the
	// tenantdb CLI and this client take the full key.
	app := map[string]string{
		"AWS_ACCESS_KEY_ID":     k.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": k.SecretAccessKey,
		"TENANTDB_KEY":          k.Key,
	}

	fmt.Println(t.Name, t.Slug, t.Status)
	fmt.Println(k.Role, k.Env, k.Status, k.TenantID == t.ID)
	fmt.Println(strings.HasPrefix(app["TENANTDB_KEY"], "sk_"), app["AWS_SECRET_ACCESS_KEY"] != "")
	// Output:
	// Acme Corp acme active
	// app live active true
	// true true
}

// A tenant's admin key manages its own tenant's keys; another tenant is
// invisible to it: a 404, as if it did not exist.
func ExampleIsNotFound() {
	ctx := context.Background()
	op := client.New(endpoint, operatorKey)
	a, _ := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "tenant a", Slug: "example-a"})
	b, _ := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "tenant b", Slug: "example-b"})
	adminA, err := op.CreateKey(ctx, a.ID, client.CreateKeyRequest{Role: "admin"})
	if err != nil {
		log.Fatal(err)
	}

	c := client.New(endpoint, adminA.Key)
	keys, err := c.Keys(ctx, a.ID)
	fmt.Println(len(keys), err)

	_, err = c.Keys(ctx, b.ID)
	fmt.Println(client.IsNotFound(err))
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code)
	}

	_, err = c.CreateTenant(ctx, client.CreateTenantRequest{Name: "not mine to create"})
	fmt.Println(client.IsForbidden(err))
	// Output:
	// 1 <nil>
	// true
	// 404 NotFound
	// true
}

// Token vending: the application gets temporary credentials of its tenant
// for aws-sdk-go-v2, renewed before they expire, instead of a long-lived
// key.
func ExampleClient_Credentials() {
	ctx := context.Background()
	op := client.New(endpoint, operatorKey)
	t, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "vended", Slug: "example-vended"})
	if err != nil {
		log.Fatal(err)
	}

	ddb := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  op.Credentials(t.ID, client.SessionRequest{Role: "admin", DurationSeconds: 900}),
	})
	_, err = ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "o-1"}, "total": &types.AttributeValueMemberN{Value: "42"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("orders"), Key: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: "o-1"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Item["total"].(*types.AttributeValueMemberN).Value)
	// Output:
	// 42
}

// The operator sets a tenant's capacity quota and reads its usage.
func ExampleClient_SetQuota() {
	ctx := context.Background()
	op := client.New(endpoint, operatorKey)
	t, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "metered", Slug: "example-metered"})
	if err != nil {
		log.Fatal(err)
	}
	units := 50.0
	q, err := op.SetQuota(ctx, t.ID, "", client.QuotaUpdate{WriteUnits: &units})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(q.WriteUnits, q.Set)

	u, err := op.Usage(ctx, t.ID, time.Time{}, time.Time{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u.TenantID == t.ID, u.Requests, u.Items)
	// Output:
	// 50 true
	// true 0 0
}

// Every change to a tenant is on its audit log, hash-chained.
func ExampleClient_Audit() {
	ctx := context.Background()
	op := client.New(endpoint, operatorKey)
	t, err := op.CreateTenant(ctx, client.CreateTenantRequest{Name: "audited", Slug: "example-audited"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := op.CreateKey(ctx, t.ID, client.CreateKeyRequest{Role: "read"}); err != nil {
		log.Fatal(err)
	}
	page, err := op.Audit(ctx, t.ID, client.AuditQuery{})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range page.Records {
		fmt.Println(r.Seq, r.Action, r.Outcome)
	}
	v, err := op.VerifyAudit(ctx, t.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.OK, v.Records)
	// Output:
	// 1 tenant.create ok
	// 2 key.create ok
	// true 2
}
