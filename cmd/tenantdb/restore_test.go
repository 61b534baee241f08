package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// createStatusTable creates table name (pk, sk) with a GSI on status.
func createStatusTable(t *testing.T, ddb *dynamodb.Client, name string) {
	t.Helper()
	s := types.ScalarAttributeTypeS
	_, err := ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: s}, {AttributeName: aws.String("sk"), AttributeType: s},
			{AttributeName: aws.String("status"), AttributeType: s}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byStatus"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("status"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func enablePITR(t *testing.T, ddb *dynamodb.Client, table string) {
	t.Helper()
	if _, err := ddb.UpdateContinuousBackups(context.Background(), &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(table),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
}

func order(pk, sk, status, v string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
		"status": &types.AttributeValueMemberS{Value: status}, "v": &types.AttributeValueMemberS{Value: v}}
}

// statusCount counts a's items of table with status through the GSI.
func statusCount(t *testing.T, ddb *dynamodb.Client, table, status string) int {
	t.Helper()
	return len(queryAll(t, ddb, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byStatus"),
		KeyConditionExpression:    aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: status}}}))
}

func itemCount(t *testing.T, ddb *dynamodb.Client, table string) int64 {
	t.Helper()
	d, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToInt64(d.Table.ItemCount)
}

// runCLI runs tenantdb and returns its exit code, stdout and stderr.
func runCLI(srv *harness.Server, key string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	args = append(args, "--endpoint", srv.Endpoint, "--key", key)
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestTenantRestore: tenant A's view of a shared table and its own table,
// changed after a time T, are restored in place to T with `tenantdb
// tenant restore` (the operator's key: the CLI acts through an admin
// session) while four other tenants keep writing to the same shared
// table: A then has exactly T's items (scan, GSI, item count), every
// acknowledged write of the others is there, A's writes were refused
// while it ran, the restore is audited in A's and the platform log, and
// restoring to its undo_to brings back the state before it.
func TestTenantRestore(t *testing.T) {
	srv := harness.Start(t)
	ctx := context.Background()
	createStatusTable(t, srv.Client(srv.Operator), "Orders")
	a := srv.NewTenant(t, "restore-a", "admin")
	ddb := srv.Client(a)
	createStatusTable(t, ddb, "Mine")
	createStatusTable(t, ddb, "NoPITR")
	enablePITR(t, ddb, "Orders")
	enablePITR(t, ddb, "Mine")
	time.Sleep(1100 * time.Millisecond) // the log's coverage starts a second after its stream

	put := func(c *dynamodb.Client, table string, item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1500 {
		put(ddb, "Orders", order(fmt.Sprintf("c%02d", i%40), fmt.Sprintf("o%05d", i), "open", "v1"))
	}
	for i := range 50 {
		put(ddb, "Mine", order("me", fmt.Sprintf("m%03d", i), "open", "v1"))
	}
	time.Sleep(5 * time.Millisecond)
	at := time.Now()
	time.Sleep(5 * time.Millisecond)
	atOrders, atMine := scanAll(t, ddb, "Orders"), scanAll(t, ddb, "Mine")

	// After T: updates, deletes, new items.
	for i := range 1500 {
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("c%02d", i%40)}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("o%05d", i)}}
		switch i % 3 {
		case 0:
			if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("Orders"), Key: key}); err != nil {
				t.Fatal(err)
			}
		case 1:
			if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Orders"), Key: key, UpdateExpression: aws.String("SET #s = :s, v = :v"),
				ExpressionAttributeNames:  map[string]string{"#s": "status"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "shipped"}, ":v": &types.AttributeValueMemberS{Value: "v2"}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 700 {
		put(ddb, "Orders", order("new", fmt.Sprintf("n%05d", i), "late", "v3"))
	}
	put(ddb, "Mine", order("me", "m999", "late", "v3"))
	if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("Mine"), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "me"}, "sk": &types.AttributeValueMemberS{Value: "m000"}}}); err != nil {
		t.Fatal(err)
	}
	put(ddb, "NoPITR", order("x", "y", "open", "v"))
	beforeOrders, beforeMine := scanAll(t, ddb, "Orders"), scanAll(t, ddb, "Mine")
	if slices.Equal(beforeOrders, atOrders) {
		t.Fatal("the changes after T changed nothing; the test proves nothing")
	}

	// Refusals: a table without history, a time before the history, an
	// app key.
	code, _, stderr := runCLI(srv, srv.Operator.Key, "tenant", "restore", a.TenantID, "--to-time", at.Format(time.RFC3339Nano))
	if code == 0 || !strings.Contains(stderr, "PointInTimeRecoveryUnavailable") || !strings.Contains(stderr, "NoPITR") || strings.Contains(stderr, "Orders") {
		t.Fatalf("restore with a table lacking history: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(srv, srv.Operator.Key, "tenant", "restore", a.TenantID, "--to-time", at.Add(-time.Hour).Format(time.RFC3339), "--table", "Orders")
	if code == 0 || !strings.Contains(stderr, "InvalidRestoreTime") || !strings.Contains(stderr, "Orders (earliest restorable time 20") {
		t.Fatalf("restore before the history: exit %d, %s", code, stderr)
	}
	app := srv.NewKey(t, a.TenantID, "app")
	if code, _, stderr = runCLI(srv, app.Key, "tenant", "restore", a.TenantID, "--to-time", at.Format(time.RFC3339Nano), "--table", "Orders"); code == 0 || !strings.Contains(stderr, "403") && !strings.Contains(stderr, "AccessDenied") && !strings.Contains(stderr, "forbidden") {
		t.Fatalf("an app key restored: exit %d, %s", code, stderr)
	}

	// The other tenants' load, acknowledged writes recorded.
	type ack struct {
		c    *dynamodb.Client
		item map[string]types.AttributeValue
	}
	var (
		mu    sync.Mutex
		acked []ack
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	for n := range 4 {
		o := srv.NewTenant(t, fmt.Sprintf("restore-o%d", n), "app")
		oc := srv.Client(o)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				item := order(fmt.Sprintf("c%02d", i%40), fmt.Sprintf("o%05d", i), "open", fmt.Sprintf("other%d", n))
				if _, err := oc.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: item}); err != nil {
					t.Errorf("tenant %d's write during the restore: %v", n, err)
					return
				}
				mu.Lock()
				acked = append(acked, ack{oc, item})
				mu.Unlock()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)

	code, out, stderr := runCLI(srv, srv.Operator.Key, "tenant", "restore", a.TenantID, "--to-time", at.Format(time.RFC3339Nano), "--table", "Orders", "--table", "Mine", "--no-wait", "--json")
	if code != 0 {
		t.Fatalf("restore: exit %d, %s", code, stderr)
	}
	// NB: the fence is up when the start is answered.
	_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: order("c00", "o00000", "open", "during")})
	var r client.TenantRestore
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil {
		t.Fatalf("--json: %s: %v", out, jerr)
	}
	if errCodeOf(err) != "ResourceInUseException" || !strings.Contains(err.Error(), "being restored") {
		st, _ := srv.Admin().Restore(ctx, a.TenantID)
		t.Fatalf("A's write during its restore: %v (restore %+v)", err, st)
	}
	// NB: the restore runs to its end however long a loaded machine takes
	// (under -race beside other packages, over a minute): the test's own
	// deadline (go test -timeout) is the only bound; meanwhile it shows
	// its progress, which never goes back.
	budget := time.Now().Add(10 * time.Minute)
	if d, ok := t.Deadline(); ok {
		budget = d.Add(-time.Minute)
	}
	checked := map[string]int64{}
	for {
		code, out, stderr = runCLI(srv, srv.Operator.Key, "tenant", "restore-status", a.TenantID, "--json")
		if code != 0 {
			t.Fatalf("restore-status: %s", stderr)
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		for _, tb := range r.Tables {
			if tb.Checked < checked[tb.Name] {
				t.Fatalf("restore-status of %s went back from %d keys checked to %d: %+v", tb.Name, checked[tb.Name], tb.Checked, r)
			}
			checked[tb.Name] = tb.Checked
		}
		if r.State != "running" || (!r.Running && r.Error != "") || time.Now().After(budget) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if r.State != "done" || len(r.Tables) != 2 || r.Error != "" {
		t.Fatalf("restore: %+v", r)
	}
	if got := scanAll(t, ddb, "Orders"); !slices.Equal(got, atOrders) {
		t.Fatalf("A's Orders after the restore: %d items, at T %d", len(got), len(atOrders))
	}
	if got := scanAll(t, ddb, "Mine"); !slices.Equal(got, atMine) {
		t.Fatalf("A's Mine after the restore: %v, at T %v", got, atMine)
	}
	if n := statusCount(t, ddb, "Orders", "open"); n != 1500 {
		t.Errorf("GSI open: %d, want 1500", n)
	}
	if n := statusCount(t, ddb, "Orders", "shipped") + statusCount(t, ddb, "Orders", "late"); n != 0 {
		t.Errorf("GSI shipped+late: %d, want 0", n)
	}
	if n := itemCount(t, ddb, "Orders"); n != 1500 {
		t.Errorf("ItemCount %d, want 1500", n)
	}
	if len(acked) == 0 {
		t.Fatal("the other tenants wrote nothing during the restore")
	}
	for _, w := range acked {
		got, err := w.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Orders"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": w.item["pk"], "sk": w.item["sk"]}})
		if err != nil || got.Item == nil || got.Item["v"].(*types.AttributeValueMemberS).Value != w.item["v"].(*types.AttributeValueMemberS).Value {
			t.Fatalf("an acknowledged write of another tenant is gone: %v %v", got, err)
		}
	}
	t.Logf("%d acknowledged writes of 4 other tenants during the restore, all intact", len(acked))

	// Undo, waiting with progress.
	code, out, stderr = runCLI(srv, srv.Operator.Key, "tenant", "restore", a.TenantID, "--to-time", r.UndoTo.Format(time.RFC3339Nano), "--table", "Orders", "--table", "Mine", "--json")
	if code != 0 || !strings.Contains(stderr, "Orders: done") {
		t.Fatalf("undo: exit %d\n%s", code, stderr)
	}
	if got := scanAll(t, ddb, "Orders"); !slices.Equal(got, beforeOrders) {
		t.Fatalf("A's Orders after the undo: %d items, before the restore %d", len(got), len(beforeOrders))
	}
	if got := scanAll(t, ddb, "Mine"); !slices.Equal(got, beforeMine) {
		t.Fatalf("A's Mine after the undo: %v, before %v", got, beforeMine)
	}
	put(ddb, "Orders", order("c00", "o00000", "open", "after"))

	// Audited: A's log and the platform log.
	// NB: every page of the log: each CLI call (restore-status polls
	// above, as long as the restore runs) is an admin session of the
	// operator's, recorded in the tenant's log.
	actions := func(tenant string) (string, int) {
		var acts []string
		n := 0
		for q := (client.AuditQuery{Limit: 1000}); ; {
			page, err := srv.Admin().Audit(ctx, tenant, q)
			if err != nil {
				t.Fatal(err)
			}
			n += len(page.Records)
			for _, rec := range page.Records {
				if strings.HasPrefix(rec.Action, "tenant.restore") {
					acts = append(acts, rec.Action+":"+rec.Outcome)
				}
			}
			if page.NextAfter == 0 || len(page.Records) == 0 {
				break
			}
			q.After = page.NextAfter
		}
		return strings.Join(acts, " "), n
	}
	for _, who := range []string{a.TenantID, ""} {
		got, n := actions(who)
		for _, want := range []string{"tenant.restore:error", "tenant.restore:ok", "tenant.restore.done:ok"} {
			if !strings.Contains(got, want) {
				t.Errorf("audit log %q (%d records): %s lacks %s", who, n, got, want)
			}
		}
	}
}

// TestTenantRestoreRemote: on a gateway over a remote engine, the CLI's
// restore checks as embedded: a table the tenant holds items of without
// its point-in-time recovery is refused by name (end to end through a
// gateway: tests/gateways TestTenantRestoreAcrossGateways).
func TestTenantRestoreRemote(t *testing.T) {
	srv := harness.Start(t, harness.Options{Remote: true})
	a := srv.NewTenant(t, "remote-restore", "admin")
	c := srv.Client(a)
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("nopitr"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("nopitr"),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
		t.Fatal(err)
	}
	e := tcliErr(t, srv, a.Key, "tenant", "restore", a.TenantID, "--to-time", time.Now().Add(-time.Second).Format(time.RFC3339Nano))
	if !strings.Contains(e, "PointInTimeRecoveryUnavailable") || !strings.Contains(e, "nopitr") {
		t.Fatalf("restore: %s", e)
	}
}
