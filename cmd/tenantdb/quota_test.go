package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// quotaServer runs serve (fairness on) on dir and returns a harness view of
// it and a function that stops it.
func quotaServer(t *testing.T, dir string) (*harness.Server, func()) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.LogLevel = "error"
	cfg.DefaultTenant = false
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, out) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
			k, err := auth.ReadCredentialsFile(filepath.Join(dir, auth.OperatorCredentialsFile), "")
			if err != nil {
				stop()
				t.Fatal(err)
			}
			op := harness.Credential{AccessKeyID: k.AccessKeyID(), SecretAccessKey: k.Secret, Key: k.String()}
			return &harness.Server{Endpoint: m[1], Operator: op}, stop
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// qcli runs a tenantdb client command against s with key and returns its
// stdout; it fails the test on a non-zero exit unless wantFail.
func qcli(t *testing.T, s *harness.Server, key string, wantFail bool, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "--endpoint", s.Endpoint, "--key", key)
	code := run(context.Background(), args, &stdout, &stderr)
	if (code != 0) != wantFail {
		t.Fatalf("tenantdb %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, &stdout, &stderr)
	}
	if wantFail {
		return stderr.String()
	}
	return stdout.String()
}

// usageOf runs `tenantdb usage --tenant tenant --json` with key.
func usageOf(t *testing.T, s *harness.Server, key, tenant string) quota.Report {
	t.Helper()
	var r quota.Report
	out := qcli(t, s, key, false, "usage", "--tenant", tenant, "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("usage --json printed %q: %v", out, err)
	}
	return r
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func createTable(t *testing.T, c *dynamodb.Client, name string, tags ...types.Tag) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		Tags:      tags,
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
}

func item(pk string, sk int, payload int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk":   &types.AttributeValueMemberS{Value: pk},
		"sk":   &types.AttributeValueMemberN{Value: fmt.Sprint(sk)},
		"data": &types.AttributeValueMemberS{Value: strings.Repeat("x", payload)},
	}
}

func key(pk string, sk int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberN{Value: fmt.Sprint(sk)},
	}
}

