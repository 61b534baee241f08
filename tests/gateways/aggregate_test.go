package gateways

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// aggTable creates a table of pk (S) for the aggregate tests.
func aggTable(t *testing.T, ctx context.Context, c *dynamodb.Client, table string) {
	t.Helper()
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, c, table)
}

// aggWrite makes one random change of a random item among keys: a put
// into a random group with a decimal amount, an ADD to the amount (which
// may move nothing between groups), a move to another group, or a delete.
func aggWrite(ctx context.Context, c *dynamodb.Client, table string, r *rand.Rand, keys int) error {
	pk := &types.AttributeValueMemberS{Value: fmt.Sprintf("k%03d", r.IntN(keys))}
	grp := &types.AttributeValueMemberS{Value: "g" + fmt.Sprint(r.IntN(5))}
	amt := &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.%02d", r.IntN(1000), r.IntN(100))}
	var err error
	switch r.IntN(10) {
	case 0, 1:
		_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": pk}})
	case 2, 3:
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": pk},
			UpdateExpression: aws.String("ADD amt :a"), ExpressionAttributeValues: map[string]types.AttributeValue{":a": amt}})
	case 4:
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": pk},
			UpdateExpression: aws.String("SET grp = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": grp}})
	default:
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": pk, "grp": grp, "amt": amt}})
	}
	return err
}

// aggFigures is a recount: group → count and the exact sum of amt.
type aggFigures map[string]struct {
	n   int64
	sum *big.Rat
}

func (f aggFigures) String() string {
	var b strings.Builder
	for _, g := range []string{"g0", "g1", "g2", "g3", "g4"} {
		if x, ok := f[g]; ok {
			fmt.Fprintf(&b, "%s:%d/%s ", g, x.n, x.sum.FloatString(2))
		}
	}
	return b.String()
}

// aggRecount reads every item of table and counts it.
func aggRecount(t *testing.T, ctx context.Context, c *dynamodb.Client, table string) aggFigures {
	t.Helper()
	out := aggFigures{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			g, ok := it["grp"].(*types.AttributeValueMemberS)
			if !ok {
				continue
			}
			x := out[g.Value]
			if x.sum == nil {
				x.sum = new(big.Rat)
			}
			x.n++
			if a, ok := it["amt"].(*types.AttributeValueMemberN); ok {
				v, _ := new(big.Rat).SetString(a.Value)
				x.sum.Add(x.sum, v)
			}
			out[g.Value] = x
		}
	}
	return out
}

// shown is an aggregate's groups as figures.
func shown(a client.Aggregate) aggFigures {
	out := aggFigures{}
	for g, x := range a.Groups {
		v, _ := new(big.Rat).SetString(x.Sum["amt"])
		if v == nil {
			v = new(big.Rat)
		}
		var n int64
		if x.Count != nil {
			n = *x.Count
		}
		out[g] = struct {
			n   int64
			sum *big.Rat
		}{n, v}
	}
	return out
}

func sameFigures(a, b aggFigures) bool {
	if len(a) != len(b) {
		return false
	}
	for g, x := range a {
		y, ok := b[g]
		if !ok || x.n != y.n || x.sum.Cmp(y.sum) != 0 {
			return false
		}
	}
	return true
}

