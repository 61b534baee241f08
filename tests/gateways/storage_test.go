package gateways

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/tests/harness"
)

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// createIndexedTable creates a shared table with a GSI on g as the
// operator through s.
func createIndexedTable(t *testing.T, s *harness.Server, name string) {
	t.Helper()
	ctx := context.Background()
	op := s.Client(s.Operator)
	_, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	harness.WaitActive(t, ctx, op, name)
}

// recount is what the tenant's items of table hold, counted by reading
// them: DescribeTable through a gateway reads the tenant's collection
// item by item (items, bytes, index bytes).
func recount(t *testing.T, c *dynamodb.Client, table string) [3]int64 {
	t.Helper()
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	r := [3]int64{aws.ToInt64(out.Table.ItemCount), aws.ToInt64(out.Table.TableSizeBytes), 0}
	for _, ix := range out.Table.GlobalSecondaryIndexes {
		r[2] += aws.ToInt64(ix.IndexSizeBytes)
	}
	return r
}

// engineCounters reads tenant's storage counters in the engine directly
// (the flushed deltas, no report: a report may start a recount).
func engineCounters(t *testing.T, f *harness.Cluster, tenant string) [3]int64 {
	t.Helper()
	id, err := tenancy.ParseTenantID(tenant)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.EngineClient(t).Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(f.EngineTable()),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": sv("stat#" + hex.EncodeToString(keyspace.Tenant(id)))},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	var r [3]int64
	for _, it := range out.Items {
		for i, n := range []string{"items", "bytes", "ibytes"} {
			if v, ok := it[n].(*types.AttributeValueMemberN); ok {
				x, _ := strconv.ParseInt(v.Value, 10, 64)
				r[i] += x
			}
		}
	}
	return r
}

