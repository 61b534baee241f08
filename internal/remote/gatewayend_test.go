package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// gatewayEnd is the set-up of the tests of work a gateway leaves
// unfinished when it ends (a change of shard count, a TTL job): a plain
// DynamoDB-API engine, a tenant's scope, and gateways over the engine.
type gatewayEnd struct {
	t  *testing.T
	o  remote.Options
	db *dynamodb.Client // the engine itself
	s  tenancy.Scope
}

// startGatewayEnd starts the engine; o (its Client set here) opens the
// gateways.
func startGatewayEnd(t *testing.T, o remote.Options) *gatewayEnd {
	engine := harness.Start(t, harness.Options{})
	o.Client = engine.Client(engine.Default)
	if o.Region == "" {
		o.Region = harness.Region
	}
	return &gatewayEnd{t: t, o: o, db: o.Client, s: tenancy.SystemScope(tenancy.NewTenantID(), "test")}
}

// open starts a gateway's backend (which resumes unfinished work).
func (g *gatewayEnd) open() *remote.Backend {
	g.t.Helper()
	b, err := remote.Open(context.Background(), g.o)
	if err != nil {
		g.t.Fatal(err)
	}
	return b
}

// createTable creates table "tbl", keyed by the string pk, through b.
func (g *gatewayEnd) createTable(b *remote.Backend) {
	g.t.Helper()
	if _, err := b.CreateTable(context.Background(), g.s, &wire.CreateTableInput{TableName: "tbl",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		KeySchema:            []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		BillingMode:          "PAY_PER_REQUEST"}); err != nil {
		g.t.Fatal(err)
	}
}

// within polls cond every poll until it holds; after d it fails with
// what cond waited for.
func (g *gatewayEnd) within(d, poll time.Duration, what func() string, cond func() bool) {
	g.t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(poll) {
		if time.Now().After(deadline) {
			g.t.Fatalf("%s in %v", what(), d)
		}
	}
}

// scan reads in's pages from the engine to the end, calling each.
func (g *gatewayEnd) scan(in *dynamodb.ScanInput, each func(*dynamodb.ScanOutput)) {
	g.t.Helper()
	for {
		out, err := g.db.Scan(context.Background(), in)
		if err != nil {
			g.t.Fatal(err)
		}
		each(out)
		if len(out.LastEvaluatedKey) == 0 {
			return
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
