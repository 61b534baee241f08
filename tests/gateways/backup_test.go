package gateways

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// items returns every item of table through c as sorted "pk=v|g"
// strings.
func items(t *testing.T, c *dynamodb.Client, table string) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("Scan %s: %v", table, err)
		}
		for _, it := range pg.Items {
			g := ""
			if v, ok := it["g"].(*types.AttributeValueMemberS); ok {
				g = v.Value
			}
			out = append(out, it["pk"].(*types.AttributeValueMemberS).Value+"="+it["v"].(*types.AttributeValueMemberS).Value+"|"+g)
		}
	}
	sort.Strings(out)
	return out
}

// until polls f every 20 ms until it returns true, failing the test
// after limit.
func until(t *testing.T, what string, limit time.Duration, f func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !f() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// shardedSource creates, through g, the tenant's table "src" (hash key
// pk, index byG on g) over 4 engine partition keys (shards): the source
// of the backup and PITR tests.
func shardedSource(t *testing.T, g *harness.Server, key harness.Credential) {
	t.Helper()
	ctx := context.Background()
	if _, err := g.Admin().SetShards(ctx, key.TenantID, client.ShardRequest{Shards: 4}); err != nil {
		t.Fatal(err)
	}
	_, err := g.Client(key).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("src"),
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

// writeItems writes items k<from..to-1> of "src" through c, 25 to a
// BatchWriteItem, v followed by k their value, every fourth in the index.
func writeItems(t *testing.T, c *dynamodb.Client, from, to int, v string) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < to; i += 25 {
		var reqs []types.WriteRequest
		for k := i; k < min(i+25, to); k++ {
			it := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("k%05d", k)},
				"v": &types.AttributeValueMemberS{Value: fmt.Sprint(v, k)}}
			if k%4 == 0 {
				it["g"] = &types.AttributeValueMemberS{Value: fmt.Sprint("g", k%3)}
			}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		for len(reqs) > 0 {
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"src": reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems["src"]
		}
	}
}

// TestBackupAcrossKilledGateways: a backup is taken through a gateway
// process that is killed with kill -9 in the middle of the copy; another
// gateway finishes it (CREATING until then), and a restore of it through
// a third gateway process, killed in the middle of the load, is finished
// by another gateway too (the table CREATING until then, the backup in
// use meanwhile). The restored table holds exactly the items of the
// source, its index answers as the source's, and the copies are charged
// to the tenant.
func TestBackupAcrossKilledGateways(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills tenantdb processes")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	key := g0.NewTenant(t, "backedup", "admin")
	c0, c1 := g0.Client(key), g1.Client(key)
	// The tenant's tables spread over 4 engine partition keys: a backup
	// reads every shard, a restore writes every shard.
	shardedSource(t, g0, key)
	const n = 4000
	writeItems(t, c0, 0, n, "value ")
	if st, err := g1.Admin().Shards(ctx, key.TenantID); err != nil || len(st.Tables) != 1 || st.Tables[0].Shards != 4 {
		t.Fatalf("the source's layout: %+v %v", st, err)
	}
	want := items(t, c1, "src")
	if len(want) != n {
		t.Fatalf("%d items written, want %d", len(want), n)
	}

	// 1. The backup, through a process killed mid-copy.
	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	cv := victim.Client(key)
	go func() {
		_, _ = cv.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("src"), BackupName: aws.String("killed")})
	}()
	var arn string
	killedMidCopy := false
	until(t, "the backup's copy under way", 60*time.Second, func() bool {
		ls, err := c1.ListBackups(ctx, &dynamodb.ListBackupsInput{TableName: aws.String("src")})
		if err != nil || len(ls.BackupSummaries) == 0 {
			return false
		}
		s := ls.BackupSummaries[0]
		arn = aws.ToString(s.BackupArn)
		killedMidCopy = s.BackupStatus == types.BackupStatusCreating
		return s.BackupStatus != types.BackupStatusCreating || aws.ToInt64(s.BackupSizeBytes) > 0
	})
	victim.Kill(t)
	d, err := c1.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if st := d.BackupDescription.BackupDetails.BackupStatus; st != types.BackupStatusCreating {
		t.Logf("the copy ended before kill -9 landed (%s); nothing to resume", st)
		killedMidCopy = false
	} else if !killedMidCopy {
		t.Fatalf("a backup whose copy had not begun when the gateway was killed: %+v", d.BackupDescription.BackupDetails)
	} else {
		t.Logf("killed mid-copy: %d of %d items copied", aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount), n)
	}
	took := until(t, "the backup finished by another gateway", 60*time.Second, func() bool {
		d, err = c1.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
		return err == nil && d.BackupDescription.BackupDetails.BackupStatus == types.BackupStatusAvailable
	})
	t.Logf("AVAILABLE %v after the kill", took.Round(time.Millisecond))
	if got := aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount); got != n {
		t.Errorf("the finished backup holds %d items, want %d", got, n)
	}
	// Written after the backup: in the source, not in the restore.
	if err := put(ctx, c0, "src", "after-the-backup"); err != nil {
		t.Fatal(err)
	}

	// 2. The restore, through a process killed mid-load.
	victim2 := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	cv2 := victim2.Client(key)
	go func() {
		_, _ = cv2.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("restored"), BackupArn: aws.String(arn)})
	}()
	until(t, "the restore's load under way", 60*time.Second, func() bool {
		out, err := c1.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("restored"), Limit: aws.Int32(1)})
		return err == nil && len(out.Items) > 0
	})
	victim2.Kill(t)
	dt, err := c1.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("restored")})
	if err != nil {
		t.Fatal(err)
	}
	if dt.Table.TableStatus == types.TableStatusCreating {
		t.Logf("killed mid-restore: %d of %d items loaded", aws.ToInt64(dt.Table.ItemCount), n)
		// The backup is in use until the restore ends.
		if _, err := c1.DeleteBackup(ctx, &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)}); errCode(err) != "BackupInUseException" {
			t.Errorf("DeleteBackup during the restore: %v, want BackupInUseException", err)
		}
	} else {
		t.Logf("the restore ended before kill -9 landed (%s)", dt.Table.TableStatus)
	}
	took = until(t, "the restore finished by another gateway", 60*time.Second, func() bool {
		dt, err = c1.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("restored")})
		return err == nil && dt.Table.TableStatus == types.TableStatusActive
	})
	t.Logf("ACTIVE %v after the kill", took.Round(time.Millisecond))
	if st, err := g1.Admin().Shards(ctx, key.TenantID); err != nil || len(st.Tables) != 2 || st.Tables[0].Shards != 4 || st.Tables[1].Shards != 4 {
		t.Errorf("the layouts after the restore: %+v %v", st, err)
	}
	got := items(t, c0, "restored")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the restored table holds %d items, the source %d when backed up (or they differ)", len(got), len(want))
	}
	for _, g := range []string{"g0", "g1", "g2"} {
		count := func(table string) int32 {
			out, err := c1.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byG"), Select: types.SelectCount,
				KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: g}}})
			if err != nil {
				t.Fatal(err)
			}
			return out.Count
		}
		if a, b := count("src"), count("restored"); a != b || a == 0 {
			t.Errorf("index byG, %s: %d in the source, %d restored", g, a, b)
		}
	}
	if _, err := c0.DeleteBackup(ctx, &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)}); err != nil {
		t.Errorf("DeleteBackup after the restore: %v", err)
	}
	if !killedMidCopy {
		t.Log("note: the backup was not interrupted this run")
	}
}