// reported is the storage of tenant in table as a usage report through s
// shows it (items, bytes, index bytes).
func reported(t *testing.T, s *harness.Server, tenant, table string) [3]int64 {
	t.Helper()
	r, err := s.Admin().Usage(context.Background(), tenant, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var out [3]int64
	for _, st := range r.Storage {
		if st.Table == table {
			out[0] += st.Items
			out[1] += st.Bytes
			out[2] += st.IndexBytes
		}
	}
	return out
}

// TestStorageAcrossGateways: a tenant's storage, metered by two gateways
// (each write's size change from the old item the engine returns, added
// to counters in the engine every second), equals a recount of its items
// — items, bytes and index bytes by DynamoDB's item size — whichever
// gateway made the writes and whichever reports; batches and
// transactions (no old items) are corrected by a recount within seconds;
// the usage report on either gateway shows it; another tenant's storage
// never includes the first's. UpdateItem's ReturnValues stay exact.
func TestStorageAcrossGateways(t *testing.T) {
	// NB: not parallel: it waits for each gateway's flush of its size
	// changes (every second) within bound+slack, which a starved CPU misses.
	f := harness.StartCluster(t, 2, harness.Options{})
	gws := f.Gateways
	ctx := context.Background()
	createIndexedTable(t, gws[0], "stor")
	a := gws[0].NewTenant(t, "meter-a", "app")
	b := gws[1].NewTenant(t, "meter-b", "app")
	ca := []*dynamodb.Client{gws[0].Client(a), gws[1].Client(a)}
	within(t, "the table on the second gateway", func() bool {
		return errCode(put(ctx, ca[1], "stor", "probe")) != "ResourceNotFoundException"
	})

	// Single-item writes, alternating gateways.
	for i := range 20 {
		it := map[string]types.AttributeValue{"pk": sv(fmt.Sprintf("a-%d", i)), "v": sv(strings.Repeat("x", 10*i))}
		if i%2 == 0 {
			it["g"] = sv("even")
		}
		if _, err := ca[i%2].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("stor"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 { // overwrites, larger
		it := map[string]types.AttributeValue{"pk": sv(fmt.Sprintf("a-%d", i)), "v": sv(strings.Repeat("y", 300))}
		out, err := ca[(i+1)%2].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("stor"), Item: it, ReturnValues: types.ReturnValueAllOld})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Attributes["v"].(*types.AttributeValueMemberS).Value; got != strings.Repeat("x", 10*i) {
			t.Errorf("PutItem ALL_OLD of a-%d: v = %q", i, got)
		}
	}
	if out, err := ca[0].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("stor"), Item: map[string]types.AttributeValue{"pk": sv("a-19"), "g": sv("odd")}}); err != nil || out.Attributes != nil {
		t.Fatalf("PutItem without ReturnValues: %v, %v (want no attributes)", out, err)
	}
	upd := func(c *dynamodb.Client, pk, expr string, vals map[string]types.AttributeValue, rv types.ReturnValue) map[string]types.AttributeValue {
		t.Helper()
		out, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("stor"), Key: map[string]types.AttributeValue{"pk": sv(pk)},
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals, ReturnValues: rv})
		if err != nil {
			t.Fatalf("update %s %q: %v", pk, expr, err)
		}
		return out.Attributes
	}
	upd(ca[1], "a-5", "SET w = :w", map[string]types.AttributeValue{":w": sv(strings.Repeat("w", 500))}, "")
	for i := range 3 {
		got := upd(ca[i%2], "a-6", "ADD n :one", map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}, types.ReturnValueUpdatedNew)
		if n, ok := got["n"].(*types.AttributeValueMemberN); !ok || n.Value != strconv.Itoa(i+1) || len(got) != 1 {
			t.Errorf("ADD n UPDATED_NEW, round %d: %v", i, got)
		}
	}
	if got := upd(ca[0], "a-7", "REMOVE v", nil, types.ReturnValueAllOld); got["v"] == nil || got["pk"] == nil {
		t.Errorf("REMOVE v ALL_OLD: %v", got)
	}
	if got := upd(ca[1], "a-8", "REMOVE v", nil, types.ReturnValueUpdatedOld); len(got) != 1 || got["v"] == nil {
		t.Errorf("REMOVE v UPDATED_OLD: %v", got)
	}
	if got := upd(ca[0], "a-new", "SET g = :g, v = :v", map[string]types.AttributeValue{":g": sv("new"), ":v": sv("created")}, types.ReturnValueAllNew); len(got) != 3 || got["g"] == nil {
		t.Errorf("an update creating the item, ALL_NEW: %v", got)
	}
	if got := upd(ca[1], "a-9", "SET g = :g", map[string]types.AttributeValue{":g": sv("moved")}, types.ReturnValueAllNew); got["g"].(*types.AttributeValueMemberS).Value != "moved" || got["v"] == nil {
		t.Errorf("an update moving the index key, ALL_NEW: %v", got)
	}
	for i, pk := range []string{"a-10", "a-11", "a-12", "nobody"} {
		if _, err := ca[i%2].DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("stor"), Key: map[string]types.AttributeValue{"pk": sv(pk)}}); err != nil {
			t.Fatal(err)
		}
	}
	cb := gws[1].Client(b)
	for i := range 3 {
		if _, err := cb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("stor"),
			Item: map[string]types.AttributeValue{"pk": sv(fmt.Sprintf("b-%d", i)), "v": sv("b")}}); err != nil {
			t.Fatal(err)
		}
	}

	// The flushed deltas alone (no report yet, so no recount) equal a
	// recount, for each tenant.
	for _, x := range []struct {
		name string
		cred harness.Credential
		c    *dynamodb.Client
	}{{"A", a, ca[0]}, {"B", b, cb}} {
		want := recount(t, x.c, "stor")
		if want[0] == 0 || want[1] == 0 {
			t.Fatalf("%s's recount is empty: %v", x.name, want)
		}
		var got [3]int64
		within(t, x.name+"'s flushed deltas equal a recount", func() bool {
			got = engineCounters(t, f, x.cred.TenantID)
			return got == want
		})
		if x.name == "A" && want[2] == 0 {
			t.Errorf("A's index bytes: %v", want)
		}
	}

	// Batches and transactions: the engine returns no old items; their
	// collections are recounted.
	var reqs []types.WriteRequest
	for i := range 5 {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": sv(fmt.Sprintf("a-%d", i)), "v": sv("batch")}}})
	}
	reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": sv("a-13")}}})
	if _, err := ca[1].BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"stor": reqs}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca[0].TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("stor"), Item: map[string]types.AttributeValue{"pk": sv("a-tx"), "g": sv("even"), "v": sv(strings.Repeat("t", 700))}}},
		{Delete: &types.Delete{TableName: aws.String("stor"), Key: map[string]types.AttributeValue{"pk": sv("a-14")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	want := recount(t, ca[1], "stor")
	// The gateways that made them recount them (RecountDelay, then a
	// recount of at least two flush intervals), without any report.
	start := time.Now()
	for got := engineCounters(t, f, a.TenantID); got != want; got = engineCounters(t, f, a.TenantID) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("A's counters after a batch and a transaction: %v, a recount %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("A's counters after a batch and a transaction equal a recount after %v", time.Since(start).Round(time.Millisecond))
	for gi, g := range gws {
		var got [3]int64
		within(t, fmt.Sprintf("A's usage report through gateway %d equals a recount", gi), func() bool {
			got = reported(t, g, a.TenantID, "stor")
			return got == want
		})
	}
	r, err := gws[1].Admin().Usage(ctx, a.TenantID, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Items != want[0] || r.StorageBytes != want[1]+want[2] {
		t.Errorf("A's report totals: %d items, %d bytes; want %d, %d", r.Items, r.StorageBytes, want[0], want[1]+want[2])
	}
	// The hour's per-table storage sample (taken after A's first flush).
	sampled := false
	for _, th := range r.TableHours {
		if th.Table == "stor" && th.Sampled && th.Items > 0 && th.StorageBytes > 0 {
			sampled = true
		}
	}
	if !sampled {
		t.Errorf("A's table hours carry no storage sample of stor: %+v", r.TableHours)
	}
	// B's storage is B's three items only.
	wb := recount(t, cb, "stor")
	if got := reported(t, gws[0], b.TenantID, "stor"); got != wb || got[0] != 3 {
		t.Errorf("LEAK: B's storage %v, a recount of B's items %v (3 items)", got, wb)
	}
}

// TestStorageAfterKill: a gateway process killed with kill -9 right
// after writes loses its unflushed size changes; the recount that a
// report starts for counters never recounted restores them. The report
// is read with the tenantdb CLI, and `tenantdb gateways` lists the
// fleet. The killed gateway counts as alive until its lease ends (a
// quota change settles), then is no longer listed, and a quota change
// on the gateway left alone returns without the settle.
func TestStorageAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills a tenantdb process")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 1, harness.Options{})
	a := f.Gateways[0]
	ctx := context.Background()
	createTable(t, a, "killed")
	key := a.NewTenant(t, "killed-meter", "app")
	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	within(t, "the table on the new gateway", func() bool {
		return errCode(put(ctx, victim.Client(key), "killed", "probe")) != "ResourceNotFoundException"
	})

	cli := func(s *harness.Server, cred string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--endpoint", s.Endpoint, "--key", cred, "--json")...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tenantdb %v: %v %s", args, err, out)
		}
		return out
	}
	var gl client.GatewaysResult
	if err := json.Unmarshal(cli(a, a.Operator.Key, "gateways"), &gl); err != nil {
		t.Fatal(err)
	}
	if len(gl.Gateways) != 2 {
		t.Fatalf("tenantdb gateways lists %d gateways, want 2: %+v", len(gl.Gateways), gl)
	}
	self := 0
	for _, g := range gl.Gateways {
		if g.Self {
			self++
		}
		if g.Expires.Before(g.Heartbeat) || g.PID == 0 {
			t.Errorf("gateway record %+v", g)
		}
	}
	if self != 1 {
		t.Errorf("%d gateways marked self, want 1: %+v", self, gl)
	}

	c := victim.Client(key)
	for i := range 30 {
		if err := put(ctx, c, "killed", fmt.Sprintf("k-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	victim.Kill(t) // before its next flush, most likely
	// Its record is alive until its lease ends: a narrowing change
	// through the other gateway still settles.
	units := 100.0
	setQuota := func() time.Duration {
		t.Helper()
		units++
		start := time.Now()
		if _, err := a.Admin().SetQuota(ctx, key.TenantID, "", client.QuotaUpdate{ReadUnits: &units}); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	if d := setQuota(); d < node.FleetSettle {
		t.Errorf("a quota change while the killed gateway's lease runs returned after %v, before the settle (%v)", d, node.FleetSettle)
	}
	want := recount(t, a.Client(key), "killed")
	var got [3]int64
	start := time.Now()
	for {
		var r client.UsageReport
		if err := json.Unmarshal(cli(a, a.Operator.Key, "usage", "--tenant", key.TenantID), &r); err != nil {
			t.Fatal(err)
		}
		got = [3]int64{}
		for _, st := range r.Storage {
			if st.Table == "killed" {
				got = [3]int64{st.Items, st.Bytes, st.IndexBytes}
			}
		}
		if got == want {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("storage after kill -9: reported %v, a recount %v", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("storage after kill -9 (31 items): reported %v after %v", got, time.Since(start).Round(time.Millisecond))
	// The killed gateway's record expires with its lease.
	within2 := time.Now().Add(10 * time.Second)
	for {
		gws, err := a.Admin().Gateways(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(gws.Gateways) == 1 && gws.Gateways[0].Self {
			break
		}
		if time.Now().After(within2) {
			t.Fatalf("the killed gateway is still listed: %+v", gws)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Alone now: a quota change needs no settle (one of three tries, on
	// a loaded machine).
	fast := false
	for range 3 {
		if d := setQuota(); d < node.FleetSettle {
			fast = true
			break
		}
	}
	if !fast {
		t.Errorf("a quota change on the only live gateway still settled")
	}
}

// TestAloneSkipsSettle: a gateway that is the only live one over the
// engine returns a table drop, a quota change, a key's revocation and a
// tenant's suspension without the fleet's settle; once a second gateway
// registered, all settle again.
func TestAloneSkipsSettle(t *testing.T) {
	// NB: not parallel: it times changes against node.FleetSettle, which a
	// starved CPU can exceed.
	f := harness.StartCluster(t, 1, harness.Options{})
	a := f.Gateways[0]
	ctx := context.Background()
	key := a.NewTenant(t, "alone", "app")
	op := a.Client(a.Operator)
	units := 100.0
	timed := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		switch what {
		case "quota":
			units++
			if _, err := a.Admin().SetQuota(ctx, key.TenantID, "", client.QuotaUpdate{ReadUnits: &units}); err != nil {
				t.Fatal(err)
			}
		case "revoke":
			k, err := a.Admin().CreateKey(ctx, key.TenantID, client.CreateKeyRequest{Role: "app"})
			if err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			if _, err := a.Admin().RevokeKey(ctx, key.TenantID, k.AccessKeyID); err != nil {
				t.Fatal(err)
			}
		case "suspend":
			if _, err := a.Admin().SuspendTenant(ctx, key.TenantID); err != nil {
				t.Fatal(err)
			}
			d := time.Since(start)
			if _, err := a.Admin().ResumeTenant(ctx, key.TenantID); err != nil {
				t.Fatal(err)
			}
			return d
		case "drop":
			createTable(t, a, "dropped")
			start = time.Now()
			if _, err := op.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("dropped")}); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	for _, what := range []string{"quota", "drop", "revoke", "suspend"} {
		fast := false
		for range 3 { // on a loaded machine, one of three
			if d := timed(what); d < node.FleetSettle {
				fast = true
				break
			}
		}
		if !fast {
			t.Errorf("%s on the only gateway: settled every time", what)
		}
	}
	f.StartGateway(t, t.TempDir())
	for _, what := range []string{"quota", "drop", "revoke", "suspend"} {
		if d := timed(what); d < node.FleetSettle {
			t.Errorf("%s with a second gateway: returned after %v, before the settle (%v)", what, d, node.FleetSettle)
		}
	}
}
