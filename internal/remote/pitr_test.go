package remote_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

func createByG(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func putV(t *testing.T, c *dynamodb.Client, table, pk string, sk int, v, g string) {
	t.Helper()
	it := map[string]types.AttributeValue{"pk": s(pk), "sk": n(fmt.Sprint(sk)), "v": s(v)}
	if g != "" {
		it["g"] = s(g)
	}
	if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatal(err)
	}
}

func pitrOn(ctx context.Context, c *dynamodb.Client, table string) (*dynamodb.UpdateContinuousBackupsOutput, error) {
	return c.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(table),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}})
}

// waitWindow waits until table's restorable window through c has opened
// and returns its earliest time.
func waitWindow(t *testing.T, c *dynamodb.Client, table string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		d, err := c.DescribeContinuousBackups(context.Background(), &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		p := d.ContinuousBackupsDescription.PointInTimeRecoveryDescription
		if p.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled {
			t.Fatalf("DescribeContinuousBackups of %s: %s", table, p.PointInTimeRecoveryStatus)
		}
		if p.EarliestRestorableDateTime != nil && p.LatestRestorableDateTime != nil {
			if p.LatestRestorableDateTime.Before(*p.EarliestRestorableDateTime) {
				t.Fatalf("window %v .. %v", p.EarliestRestorableDateTime, p.LatestRestorableDateTime)
			}
			return *p.EarliestRestorableDateTime
		}
		if time.Now().After(deadline) {
			t.Fatalf("the window of %s did not open", table)
		}
	}
}

// waitActive waits until table is ACTIVE through c.
func waitActive(t *testing.T, c *dynamodb.Client, table string) *types.TableDescription {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err == nil && d.Table.TableStatus == types.TableStatusActive {
			return d.Table
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ACTIVE: %v", table, err)
		}
	}
}

