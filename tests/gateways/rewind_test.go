package gateways

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
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

// tenantdbCLI runs the tenantdb binary's CLI with args; stdout, stderr.
func tenantdbCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// rwTable creates table name (pk, a GSI byG on g) through c.
func rwTable(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func rwEnable(t *testing.T, c *dynamodb.Client, tables ...string) {
	t.Helper()
	for _, name := range tables {
		if _, err := c.UpdateContinuousBackups(context.Background(), &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(name),
			PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
			t.Fatal(err)
		}
	}
	until(t, "the restorable window open", 20*time.Second, func() bool {
		d, err := c.DescribeContinuousBackups(context.Background(), &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(tables[0])})
		return err == nil && d.ContinuousBackupsDescription.PointInTimeRecoveryDescription.LatestRestorableDateTime != nil
	})
	time.Sleep(1100 * time.Millisecond) // the window starts at the next whole second
}

// rwWrite puts (v != "") or deletes items pk=k<from..to> through c.
func rwWrite(t *testing.T, c *dynamodb.Client, table string, from, to int, v string) {
	t.Helper()
	for i := from; i < to; i += 25 {
		var reqs []types.WriteRequest
		for k := i; k < min(i+25, to); k++ {
			pk := &types.AttributeValueMemberS{Value: fmt.Sprintf("k%05d", k)}
			if v == "" {
				reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": pk}}})
				continue
			}
			it := map[string]types.AttributeValue{"pk": pk, "v": &types.AttributeValueMemberS{Value: fmt.Sprint(v, k)}}
			if k%4 == 0 {
				it["g"] = &types.AttributeValueMemberS{Value: fmt.Sprint("g", k%3)}
			}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		for len(reqs) > 0 {
			out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems[table]
		}
	}
}

// byG counts the items of each g value through index byG.
func byG(t *testing.T, c *dynamodb.Client, table string) string {
	t.Helper()
	var out []string
	for _, g := range []string{"g0", "g1", "g2"} {
		q, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byG"), Select: types.SelectCount,
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: g}}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%d", g, q.Count))
	}
	return strings.Join(out, " ")
}

// collectionPK matches the partition keys of item collections:
// hex(namespace)#table id#shard.
var collectionPK = regexp.MustCompile(`^[0-9a-f]+#[0-9]+#[0-9]+$`)

