package remote_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// BenchmarkPITRRestore measures, through a gateway over the stand-in
// engine in one run, how long RestoreTableToPointInTime of one tenant's
// 2,000-item table takes (request to ACTIVE) while the engine table holds
// N items of another tenant, for two N, against RestoreTableFromBackup
// of a backup of the same table in the same run: a point-in-time restore
// restores the whole engine table first (every tenant's items), so it
// grows with N, while a backup restore reads the tenant's backup only
// (medians of 3 restores each).
//
//	go test ./internal/remote -run '^$' -bench PITRRestore -benchtime 1x
func BenchmarkPITRRestore(b *testing.B) {
	const mine = 2000
	srv := harness.Start(b, harness.Options{Remote: true})
	ctx := context.Background()
	a := srv.Client(srv.Default)
	other := srv.Client(srv.NewTenant(b, "others", "admin"))
	createTable(b, a, "mine")
	if _, err := other.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("theirs"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		b.Fatal(err)
	}
	load := func(c *dynamodb.Client, table string, from, to int, item func(i int) map[string]types.AttributeValue) {
		for k := from; k < to; k += 25 {
			var reqs []types.WriteRequest
			for j := k; j < min(k+25, to); j++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item(j)}})
			}
			for len(reqs) > 0 {
				out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
				if err != nil {
					b.Fatal(err)
				}
				reqs = out.UnprocessedItems[table]
			}
		}
	}
	const value = "a value of some forty bytes, give or take"
	if _, err := pitrOn(ctx, a, "mine"); err != nil {
		b.Fatal(err)
	}
	load(a, "mine", 0, mine, func(i int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(fmt.Sprint("p", i%20)), "sk": n(fmt.Sprint(i)), "v": s(value)}
	})
	bk, err := a.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("mine"), BackupName: aws.String("bench")})
	if err != nil {
		b.Fatal(err)
	}
	active := func(table string) {
		for {
			d, err := a.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
			if err != nil {
				b.Fatal(err)
			}
			if d.Table.TableStatus == types.TableStatusActive {
				if d.Table.ItemCount == nil || *d.Table.ItemCount != mine {
					b.Fatalf("%s holds %v items, want %d", table, d.Table.ItemCount, mine)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	median := func(ds []time.Duration) float64 {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2].Seconds()
	}
	b.ResetTimer()
	loaded := 0
	for _, others := range []int{10000, 50000} {
		load(other, "theirs", loaded, others, func(i int) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{"pk": s(fmt.Sprintf("o%07d", i)), "v": s(value)}
		})
		loaded = others
		time.Sleep(1100 * time.Millisecond) // the latest restorable time after the load
		var pitr, backup []time.Duration
		for r := range 3 {
			name := fmt.Sprintf("pitr_%d_%d", others, r)
			start := time.Now()
			if _, err := a.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{SourceTableName: aws.String("mine"),
				TargetTableName: aws.String(name), UseLatestRestorableTime: aws.Bool(true)}); err != nil {
				b.Fatal(err)
			}
			active(name)
			pitr = append(pitr, time.Since(start))
			name = fmt.Sprintf("backup_%d_%d", others, r)
			start = time.Now()
			if _, err := a.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String(name),
				BackupArn: bk.BackupDetails.BackupArn}); err != nil {
				b.Fatal(err)
			}
			active(name)
			backup = append(backup, time.Since(start))
		}
		p, r := median(pitr), median(backup)
		b.ReportMetric(p, fmt.Sprintf("pitr-s@%dk", others/1000))
		b.ReportMetric(r, fmt.Sprintf("backup-restore-s@%dk", others/1000))
		b.ReportMetric(p/r, fmt.Sprintf("pitr/backup@%dk", others/1000))
	}
}