// TestQuotaEndToEnd: a tenant beyond its write quota gets
// ProvisionedThroughputExceededException (no retries), its rejected
// PutItem leaves no item behind, and another tenant writing at the same
// moment is not throttled. Quotas and metering survive a restart; the
// CLI shows and sets quotas; tenant admins may read but not set theirs.
func TestQuotaEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s, stop := quotaServer(t, dir)
	ctx := context.Background()
	noisy := s.NewTenant(t, "noisy", "admin")
	calm := s.NewTenant(t, "calm", "admin")
	nc, cc := s.Client(noisy), s.Client(calm)
	createTable(t, nc, "orders")
	createTable(t, cc, "orders")

	var q quota.Quota
	out := qcli(t, s, s.Operator.Key, false, "quota", "set", "--tenant", noisy.TenantID, "--write-units", "1", "--burst-seconds", "30", "--json")
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		t.Fatalf("quota set --json printed %q: %v", out, err)
	}
	if q.WriteUnits != 1 || q.BurstSeconds != 30 || q.ReadUnits != quota.DefaultReadUnits || !q.Set {
		t.Fatalf("quota after set = %+v", q)
	}

	// The calm tenant writes concurrently the whole time.
	calmErr := make(chan error, 1)
	stopCalm := make(chan struct{})
	var calmPuts atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stopCalm:
				calmErr <- nil
				return
			default:
			}
			calmPuts.Add(1)
			if _, err := cc.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: item("calm", i, 100)}); err != nil {
				calmErr <- fmt.Errorf("calm tenant's put %d: %w", i, err)
				return
			}
		}
	}()

	// 30 units of burst and 1 unit/s, and 10 KB puts cost 10 units: after
	// three puts the tenant is throttled unless each put took seconds.
	rejected := -1
	var consumed float64
	for i := 0; i < 100 && rejected < 0; i++ {
		o, err := nc.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: item("noisy", i, 10000),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		switch code := errCode(err); {
		case err == nil:
			consumed += *o.ConsumedCapacity.CapacityUnits
		case code == "ProvisionedThroughputExceededException":
			rejected = i
			if !strings.Contains(err.Error(), "The tenant's capacity quota was exceeded") || !strings.Contains(err.Error(), "tenantdb quota set") || strings.Contains(err.Error(), "increasing your provisioning level") {
				t.Errorf("throttle message: %v", err)
			}
		default:
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if rejected < 0 {
		t.Fatal("a tenant far over its write quota was never throttled")
	}
	// Let the calm tenant write while the noisy one is throttled.
	for n := calmPuts.Load() + 20; calmPuts.Load() < n; {
		time.Sleep(time.Millisecond)
	}
	close(stopCalm)
	if err := <-calmErr; err != nil {
		t.Fatal(err)
	}
	// Reads have their own capacity; the rejected write left nothing.
	got, err := nc.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("orders"), Key: key("noisy", rejected), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("get after throttle: %v", err)
	}
	if got.Item != nil {
		t.Fatalf("throttled PutItem %d left an item behind: %v", rejected, got.Item)
	}
	if rejected > 0 {
		got, err := nc.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("orders"), Key: key("noisy", rejected-1), ConsistentRead: aws.Bool(true)})
		if err != nil || got.Item == nil {
			t.Fatalf("the last admitted put is missing: %v", err)
		}
	}

	// Tenant admins read their own quota, may not set it, and cannot see
	// another tenant's.
	if out := qcli(t, s, noisy.Key, false, "quota", "show", "--tenant", noisy.TenantID, "--json"); !strings.Contains(out, `"write_units": 1,`) {
		t.Fatalf("tenant admin's quota show: %s", out)
	}
	if msg := qcli(t, s, noisy.Key, true, "quota", "set", "--tenant", noisy.TenantID, "--write-units", "1000"); !strings.Contains(msg, "AccessDenied") {
		t.Fatalf("tenant admin setting its own quota: %s", msg)
	}
	if msg := qcli(t, s, noisy.Key, true, "quota", "show", "--tenant", calm.TenantID); !strings.Contains(msg, "404") {
		t.Fatalf("tenant admin reading another tenant's quota: %s", msg)
	}
	qcli(t, s, s.Operator.Key, false, "quota", "set", "--tenant", calm.TenantID, "--table", "orders", "--read-units", "7")
	if msg := qcli(t, s, s.Operator.Key, true, "quota", "set", "--tenant", calm.TenantID, "--read-units", "-1"); !strings.Contains(msg, "ValidationException") {
		t.Fatalf("negative quota: %s", msg)
	}

	// Metrics show the tenants' throttles, in the tenant's own series
	// (labels are free: it has had one since its first request).
	mreq, _ := http.NewRequest("GET", s.Endpoint+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer "+s.Operator.Key)
	resp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `tenantdb_tenant_throttled_requests_total{reason="capacity",tenant="`+noisy.TenantID+`"} 1`) ||
		!strings.Contains(string(body), `tenantdb_tenant_throttled_requests_total{reason="capacity",tenant="other"} 0`) {
		t.Errorf("/metrics lacks the throttle:\n%s", grepLines(string(body), "tenantdb_tenant_"))
	}

	stop()
	s, stop = quotaServer(t, dir)
	defer stop()
	out = qcli(t, s, s.Operator.Key, false, "quota", "show", "--tenant", noisy.TenantID, "--json")
	q = quota.Quota{}
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		t.Fatal(err)
	}
	if q.WriteUnits != 1 || q.BurstSeconds != 30 || !q.Set {
		t.Fatalf("quota after restart = %+v", q)
	}
	out = qcli(t, s, s.Operator.Key, false, "quota", "show", "--tenant", calm.TenantID, "--table", "orders", "--json")
	if q = (quota.Quota{}); json.Unmarshal([]byte(out), &q) != nil || q.ReadUnits != 7 || q.Table != "orders" {
		t.Fatalf("table quota after restart: %s", out)
	}
	var r quota.Report
	out = qcli(t, s, s.Operator.Key, false, "usage", "--tenant", noisy.TenantID, "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if put := r.ByOperation["PutItem"]; put.Requests != int64(rejected+1) || put.ThrottledRequests != 1 || put.ConsumedWriteUnits != consumed {
		t.Fatalf("noisy tenant's PutItem usage after restart = %+v, want %d requests, 1 throttled, %g units", put, rejected+1, consumed)
	}
	if r.Items != int64(rejected) {
		t.Fatalf("noisy tenant's items = %d, want %d", r.Items, rejected)
	}
	// The token buckets survive the restart too: the noisy tenant,
	// throttled seconds ago, does not have its 30 units of burst back
	// (three 10-unit puts would need 21 units; it has earned at most one
	// per second since).
	nc = s.Client(noisy)
	throttled := false
	for i := 0; i < 3 && !throttled; i++ {
		_, err := nc.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: item("noisy", 1000+i, 10000)})
		switch code := errCode(err); {
		case err == nil:
		case code == "ProvisionedThroughputExceededException":
			throttled = true
		default:
			t.Fatalf("put after restart: %v", err)
		}
	}
	if !throttled {
		t.Fatal("after a restart the throttled tenant had its burst credit back")
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestUsageEqualsConsumedCapacity records a workload of every data
// operation with ReturnConsumedCapacity TOTAL and checks that `tenantdb
// usage` reports exactly the sum, and the items and bytes DescribeTable
// reports.
func TestUsageEqualsConsumedCapacity(t *testing.T) {
	s, stop := quotaServer(t, t.TempDir())
	defer stop()
	ctx := context.Background()
	ten := s.NewTenant(t, "metered", "admin")
	c := s.Client(ten)
	createTable(t, c, "events")
	total := types.ReturnConsumedCapacityTotal
	var reads, writes float64
	var requests int64 = 1 // CreateTable
	addCC := func(w *float64, ccs ...*types.ConsumedCapacity) {
		requests++
		for _, cc := range ccs {
			if cc == nil || cc.CapacityUnits == nil {
				t.Fatal("no ConsumedCapacity in the answer")
			}
			*w += *cc.CapacityUnits
		}
	}
	sizes := []int{10, 1000, 1500, 5000, 9000}
	for i, n := range sizes {
		o, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("events"), Item: item("p", i, n), ReturnConsumedCapacity: total})
		if err != nil {
			t.Fatal(err)
		}
		addCC(&writes, o.ConsumedCapacity)
	}
	for i := range sizes {
		for _, consistent := range []bool{true, false} {
			o, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("events"), Key: key("p", i), ConsistentRead: aws.Bool(consistent), ReturnConsumedCapacity: total})
			if err != nil {
				t.Fatal(err)
			}
			addCC(&reads, o.ConsumedCapacity)
		}
	}
	qo, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("events"), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "p"}}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&reads, qo.ConsumedCapacity)
	so, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("events"), ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&reads, so.ConsumedCapacity)
	uo, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("events"), Key: key("p", 3),
		UpdateExpression: aws.String("SET n = :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&writes, uo.ConsumedCapacity)
	do, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("events"), Key: key("p", 0), ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&writes, do.ConsumedCapacity)
	var wr []types.WriteRequest
	for i := 10; i < 15; i++ {
		wr = append(wr, types.WriteRequest{PutRequest: &types.PutRequest{Item: item("b", i, 2000)}})
	}
	bo, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"events": wr}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&writes, ptrs(bo.ConsumedCapacity)...)
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"events": {Keys: []map[string]types.AttributeValue{key("b", 10), key("b", 11)}}}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&reads, ptrs(bg.ConsumedCapacity)...)
	tw, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("events"), Item: item("t", 1, 3000)}},
		{Delete: &types.Delete{TableName: aws.String("events"), Key: key("b", 14)}},
	}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&writes, ptrs(tw.ConsumedCapacity)...)
	tg, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("events"), Key: key("t", 1)}},
	}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	addCC(&reads, ptrs(tg.ConsumedCapacity)...)
	dt, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	requests++

	var r quota.Report
	out := qcli(t, s, ten.Key, false, "usage", "--tenant", ten.TenantID, "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("usage --json printed %q: %v", out, err)
	}
	if r.ConsumedReadUnits != reads || r.ConsumedWriteUnits != writes || r.Requests != requests || r.ThrottledRequests != 0 {
		t.Fatalf("usage: read %v write %v requests %d throttled %d; want read %v write %v requests %d (sum of ReturnConsumedCapacity)",
			r.ConsumedReadUnits, r.ConsumedWriteUnits, r.Requests, r.ThrottledRequests, reads, writes, requests)
	}
	if r.Items != *dt.Table.ItemCount || r.StorageBytes != *dt.Table.TableSizeBytes || r.Items != 9 {
		t.Fatalf("usage storage: %d items %d bytes; DescribeTable: %d items %d bytes (want 9 items)", r.Items, r.StorageBytes, *dt.Table.ItemCount, *dt.Table.TableSizeBytes)
	}
	if len(r.Hours) == 0 || r.ByTable["events"].ConsumedWriteUnits != writes {
		t.Fatalf("usage hours %+v by table %+v", r.Hours, r.ByTable)
	}
	// The JSON carries the fields scripts depend on.
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tenant_id", "consumed_read_units", "consumed_write_units", "requests", "throttled_requests", "storage_bytes", "items", "by_operation", "hours"} {
		if _, ok := raw[f]; !ok {
			t.Errorf("usage --json lacks %q", f)
		}
	}
	// Another tenant's usage is not visible to this tenant's admin.
	other := s.NewTenant(t, "other", "admin")
	if msg := qcli(t, s, ten.Key, true, "usage", "--tenant", other.TenantID); !strings.Contains(msg, "404") {
		t.Fatalf("reading another tenant's usage: %s", msg)
	}
}