// collectionItemsOf returns every engine item whose partition key names
// tenant (its collections), encoded, sorted.
func collectionItemsOf(t *testing.T, f *harness.Cluster, tenant string) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(f.EngineClient(t), &dynamodb.ScanInput{TableName: aws.String(f.EngineTable()), ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("contains(#p, :t)"),
		ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: tenant}}})
	for p.HasMorePages() {
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range pg.Items {
			if pk := it["tenantdb:pk"].(*types.AttributeValueMemberS).Value; !collectionPK.MatchString(pk) {
				continue // registry entries, statistics, audit: not items
			}
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	slices.Sort(out)
	return out
}

// TestTenantRestoreAcrossGateways: `tenantdb tenant restore` through a
// gateway rewinds tenant A's view of a shared table and A's own table to
// a time, in place: items changed, created and deleted since are as they
// were (a GSI query too), a table deleted since is left deleted and one
// created since is refused by name until the others are named; A is refused as "being restored" meanwhile on
// both gateways while B — with items of the same keys in the shared
// table and a table of the same name — is served and left byte for byte
// as it was; the status and the audit show it; no scratch table is left.
func TestTenantRestoreAcrossGateways(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: runs the tenantdb CLI")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	rwTable(t, g0.Client(g0.Operator), "rw_shared")
	a, b := g0.NewTenant(t, "rwa", "admin"), g1.NewTenant(t, "rwb", "admin")
	a0, a1, b0, b1 := g0.Client(a), g1.Client(a), g0.Client(b), g1.Client(b)
	rwTable(t, a0, "own")
	rwTable(t, b1, "own")
	rwTable(t, a0, "gone")
	rwEnable(t, a1, "rw_shared", "own", "gone")
	rwEnable(t, b0, "rw_shared", "own")
	rwWrite(t, a0, "gone", 0, 10, "then ")
	for _, c := range []*dynamodb.Client{a0, b1} {
		rwWrite(t, c, "rw_shared", 0, 300, "then ")
		rwWrite(t, c, "own", 0, 200, "then ")
	}
	want := map[string][]string{"rw_shared": items(t, a1, "rw_shared"), "own": items(t, a1, "own")}
	wantG := map[string]string{"rw_shared": byG(t, a1, "rw_shared"), "own": byG(t, a1, "own")}
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	for _, table := range []string{"rw_shared", "own"} {
		rwWrite(t, a0, table, 0, 50, "changed ")  // changed since
		rwWrite(t, a1, table, 50, 100, "")        // deleted since
		rwWrite(t, a0, table, 300, 340, "added ") // created since
		rwWrite(t, b1, table, 0, 20, "b-later ")  // B's changes since stay
	}
	// A table deleted since is not restored; one created since has no
	// history at the time: refused, naming it, until the others are named.
	if _, err := a1.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("gone")}); err != nil {
		t.Fatal(err)
	}
	rwTable(t, a0, "late")
	rwEnable(t, a1, "late")
	rwWrite(t, a0, "late", 0, 10, "late ")
	_, stderr, err := tenantdbCLI(t, "tenant", "restore", a.TenantID, "--to-time", at.UTC().Format(time.RFC3339Nano), "--endpoint", g0.Endpoint, "--key", a.Key)
	if err == nil || !strings.Contains(stderr, "InvalidRestoreTime") || !strings.Contains(stderr, "late (earliest restorable time") ||
		strings.Contains(stderr, "rw_shared") || strings.Contains(stderr, "gone") {
		t.Fatalf("a restore covering a table created since: %v\n%s", err, stderr)
	}
	bBefore := collectionItemsOf(t, f, b.TenantID)
	bShared, bOwn := items(t, b0, "rw_shared"), items(t, b0, "own")

	// B keeps being served during A's restore; A is refused on both
	// gateways once the fence is up.
	var stop atomic.Bool
	var bErrs, bOps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			c := []*dynamodb.Client{b0, b1}[i%2]
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("rw_shared"), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k00001"}}})
			if err != nil {
				bErrs.Add(1)
				t.Logf("B during A's restore: %v", err)
			}
			bOps.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var fenced sync.Map
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			g, c := i%2, []*dynamodb.Client{a0, a1}[i%2]
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("own"),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "during"}}})
			if err != nil && strings.Contains(err.Error(), "being restored") {
				fenced.Store(g, true)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// NB: the restore deletes it (it did not exist at the time).
	if _, err := a1.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("own"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "during"}, "v": &types.AttributeValueMemberS{Value: "x"}}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, stderr, err := tenantdbCLI(t, "tenant", "restore", a.TenantID, "--to-time", at.UTC().Format(time.RFC3339Nano), "--table", "rw_shared", "--table", "own",
		"--endpoint", g1.Endpoint, "--key", a.Key, "--interval", "500ms", "--json")
	took := time.Since(start)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("tenant restore: %v\n%s", err, stderr)
	}
	t.Logf("tenant restore took %v; progress:\n%s", took.Round(time.Millisecond), stderr)
	var r client.TenantRestore
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("tenant restore --json: %v\n%s", err, out)
	}
	if r.State != "done" || len(r.Tables) != 2 || !r.Tables[0].Done || !r.Tables[1].Done {
		t.Fatalf("restore: %+v", r)
	}
	for _, tb := range r.Tables {
		// 300/200 items at the time + 40 created since (and "during").
		if tb.Changed < 140 || tb.Keys < tb.Changed {
			t.Errorf("table %s: %d keys looked at, %d written back or deleted", tb.Name, tb.Keys, tb.Changed)
		}
	}
	for _, g := range []int{0, 1} {
		if _, ok := fenced.Load(g); !ok {
			t.Errorf("A's writes through gateway %d were never refused as being restored", g)
		}
	}
	if bErrs.Load() > 0 || bOps.Load() == 0 {
		t.Errorf("B during A's restore: %d of %d reads failed", bErrs.Load(), bOps.Load())
	}
	for table, w := range want {
		for i, c := range []*dynamodb.Client{a0, a1} {
			if got := items(t, c, table); !slices.Equal(got, w) {
				t.Errorf("A's %s after the restore through gateway %d: %d items, want the %d at the time", table, i, len(got), len(w))
			}
		}
		if got := byG(t, a0, table); got != wantG[table] {
			t.Errorf("A's index byG of %s after the restore: %s, want %s", table, got, wantG[table])
		}
	}
	if got := collectionItemsOf(t, f, b.TenantID); !slices.Equal(got, bBefore) {
		t.Errorf("B's engine items changed by A's restore: %d items, %d before", len(got), len(bBefore))
	}
	if !slices.Equal(items(t, b1, "rw_shared"), bShared) || !slices.Equal(items(t, b1, "own"), bOwn) {
		t.Error("B's items changed by A's restore")
	}
	// The status through the other gateway and the CLI's restore-status.
	out, stderr, err = tenantdbCLI(t, "tenant", "restore-status", a.TenantID, "--endpoint", g0.Endpoint, "--key", a.Key, "--json")
	if err != nil {
		t.Fatalf("tenant restore-status: %v\n%s", err, stderr)
	}
	var st client.TenantRestore
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.ID != r.ID || st.State != "done" || st.Finished == nil {
		t.Errorf("restore-status: %+v %v", st, err)
	}
	// A writes again at once through either gateway.
	if _, err := a0.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("own"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "after"}, "v": &types.AttributeValueMemberS{Value: "x"}}}); err != nil {
		t.Errorf("A's write after its restore: %v", err)
	}
	checkRestoreAudit(t, g0, a.TenantID, false)
	noScratch(t, f)
}