// TestPointInTimeRecoveryAcrossGateways: point-in-time recovery of a
// tenant's own table and of its view of a shared table, enabled through
// one gateway, described and restored through another over the tenantdb
// stand-in engine: the restored tables hold the caller's items as they
// were at the time asked — nothing of another tenant that wrote to a
// same-named table or to the same shared table — and their indexes
// answer; the scratch engine table is gone afterwards and in no
// ListTables; times outside the window, tables without recovery and
// other tenants' tables are refused as DynamoDB refuses them.
func TestPointInTimeRecoveryAcrossGateways(t *testing.T) {
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	ka, kb := g0.NewTenant(t, "pitra", "admin"), g0.NewTenant(t, "pitrb", "admin")
	a0, a1, b0 := g0.Client(ka), g1.Client(ka), g1.Client(kb)
	op := g0.Client(f.Operator)
	createByG(t, a0, "orders")
	createByG(t, b0, "orders")
	createTable(t, op, "shared")

	if _, err := a0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders"),
		TargetTableName: aws.String("early"), UseLatestRestorableTime: aws.Bool(true)}); code(err) != "PointInTimeRecoveryUnavailableException" {
		t.Fatalf("restore before enabling: %v", err)
	}
	out, err := pitrOn(ctx, a0, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if st := out.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus; st != types.PointInTimeRecoveryStatusEnabled {
		t.Fatalf("UpdateContinuousBackups answered %s", st)
	}
	if _, err := pitrOn(ctx, a1, "shared"); err != nil {
		t.Fatal(err)
	}
	// Per tenant: B's same-named table and view of the shared table
	// are not enabled by A's.
	for _, table := range []string{"orders", "shared"} {
		d, err := b0.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(table)})
		if err != nil || d.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled {
			t.Fatalf("B's DescribeContinuousBackups of %s: %+v %v", table, d, err)
		}
	}
	earliest := waitWindow(t, a1, "orders")
	waitWindow(t, a1, "shared")

	// The state at T.
	for i := range 40 {
		g := ""
		if i%2 == 0 {
			g = fmt.Sprint("g", i%3)
		}
		putV(t, a0, "orders", "p", i, "old", g)
		putV(t, b0, "orders", "p", i, "b's", g)
		putV(t, a0, "shared", fmt.Sprint("a", i%4), i, "old", "")
		putV(t, b0, "shared", fmt.Sprint("b", i%4), i, "b's", "")
	}
	wantOrders, wantShared := scanAll(t, a1, "orders"), scanAll(t, a1, "shared")
	if len(wantOrders) != 40 || len(wantShared) != 40 {
		t.Fatalf("A's items at T: %d in orders, %d in its view of shared; want 40 and 40", len(wantOrders), len(wantShared))
	}
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	// After T: overwritten, deleted, added, by A and by B.
	for i := range 10 {
		putV(t, a1, "orders", "p", i, "new", "g9")
		putV(t, a1, "shared", fmt.Sprint("a", i%4), i, "new", "")
		if _, err := a0.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("orders"),
			Key: map[string]types.AttributeValue{"pk": s("p"), "sk": n(fmt.Sprint(10 + i))}}); err != nil {
			t.Fatal(err)
		}
		putV(t, a0, "orders", "p", 100+i, "added", "g0")
		putV(t, b0, "orders", "p", 200+i, "b's later", "g0")
	}

	// Restores through the other gateway.
	for _, c := range []struct{ src, dst string }{{"orders", "orders_at_t"}, {"shared", "shared_at_t"}} {
		r, err := a1.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String(c.src),
			TargetTableName: aws.String(c.dst), RestoreDateTime: aws.Time(at)})
		if err != nil {
			t.Fatalf("RestoreTableToPointInTime %s: %v", c.src, err)
		}
		if rs := r.TableDescription.RestoreSummary; rs == nil || rs.RestoreDateTime == nil || rs.RestoreDateTime.Sub(at).Abs() > time.Millisecond ||
			!strings.HasSuffix(aws.ToString(rs.SourceTableArn), ":table/"+c.src) {
			t.Errorf("RestoreSummary: %+v", rs)
		}
		waitActive(t, a0, c.dst)
	}
	if got := scanAll(t, a0, "orders_at_t"); fmt.Sprint(got) != fmt.Sprint(wantOrders) {
		t.Errorf("restored orders:\n got %v\nwant %v", got, wantOrders)
	}
	if got := scanAll(t, a0, "shared_at_t"); fmt.Sprint(got) != fmt.Sprint(wantShared) {
		t.Errorf("restored shared view:\n got %v\nwant %v", got, wantShared)
	}
	for _, g := range []string{"g0", "g1", "g2", "g9"} {
		q, err := a0.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("orders_at_t"), IndexName: aws.String("byG"), Select: types.SelectCount,
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s(g)}})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for i := range 40 {
			if i%2 == 0 && fmt.Sprint("g", i%3) == g {
				want++
			}
		}
		if int(q.Count) != want {
			t.Errorf("index byG of the restored table, %s: %d items, want %d", g, q.Count, want)
		}
	}
	// B's tables are B's own, untouched.
	for _, it := range scanAll(t, b0, "orders") {
		if strings.Contains(it, "old") || strings.Contains(it, "new") || strings.Contains(it, "added") {
			t.Fatalf("B's orders holds A's item %s", it)
		}
	}
	if _, err := b0.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders_at_t")}); code(err) != "ResourceNotFoundException" {
		t.Errorf("B's DescribeTable of A's restored table: %v", err)
	}

	// Latest restorable time, with an index override (none) and
	// billing override.
	r, err := a0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders"),
		TargetTableName: aws.String("orders_latest"), UseLatestRestorableTime: aws.Bool(true),
		GlobalSecondaryIndexOverride: []types.GlobalSecondaryIndex{}, BillingModeOverride: types.BillingModeProvisioned,
		ProvisionedThroughputOverride: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.TableDescription.GlobalSecondaryIndexes) != 0 || r.TableDescription.BillingModeSummary != nil && r.TableDescription.BillingModeSummary.BillingMode != types.BillingModeProvisioned {
		t.Errorf("overrides not applied: %+v", r.TableDescription)
	}
	waitActive(t, a1, "orders_latest")
	if got, want := scanAll(t, a1, "orders_latest"), scanAll(t, a1, "orders"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restored to the latest time:\n got %v\nwant %v", got, want)
	}

	// Refusals.
	if _, err := a0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders"),
		TargetTableName: aws.String("too_early"), RestoreDateTime: aws.Time(earliest.Add(-2 * time.Second))}); code(err) != "InvalidRestoreTimeException" {
		t.Errorf("restore before the window: %v", err)
	}
	if _, err := a0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders"),
		TargetTableName: aws.String("too_late"), RestoreDateTime: aws.Time(time.Now().Add(time.Hour))}); code(err) != "InvalidRestoreTimeException" {
		t.Errorf("restore after the window: %v", err)
	}
	if _, err := a0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders"),
		TargetTableName: aws.String("orders_at_t"), RestoreDateTime: aws.Time(at)}); code(err) != "TableAlreadyExistsException" {
		t.Errorf("restore onto an existing table: %v", err)
	}
	if _, err := b0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders"),
		TargetTableName: aws.String("stolen"), RestoreDateTime: aws.Time(at)}); code(err) != "PointInTimeRecoveryUnavailableException" {
		t.Errorf("B's restore of its own table without recovery: %v", err)
	}
	if _, err := b0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders_at_t"),
		TargetTableName: aws.String("stolen"), UseLatestRestorableTime: aws.Bool(true)}); code(err) != "TableNotFoundException" {
		t.Errorf("B's restore of A's table: %v", err)
	}
	if _, err := a0.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("orders"),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true), RecoveryPeriodInDays: aws.Int32(36)}}); code(err) != "ValidationException" {
		t.Errorf("a period of 36 days: %v", err)
	}

	// Nobody sees a scratch table, and none is left in the engine.
	ls, err := a0.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ls.TableNames); got != "[orders orders_at_t orders_latest shared shared_at_t]" {
		t.Errorf("A's ListTables: %s", got)
	}
	eng := f.EngineClient(t)
	els, err := eng.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range els.TableNames {
		if strings.Contains(name, "-pitr-") {
			t.Errorf("a scratch table is left in the engine: %s", name)
		}
	}

	// Disabled: described so, refused, and the engine's stays on.
	if _, err := a1.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String("orders"),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(false)}}); err != nil {
		t.Fatal(err)
	}
	d, err := a0.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("orders")})
	if err != nil || d.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled {
		t.Errorf("after disabling: %+v %v", d, err)
	}
	if _, err := a0.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("orders"),
		TargetTableName: aws.String("after_off"), RestoreDateTime: aws.Time(at)}); code(err) != "PointInTimeRecoveryUnavailableException" {
		t.Errorf("restore after disabling: %v", err)
	}
	ed, err := eng.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(f.EngineTable())})
	if err != nil || ed.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled {
		t.Errorf("the engine table's recovery after a logical disable: %+v %v", ed, err)
	}

	// Charged to the tenant: the copies' engine units.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		u, err := g0.Admin().Usage(ctx, ka.TenantID, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if rs := u.ByOperation["RestoreTableToPointInTime"]; rs.ConsumedReadUnits >= 1 && rs.ConsumedWriteUnits >= 80 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage: %+v; want the copies' reads and writes", u.ByOperation["RestoreTableToPointInTime"])
		}
	}
}