func ptrs(ccs []types.ConsumedCapacity) []*types.ConsumedCapacity {
	out := make([]*types.ConsumedCapacity, len(ccs))
	for i := range ccs {
		out[i] = &ccs[i]
	}
	return out
}

// TestUsageCountsSiloTables: the storage a tenant holds in silo tables
// (its own stores) is metered like any other, per tenant, and still after
// a restart, before any request has opened the silo stores again.
func TestUsageCountsSiloTables(t *testing.T) {
	dir := t.TempDir()
	s, stop := quotaServer(t, dir)
	ctx := context.Background()
	op := s.Client(s.Operator)
	silo := types.Tag{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")}
	createTable(t, op, "vault", silo)
	a, b := s.NewTenant(t, "silo-a", "admin"), s.NewTenant(t, "silo-b", "admin")
	ca, cb := s.Client(a), s.Client(b)
	for i := range 3 {
		if _, err := ca.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("vault"), Item: item("a", i, 500)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("vault"), Item: item("b", 0, 100)}); err != nil {
		t.Fatal(err)
	}
	// A's own silo table.
	createTable(t, ca, "private", silo)
	for i := range 2 {
		if _, err := ca.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("private"), Item: item("a", i, 200)}); err != nil {
			t.Fatal(err)
		}
	}
	describe := func(c *dynamodb.Client, table string) (items, bytes int64) {
		t.Helper()
		dt, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		return *dt.Table.ItemCount, *dt.Table.TableSizeBytes
	}
	aVaultN, aVaultB := describe(ca, "vault")
	aPrivN, aPrivB := describe(ca, "private")
	bVaultN, bVaultB := describe(cb, "vault")
	if aVaultN != 3 || aPrivN != 2 || bVaultN != 1 {
		t.Fatalf("DescribeTable item counts: A vault %d private %d, B vault %d", aVaultN, aPrivN, bVaultN)
	}

	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			who         harness.Credential
			items, size int64
			tables      map[string]int64
		}{
			{a, 5, aVaultB + aPrivB, map[string]int64{"vault": 3, "private": 2}},
			{b, 1, bVaultB, map[string]int64{"vault": 1}},
		} {
			r := usageOf(t, s, s.Operator.Key, c.who.TenantID)
			if r.Items != c.items || r.StorageBytes != c.size {
				t.Errorf("%s: usage of %s: %d items %d bytes, want %d items %d bytes (DescribeTable)", when, c.who.TenantID, r.Items, r.StorageBytes, c.items, c.size)
			}
			got := map[string]int64{}
			for _, ts := range r.Storage {
				got[ts.Table] = ts.Items
			}
			if fmt.Sprint(got) != fmt.Sprint(c.tables) {
				t.Errorf("%s: storage by table of %s: %v, want %v", when, c.who.TenantID, got, c.tables)
			}
		}
	}
	check("before restart")
	stop()

	s2, stop2 := quotaServer(t, dir)
	defer stop2()
	s = s2
	check("after restart")
}

