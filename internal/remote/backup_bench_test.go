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

// BenchmarkBackupRestore measures, through a gateway over the stand-in
// engine in one run, the item rate of CreateBackup and of
// RestoreTableFromBackup (a table with one GSI) against two baselines
// over the same items: loading them with BatchWriteItem through the
// gateway, and reading them with a consistent Scan through it (medians
// of the runs).
//
//	go test ./internal/remote -run '^$' -bench BackupRestore -benchtime 3x
func BenchmarkBackupRestore(b *testing.B) {
	const items = 4000
	srv := harness.Start(b, harness.Options{Remote: true})
	c := srv.Client(srv.Default)
	ctx := context.Background()
	runs := map[string][]float64{}
	for i := range b.N {
		src := fmt.Sprintf("bsrc%d", i)
		_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String(src),
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
			b.Fatal(err)
		}
		start := time.Now()
		for k := 0; k < items; k += 25 {
			var reqs []types.WriteRequest
			for j := k; j < k+25; j++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
					"pk": s(fmt.Sprintf("k%05d", j)), "g": s(fmt.Sprint("g", j%10)), "v": s("a value of some forty bytes, give or take")}}})
			}
			for len(reqs) > 0 {
				out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{src: reqs}})
				if err != nil {
					b.Fatal(err)
				}
				reqs = out.UnprocessedItems[src]
			}
		}
		load := time.Since(start)
		start = time.Now()
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(src), ConsistentRead: aws.Bool(true), Limit: aws.Int32(100)})
		for p.HasMorePages() {
			if _, err := p.NextPage(ctx); err != nil {
				b.Fatal(err)
			}
		}
		scan := time.Since(start)
		start = time.Now()
		cb, err := c.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String(src), BackupName: aws.String("bench")})
		if err != nil {
			b.Fatal(err)
		}
		backup := time.Since(start)
		start = time.Now()
		if _, err := c.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String(src + "r"), BackupArn: cb.BackupDetails.BackupArn}); err != nil {
			b.Fatal(err)
		}
		restore := time.Since(start)
		rate := func(d time.Duration) float64 { return items / d.Seconds() }
		for unit, v := range map[string]float64{"load-items/s": rate(load), "scan-items/s": rate(scan), "backup-items/s": rate(backup),
			"restore-items/s": rate(restore), "backup/scan": backup.Seconds() / scan.Seconds(), "restore/load": restore.Seconds() / load.Seconds()} {
			runs[unit] = append(runs[unit], v)
		}
	}
	for unit, vs := range runs { // medians of the runs
		sort.Float64s(vs)
		b.ReportMetric(vs[len(vs)/2], unit)
	}
}
