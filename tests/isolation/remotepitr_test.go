package isolation

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRemotePITRIsolation attacks point-in-time recovery on the remote
// backend, where a restore restores the whole engine table (every
// tenant's items) into a scratch engine table and copies the caller's
// collection out of it, on a fleet of two gateways (A on one, B on the
// other, and crossed):
//   - a restore of a same-named own table, and of the caller's view of a
//     shared table both wrote the same keys to, holds the caller's items
//     only, each as the caller wrote it at that time;
//   - B's recovery of its table is B's own setting: A's enabling says
//     nothing of B's (DISABLED, PointInTimeRecoveryUnavailable), and B
//     cannot restore its view of the shared table to before B enabled it
//     although A's window reaches back further;
//   - A's table named by name or ARN (restore, describe, enable) answers
//     B what a table that does not exist answers, naming nothing of A's;
//   - the scratch engine table is in nobody's ListTables and no tenant
//     can name it (nor the engine table) as a table, during a restore or
//     after; none is left in the engine.
func TestRemotePITRIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	op := g0.Client(g0.Operator)
	if _, err := op.CreateTable(ctx, isoTable("iso_pitr")); err != nil {
		t.Fatal(err)
	}
	a, b := g0.NewTenant(t, "pitrvictim", "admin"), g1.NewTenant(t, "pitrattacker", "admin")
	ca := [2]*dynamodb.Client{g0.Client(a), g1.Client(a)}
	cb := [2]*dynamodb.Client{g1.Client(b), g0.Client(b)}
	secret := "SECRET-A-" + randHex(8)
	putV := func(c *dynamodb.Client, table, pk, v string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}})
			if err == nil {
				return
			}
			if errCode(err) != "ResourceNotFoundException" || time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
	}
	enable := func(c *dynamodb.Client, table string) {
		t.Helper()
		if _, err := c.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(table),
			PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
			t.Fatalf("enabling point-in-time recovery of %s: %v", table, err)
		}
	}
	status := func(c *dynamodb.Client, table string) string {
		t.Helper()
		d, err := c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		return string(d.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus)
	}
	view := func(c *dynamodb.Client, table string) string {
		t.Helper()
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range out.Items {
			got = append(got, it["pk"].(*types.AttributeValueMemberS).Value+"="+it["v"].(*types.AttributeValueMemberS).Value)
		}
		sort.Strings(got)
		return strings.Join(got, ",")
	}
	for _, c := range []*dynamodb.Client{ca[0], cb[0]} {
		if _, err := c.CreateTable(ctx, isoTable("same_name")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ca[0].CreateTable(ctx, isoTable("a_only")); err != nil {
		t.Fatal(err)
	}
	enable(ca[0], "iso_pitr")
	enable(ca[1], "same_name")
	enable(ca[0], "a_only")
	for _, table := range []string{"iso_pitr", "same_name"} {
		if st := status(cb[0], table); st != "DISABLED" {
			t.Errorf("B's recovery of %s after A enabled A's: %s", table, st)
		}
	}
	time.Sleep(1100 * time.Millisecond) // into A's window
	putV(ca[0], "iso_pitr", "same-key", secret)
	putV(ca[0], "iso_pitr", "only-A", secret)
	putV(ca[0], "same_name", "k", secret)
	putV(ca[0], "a_only", "k", secret)
	beforeB := time.Now()
	time.Sleep(1100 * time.Millisecond)
	// B enables its own views only now, and writes the same keys.
	enable(cb[1], "iso_pitr")
	enable(cb[0], "same_name")
	putV(cb[0], "iso_pitr", "same-key", "mine-B")
	putV(cb[0], "same_name", "k", "mine-B")
	time.Sleep(1100 * time.Millisecond) // into B's window
	putV(cb[0], "iso_pitr", "same-key", "mine-B")
	putV(cb[0], "same_name", "k", "mine-B")
	time.Sleep(5 * time.Millisecond)
	at := time.Now()
	time.Sleep(5 * time.Millisecond)
	// Later writes of both: in no restore to at.
	putV(ca[1], "iso_pitr", "same-key", "A-later")
	putV(cb[1], "iso_pitr", "same-key", "B-later")
	putV(ca[1], "iso_pitr", "added-later", "A-later")
	putV(cb[1], "same_name", "k", "B-later")

	// While A's restore runs, B names the scratch and engine tables.
	scratchTried, restored := make(chan []string, 1), make(chan struct{})
	go func() {
		var leaks []string
		engine := f.EngineTable()
		for ctx.Err() == nil {
			for _, c := range cb {
				ls, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
				if err == nil {
					for _, n := range ls.TableNames {
						if strings.Contains(n, "-pitr-") || strings.Contains(n, engine) {
							leaks = append(leaks, "ListTables shows "+n)
						}
					}
				}
				for id := 1; id < 30; id++ {
					name := engine + "-pitr-" + strconv.Itoa(id)
					if _, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name), Limit: aws.Int32(1)}); errCode(err) != "ResourceNotFoundException" {
						leaks = append(leaks, "Scan of "+name+": "+errString(err))
					}
				}
			}
			// NB: the engine table itself, too.
			if _, err := cb[0].Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(engine), Limit: aws.Int32(1)}); errCode(err) != "ResourceNotFoundException" {
				leaks = append(leaks, "Scan of the engine table: "+errString(err))
			}
			select {
			case <-restored:
				scratchTried <- leaks
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		scratchTried <- leaks
	}()

	restore := func(c *dynamodb.Client, src, dst string, when time.Time) error {
		_, err := c.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String(src),
			TargetTableName: aws.String(dst), RestoreDateTime: aws.Time(when)})
		return err
	}
	for _, r := range []struct {
		c        *dynamodb.Client
		src, dst string
		want     string
	}{
		{ca[1], "iso_pitr", "a_shared_at", "only-A=" + secret + ",same-key=" + secret},
		{cb[1], "iso_pitr", "b_shared_at", "same-key=mine-B"},
		{ca[0], "same_name", "a_same_at", "k=" + secret},
		{cb[0], "same_name", "b_same_at", "k=mine-B"},
	} {
		if err := restore(r.c, r.src, r.dst, at); err != nil {
			t.Fatalf("restore %s: %v", r.dst, err)
		}
		if got := view(r.c, r.dst); got != r.want {
			t.Errorf("restore of %s into %s holds %q, want %q", r.src, r.dst, got, r.want)
		}
		d, err := r.c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(r.dst)})
		if err != nil || aws.ToInt64(d.Table.ItemCount) != int64(strings.Count(r.want, ",")+1) {
			t.Errorf("DescribeTable %s: %+v %v", r.dst, d, err)
		}
	}
	close(restored)
	// Each restored table is its restorer's: the other does not see it.
	for _, c := range cb {
		if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("a_shared_at")}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("B DescribeTable of A's restored table: %v", err)
		}
	}

	// B cannot restore its view to before it enabled its recovery,
	// although A's reaches back then.
	if err := restore(cb[0], "iso_pitr", "b_before", beforeB); errCode(err) != "InvalidRestoreTimeException" {
		t.Errorf("B's restore to before its own recovery began: %v", err)
	}

	// A's table by name or ARN: what a table that does not exist answers.
	answer := func(err error, name string) string {
		var ae smithy.APIError
		if !errors.As(err, &ae) {
			return "no API error: " + errString(err)
		}
		return ae.ErrorCode() + ": " + strings.ReplaceAll(ae.ErrorMessage(), name, "<t>")
	}
	arnOf := func(c *dynamodb.Client, table string) string {
		d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(d.Table.TableArn)
	}
	aArn := arnOf(ca[0], "a_only")
	nobodyArn := strings.Replace(aArn, "a_only", "nobody_has", 1)
	for _, c := range cb {
		for _, pair := range [][2]string{{"a_only", "nobody_has"}} {
			_, e1 := c.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String(pair[0]),
				TargetTableName: aws.String("stolen"), UseLatestRestorableTime: aws.Bool(true)})
			_, e2 := c.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String(pair[1]),
				TargetTableName: aws.String("stolen"), UseLatestRestorableTime: aws.Bool(true)})
			_, e3 := c.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableArn: aws.String(aArn),
				TargetTableName: aws.String("stolen"), UseLatestRestorableTime: aws.Bool(true)})
			_, e4 := c.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableArn: aws.String(nobodyArn),
				TargetTableName: aws.String("stolen"), UseLatestRestorableTime: aws.Bool(true)})
			_, e5 := c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(pair[0])})
			_, e6 := c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(pair[1])})
			_, e7 := c.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(pair[0]),
				PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(false)}})
			_, e8 := c.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(pair[1]),
				PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(false)}})
			for _, p := range [][2]error{{e1, e2}, {e5, e6}, {e7, e8}} {
				if g, w := answer(p[0], pair[0]), answer(p[1], pair[1]); g != w || !strings.HasPrefix(g, "TableNotFoundException") {
					t.Errorf("B naming A's table: %q; a table nobody has: %q", g, w)
				}
			}
			if g, w := answer(e3, pair[0]), answer(e4, pair[1]); g != w || !strings.HasPrefix(g, "TableNotFoundException") {
				t.Errorf("B naming A's table's ARN: %q; an ARN nobody has: %q", g, w)
			}
			for _, err := range []error{e1, e3, e5, e7} {
				if strings.Contains(errString(err), secret) || strings.Contains(errString(err), a.TenantID) {
					t.Errorf("B's refusal names A: %v", err)
				}
			}
		}
		if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("stolen")}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("B's namespace after restoring A's table: %v", err)
		}
	}
	if st := status(ca[1], "a_only"); st != "ENABLED" {
		t.Errorf("A's recovery of a_only after B's attempts: %s", st)
	}

	if leaks := <-scratchTried; len(leaks) > 0 {
		t.Errorf("the scratch tables through B: %d leaks, first %s", len(leaks), leaks[0])
	}
	ls, err := f.EngineClient(t).ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ls.TableNames {
		if strings.Contains(n, "-pitr-") {
			t.Errorf("a scratch table is left in the engine: %s", n)
		}
	}
}