func checkRestoreAudit(t *testing.T, g *harness.Server, tenant string, resumed bool) {
	t.Helper()
	var actions []string
	until(t, "the restore's audit records", 10*time.Second, func() bool {
		page, err := g.Admin().Audit(context.Background(), tenant, client.AuditQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		actions = actions[:0]
		for _, r := range page.Records {
			if strings.HasPrefix(r.Action, "tenant.restore") {
				actions = append(actions, r.Action)
			}
		}
		return slices.Contains(actions, "tenant.restore.done")
	})
	want := []string{"tenant.restore", "tenant.restore.done"}
	if resumed {
		want = append(want, "tenant.restore.resume")
	}
	for _, a := range want {
		if !slices.Contains(actions, a) {
			t.Errorf("the tenant's audit log has no %s (has %v)", a, actions)
		}
	}
	if slices.Contains(actions, "tenant.restore.failed") {
		t.Errorf("the tenant's audit log has a failed restore: %v", actions)
	}
}

func noScratch(t *testing.T, f *harness.Cluster) {
	t.Helper()
	until(t, "no scratch table left in the engine", 30*time.Second, func() bool {
		ls, err := f.EngineClient(t).ListTables(context.Background(), &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(ls.TableNames, func(s string) bool { return strings.Contains(s, "-pitr-") })
	})
}

// TestTenantRestoreKilledGateway: the gateway process running a tenant
// restore is killed with kill -9 in the middle of the copy; another
// gateway takes it over (its lease) and finishes it exactly; the tenant
// stays fenced until then, and the audit log says it was resumed.
func TestTenantRestoreKilledGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills tenantdb processes")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	key := g0.NewTenant(t, "rwkilled", "admin")
	c0, c1 := g0.Client(key), g1.Client(key)
	if _, err := g0.Admin().SetShards(ctx, key.TenantID, client.ShardRequest{Shards: 4}); err != nil {
		t.Fatal(err)
	}
	rwTable(t, c0, "big")
	rwEnable(t, c0, "big")
	const n = 3000
	rwWrite(t, c0, "big", 0, n, "then ")
	want, wantG := items(t, c1, "big"), byG(t, c1, "big")
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	rwWrite(t, c0, "big", 0, 1500, "changed ")
	rwWrite(t, c0, "big", 1500, 2000, "")
	rwWrite(t, c0, "big", n, n+500, "added ")

	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	_, stderr, err := tenantdbCLI(t, "tenant", "restore", key.TenantID, "--to-time", at.UTC().Format(time.RFC3339Nano),
		"--endpoint", victim.Endpoint, "--key", key.Key, "--no-wait")
	if err != nil {
		t.Fatalf("tenant restore --no-wait: %v\n%s", err, stderr)
	}
	ac := client.New(g1.Endpoint, key.Key)
	until(t, "the restore's copy under way", 2*time.Minute, func() bool {
		r, err := ac.Restore(ctx, key.TenantID)
		return err == nil && len(r.Tables) == 1 && r.Tables[0].Checked > 0
	})
	victim.Kill(t)
	r, err := ac.Restore(ctx, key.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	killedMid := r.State == "running"
	t.Logf("killed at %+v", r.Tables)
	if killedMid {
		_, err := c1.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("big"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k00001"}}})
		if err == nil || !strings.Contains(err.Error(), "being restored") {
			t.Errorf("A's read while its restore is unfinished: %v", err)
		}
	}
	took := until(t, "the restore finished by another gateway", 2*time.Minute, func() bool {
		r, err = ac.Restore(ctx, key.TenantID)
		return err == nil && r.State == "done"
	})
	t.Logf("done %v after the kill: %+v", took.Round(time.Millisecond), r.Tables)
	if got := items(t, c0, "big"); !slices.Equal(got, want) {
		t.Errorf("after the restore: %d items, want the %d at the time (or they differ)", len(got), len(want))
	}
	if got := byG(t, c1, "big"); got != wantG {
		t.Errorf("index byG after the restore: %s, want %s", got, wantG)
	}
	checkRestoreAudit(t, g0, key.TenantID, killedMid)
	noScratch(t, f)
}