// TestDeletedTenantDeletesBackups: a tenant's backups (of its own table
// and of its view of a shared table) and the table restored from one go
// with the tenant: afterwards no item of the engine's table names it,
// and another tenant's backup of the same shared table is intact.
func TestDeletedTenantDeletesBackups(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx := context.Background()
	createTable(t, g0, "shared_bk")
	gone, kept := g0.NewTenant(t, "deletedwithbackups", "admin"), g1.NewTenant(t, "keepsbackups", "admin")
	c, k := g1.Client(gone), g0.Client(kept)
	within(t, "the shared table on the second gateway", func() bool { return put(ctx, c, "shared_bk", "mine") == nil })
	if err := put(ctx, k, "shared_bk", "theirs"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("own_bk"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := put(ctx, c, "own_bk", fmt.Sprint("k", i)); err != nil {
			t.Fatal(err)
		}
	}
	var arns []string
	for _, table := range []string{"own_bk", "shared_bk"} {
		out, err := c.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String(table), BackupName: aws.String("before-deletion")})
		if err != nil {
			t.Fatal(err)
		}
		arns = append(arns, aws.ToString(out.BackupDetails.BackupArn))
	}
	if _, err := c.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("restored_bk"), BackupArn: aws.String(arns[0])}); err != nil {
		t.Fatal(err)
	}
	keptArn, err := k.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("shared_bk"), BackupName: aws.String("other-tenant")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g0.Admin().DeleteTenant(ctx, gone.TenantID); err != nil {
		t.Fatal(err)
	}
	if left := engineItemsOf(t, f.EngineClient(t), f.EngineTable(), gone.TenantID); len(left) != 0 {
		t.Fatalf("%d items of the deleted tenant are still in the engine:\n%s", len(left), strings.Join(left, "\n"))
	}
	d, err := k.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: keptArn.BackupDetails.BackupArn})
	if err != nil || aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount) != 1 {
		t.Fatalf("the other tenant's backup after the deletion: %+v %v", d, err)
	}
}