// TestPointInTimeRecoveryRefusedByDynalite: dynalite has no continuous
// backups: enabling point-in-time recovery answers a ValidationException
// saying why, and the table is described without it.
func TestPointInTimeRecoveryRefusedByDynalite(t *testing.T) {
	srv := harness.Start(t, harness.Options{Remote: true, RemoteEngine: harness.StartDynalite(t)})
	ctx := context.Background()
	a := srv.Client(srv.Default)
	createTable(t, a, "src")
	_, err := pitrOn(ctx, a, "src")
	if code(err) != "ValidationException" || !strings.Contains(err.Error(), "not available on this engine") {
		t.Fatalf("enabling point-in-time recovery over dynalite: %v", err)
	}
	t.Logf("refused: %v", err)
	d, err := a.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("src")})
	if err != nil || d.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled {
		t.Errorf("DescribeContinuousBackups: %+v %v", d, err)
	}
	if _, err := a.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("src"), TargetTableName: aws.String("pitr"),
		UseLatestRestorableTime: aws.Bool(true)}); code(err) != "PointInTimeRecoveryUnavailableException" {
		t.Errorf("RestoreTableToPointInTime: %v", err)
	}
}

// TestPITRAnswersCreating: a restore that takes longer than the
// gateway's wait is answered CREATING with RestoreInProgress, and
// finishes in the background (read through another gateway) with the
// items as they were at the time asked. The gateway sweeps scratch
// tables every 50 ms meanwhile: a stray one (no job names it) is
// deleted, the restore's own is not.
func TestPITRAnswersCreating(t *testing.T) {
	f := harness.StartCluster(t, 1, harness.Options{})
	g0 := f.Gateways[0]
	ctx := context.Background()
	eng := f.EngineClient(t)
	stray := f.EngineTable() + "-pitr-999999"
	if _, err := eng.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(stray),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest}); err != nil {
		t.Fatal(err)
	}
	quick := f.StartGatewayWith(t, t.TempDir(), harness.GatewayOptions{PITRWait: time.Millisecond, JobSweep: 50 * time.Millisecond})
	c0, cq := g0.Client(f.Default), quick.Client(f.Default)
	createTable(t, c0, "slow")
	if _, err := pitrOn(ctx, c0, "slow"); err != nil {
		t.Fatal(err)
	}
	waitWindow(t, c0, "slow")
	for i := range 300 {
		putV(t, c0, "slow", fmt.Sprint("p", i%7), i, "then", "")
	}
	want := scanAll(t, c0, "slow")
	time.Sleep(10 * time.Millisecond)
	at := time.Now()
	time.Sleep(10 * time.Millisecond)
	putV(t, c0, "slow", "p0", 0, "later", "")
	r, err := cq.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("slow"),
		TargetTableName: aws.String("slow_at"), RestoreDateTime: aws.Time(at)})
	if err != nil {
		t.Fatal(err)
	}
	if r.TableDescription.TableStatus != types.TableStatusCreating || r.TableDescription.RestoreSummary == nil ||
		!aws.ToBool(r.TableDescription.RestoreSummary.RestoreInProgress) {
		t.Fatalf("answered %s, summary %+v; want CREATING in progress", r.TableDescription.TableStatus, r.TableDescription.RestoreSummary)
	}
	waitActive(t, c0, "slow_at")
	if got := scanAll(t, c0, "slow_at"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("restored in the background: %d items, want %d (or they differ)", len(got), len(want))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := eng.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(stray)})
		if code(err) == "ResourceNotFoundException" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stray scratch table is still in the engine: %v", err)
		}
	}
}