// waitRecount waits until the aggregate shown through adm equals a
// recount of the table (no writes go on), and returns the last shown.
func waitRecount(t *testing.T, ctx context.Context, adm *client.Client, tenant, name string, c *dynamodb.Client, table string, within time.Duration) client.Aggregate {
	t.Helper()
	want := aggRecount(t, ctx, c, table)
	deadline := time.Now().Add(within)
	var a client.Aggregate
	var err error
	for time.Now().Before(deadline) {
		a, err = adm.Aggregate(ctx, tenant, name)
		if err == nil && a.State == "ready" && sameFigures(shown(a), want) {
			return a
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("aggregate %s never equalled the recount within %v:\n shown   %v (state %s, err %v, error %q)\n recount %v", name, within, shown(a), a.State, err, a.Error, want)
	return a
}

var aggDef = func(table string) client.CreateAggregateRequest {
	return client.CreateAggregateRequest{Name: "by_grp", Table: table, GroupBy: "grp", Count: true, Sum: []string{"amt"}}
}

// TestAggregateAcrossGateways: an aggregate created through one gateway
// while another takes random writes is built exactly — its groups equal a
// recount of the table once the writes stop, though the build's scan ran
// during them — and kept up to date from the engine's stream; every
// gateway shows, rebuilds and deletes it.
func TestAggregateAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	app := g0.NewTenant(t, "aggs", "admin")
	const table = "agg_t"
	aggTable(t, ctx, g0.Client(app), table)
	const keys = 150
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		if err := aggWrite(ctx, g1.Client(app), table, r, keys); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			c := f.Gateways[w%2].Client(app)
			for !stop.Load() {
				if aggWrite(ctx, c, table, r, keys) == nil {
					writes.Add(1)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	a0 := &client.Client{Endpoint: g0.Endpoint, Key: app.Key}
	a1 := &client.Client{Endpoint: g1.Endpoint, Key: app.Key}
	created, err := a0.CreateAggregate(ctx, app.TenantID, aggDef(table))
	if err != nil {
		t.Fatal(err)
	}
	if created.State != "building" {
		t.Errorf("created in state %q, want building", created.State)
	}
	time.Sleep(4 * time.Second) // writes during and after the build
	stop.Store(true)
	wg.Wait()
	a := waitRecount(t, ctx, a1, app.TenantID, "by_grp", g0.Client(app), table, 90*time.Second)
	t.Logf("%d concurrent writes; built from %d scanned items, %d changes folded since", writes.Load(), a.Scanned, a.Applied)
	if a.Rebuilds != 1 || a.Scanned == 0 || !strings.HasPrefix(a.Cursor, "r1.") {
		t.Errorf("after the build: %d rebuilds, %d scanned, cursor %.10q", a.Rebuilds, a.Scanned, a.Cursor)
	}

	// Kept up to date: more writes, through both gateways.
	for i := range 200 {
		if err := aggWrite(ctx, f.Gateways[i%2].Client(app), table, r, keys); err != nil {
			t.Fatal(err)
		}
	}
	waitRecount(t, ctx, a0, app.TenantID, "by_grp", g1.Client(app), table, 60*time.Second)

	// A rebuild through the other gateway comes to the same figures.
	if _, err := a1.RebuildAggregate(ctx, app.TenantID, "by_grp"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		a, err = a0.Aggregate(ctx, app.TenantID, "by_grp")
		if err == nil && a.Rebuilds == 2 && a.State == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebuild not done: %+v %v", a, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitRecount(t, ctx, a0, app.TenantID, "by_grp", g1.Client(app), table, 30*time.Second)

	list, err := a1.Aggregates(ctx, app.TenantID)
	if err != nil || len(list) != 1 || list[0].Name != "by_grp" {
		t.Fatalf("list through the other gateway: %+v %v", list, err)
	}
	if _, err := a1.CreateAggregate(ctx, app.TenantID, aggDef(table)); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("creating it again: %v, want a conflict", err)
	}
	if err := a1.DeleteAggregate(ctx, app.TenantID, "by_grp"); err != nil {
		t.Fatal(err)
	}
	if _, err := a0.Aggregate(ctx, app.TenantID, "by_grp"); err == nil {
		t.Error("a deleted aggregate is still shown through the other gateway")
	}
}

// TestAggregateTakeoverAfterKill: the gateway working an aggregate is
// killed with kill -9 under random writes; the other takes its lease over
// and the totals equal a full recount once the writes stop: nothing
// folded twice, nothing lost.
func TestAggregateTakeoverAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and kills a tenantdb process")
	}
	t.Parallel()
	bin := binary(t)
	f := harness.StartCluster(t, 1, harness.Options{})
	g0 := f.Gateways[0]
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	app := g0.NewTenant(t, "aggkill", "admin")
	const table = "aggkill_t"
	aggTable(t, ctx, g0.Client(app), table)
	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	// NB: created through the victim, whose worker takes the lease at
	// once (g0 finds the aggregate at its next look at the registry).
	av := &client.Client{Endpoint: victim.Endpoint, Key: app.Key}
	if _, err := av.CreateAggregate(ctx, app.TenantID, aggDef(table)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 11))
			c := g0.Client(app)
			for !stop.Load() {
				_ = aggWrite(ctx, c, table, r, 100)
			}
		}()
	}
	a0 := &client.Client{Endpoint: g0.Endpoint, Key: app.Key}
	deadline := time.Now().Add(60 * time.Second)
	for {
		a, err := a0.Aggregate(ctx, app.TenantID, "by_grp")
		if err == nil && a.State == "ready" && a.Applied >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim never folded changes: %+v %v", a, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	victim.Kill(t) // kill -9, mid-fold
	time.Sleep(3 * time.Second)
	stop.Store(true)
	wg.Wait()
	start := time.Now()
	a := waitRecount(t, ctx, a0, app.TenantID, "by_grp", g0.Client(app), table, 90*time.Second)
	t.Logf("taken over and equal to the recount %v after the writes stopped (%d changes folded)", time.Since(start).Round(time.Second), a.Applied)
}
