package gateways

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestPITRAcrossKilledGateways: a restore to a point in time through a
// gateway process killed with kill -9 in the middle of copying the
// tenant's items out of the engine's scratch table is finished by
// another gateway (the table CREATING until then): the restored table
// holds exactly the tenant's items as they were at that time, over 4
// shards, its index answers, no scratch table is left in the engine, and
// the tenant's audit log records the restore's start, its resumption and
// its end.
func TestPITRAcrossKilledGateways(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills tenantdb processes")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	key := g0.NewTenant(t, "pitrkilled", "admin")
	c0, c1 := g0.Client(key), g1.Client(key)
	shardedSource(t, g0, key) // backup_test.go
	if _, err := c0.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("src"),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	until(t, "the restorable window open", 20*time.Second, func() bool {
		d, err := c1.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("src")})
		return err == nil && d.ContinuousBackupsDescription.PointInTimeRecoveryDescription.LatestRestorableDateTime != nil
	})
	const n = 4000
	write := func(from, to int, v string) { writeItems(t, c0, from, to, v) }
	write(0, n, "value ")
	want := items(t, c1, "src")
	if len(want) != n {
		t.Fatalf("%d items written, want %d", len(want), n)
	}
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	write(0, 500, "later ")
	write(n, n+500, "added ")

	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	cv := victim.Client(key)
	go func() {
		_, _ = cv.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("src"),
			TargetTableName: aws.String("restored"), RestoreDateTime: aws.Time(at)})
	}()
	until(t, "the restore's copy under way", 90*time.Second, func() bool {
		out, err := c1.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("restored"), Limit: aws.Int32(1)})
		return err == nil && len(out.Items) > 0
	})
	victim.Kill(t)
	killedMid := false
	dt, err := c1.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("restored")})
	if err != nil {
		t.Fatal(err)
	}
	if dt.Table.TableStatus == types.TableStatusCreating {
		killedMid = true
		t.Logf("killed mid-copy: %d of %d items copied", aws.ToInt64(dt.Table.ItemCount), n)
	} else {
		t.Logf("the restore ended before kill -9 landed (%s)", dt.Table.TableStatus)
	}
	took := until(t, "the restore finished by another gateway", 90*time.Second, func() bool {
		dt, err = c1.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("restored")})
		return err == nil && dt.Table.TableStatus == types.TableStatusActive
	})
	t.Logf("ACTIVE %v after the kill", took.Round(time.Millisecond))
	if got := items(t, c0, "restored"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the restored table holds %d items, the source %d at the time restored to (or they differ)", len(got), len(want))
	}
	for _, g := range []string{"g0", "g1", "g2"} {
		out, err := c1.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("restored"), IndexName: aws.String("byG"), Select: types.SelectCount,
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: g}}})
		if err != nil {
			t.Fatal(err)
		}
		wantN := 0
		for k := 0; k < n; k += 4 {
			if fmt.Sprint("g", k%3) == g {
				wantN++
			}
		}
		if int(out.Count) != wantN {
			t.Errorf("index byG of the restored table, %s: %d, want %d", g, out.Count, wantN)
		}
	}
	if st, err := g1.Admin().Shards(ctx, key.TenantID); err != nil || len(st.Tables) != 2 || st.Tables[1].Shards != 4 {
		t.Errorf("the layouts after the restore: %+v %v", st, err)
	}
	// The scratch table is deleted once copied (by whichever gateway
	// finished).
	until(t, "no scratch table left in the engine", 30*time.Second, func() bool {
		ls, err := f.EngineClient(t).ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(ls.TableNames, func(s string) bool { return strings.Contains(s, "-pitr-") })
	})
	var actions []string
	until(t, "the restore's audit records", 10*time.Second, func() bool {
		page, err := g0.Admin().Audit(ctx, key.TenantID, client.AuditQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		actions = actions[:0]
		for _, r := range page.Records {
			if strings.HasPrefix(r.Action, "table.pitr-restore.") {
				actions = append(actions, r.Action)
			}
		}
		return slices.Contains(actions, "table.pitr-restore.done")
	})
	t.Logf("audit: %v", actions)
	wantActions := []string{"table.pitr-restore.started", "table.pitr-restore.done"}
	if killedMid {
		wantActions = append(wantActions, "table.pitr-restore.resumed")
	}
	for _, a := range wantActions {
		if !slices.Contains(actions, a) {
			t.Errorf("the tenant's audit log has no %s (has %v)", a, actions)
		}
	}
	if v, err := g0.Admin().VerifyAudit(ctx, key.TenantID); err != nil || !v.OK {
		t.Errorf("the tenant's audit chain: %+v, %v", v, err)
	}
}