// TestUsageByTableSplitsMultiTableOps: a batch or transaction over several
// tables is metered per table exactly as ReturnConsumedCapacity splits it.
func TestUsageByTableSplitsMultiTableOps(t *testing.T) {
	s, stop := quotaServer(t, t.TempDir())
	defer stop()
	ctx := context.Background()
	ten := s.NewTenant(t, "multi", "admin")
	c := s.Client(ten)
	createTable(t, c, "left")
	createTable(t, c, "right")
	total := types.ReturnConsumedCapacityTotal
	reads, writes := map[string]float64{}, map[string]float64{}
	add := func(m map[string]float64, ccs []types.ConsumedCapacity) {
		if len(ccs) != 2 {
			t.Fatalf("ConsumedCapacity for %d tables, want 2: %+v", len(ccs), ccs)
		}
		for _, cc := range ccs {
			m[*cc.TableName] += *cc.CapacityUnits
		}
	}
	bw, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"left":  {{PutRequest: &types.PutRequest{Item: item("l", 1, 100)}}},
		"right": {{PutRequest: &types.PutRequest{Item: item("r", 1, 5000)}}, {PutRequest: &types.PutRequest{Item: item("r", 2, 9000)}}},
	}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	add(writes, bw.ConsumedCapacity)
	tw, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("left"), Item: item("l", 2, 3000)}},
		{Delete: &types.Delete{TableName: aws.String("right"), Key: key("r", 2)}},
	}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	add(writes, tw.ConsumedCapacity)
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"left":  {Keys: []map[string]types.AttributeValue{key("l", 1), key("l", 2)}},
		"right": {Keys: []map[string]types.AttributeValue{key("r", 1)}, ConsistentRead: aws.Bool(true)},
	}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	add(reads, bg.ConsumedCapacity)
	tg, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("left"), Key: key("l", 2)}},
		{Get: &types.Get{TableName: aws.String("right"), Key: key("r", 1)}},
	}, ReturnConsumedCapacity: total})
	if err != nil {
		t.Fatal(err)
	}
	add(reads, tg.ConsumedCapacity)

	r := usageOf(t, s, ten.Key, ten.TenantID)
	for _, tb := range []string{"left", "right"} {
		got := r.ByTable[tb]
		if got.ConsumedReadUnits != reads[tb] || got.ConsumedWriteUnits != writes[tb] {
			t.Errorf("usage of table %s: read %v write %v; ReturnConsumedCapacity: read %v write %v",
				tb, got.ConsumedReadUnits, got.ConsumedWriteUnits, reads[tb], writes[tb])
		}
	}
	if writes["right"] <= writes["left"] || reads["left"] == 0 {
		t.Fatalf("the workload does not tell the tables apart: reads %v writes %v", reads, writes)
	}
}
