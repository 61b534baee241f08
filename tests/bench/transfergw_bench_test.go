package bench

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

// exportGWItems is the size of BenchmarkExportGateway's table.
const exportGWItems = 10_000

// BenchmarkExportGateway measures, in one run, the export of a tenant's
// 10k-item table (about 200 bytes an item) on the embedded server (one
// storage snapshot) and on a gateway over the in-process stand-in engine
// (strongly consistent Query pages of the tenant's collection), both
// in-process on the same machine, in alternating rounds: the admin API's
// export stream (what `tenantdb tenant export` reads) and
// ExportTableToPointInTime until DescribeExport says COMPLETED (files
// written under the export root). It reports the median over rounds of
// each, in milliseconds. Run with -benchtime 1x.
func BenchmarkExportGateway(b *testing.B) {
	ctx := context.Background()
	type side struct {
		name string
		srv  *harness.Server
		cred harness.Credential
		ddb  *dynamodb.Client
		arn  *string
	}
	emb := harness.Start(b, harness.Options{ExportRoot: b.TempDir()})
	f := harness.StartCluster(b, 1, harness.Options{ExportRoot: b.TempDir()})
	sides := []*side{{name: "embedded", srv: emb}, {name: "gateway", srv: f.Gateways[0]}}
	for _, s := range sides {
		s.cred = s.srv.NewTenant(b, "exp"+s.name, "admin")
		s.ddb = s.srv.Client(s.cred)
		if _, err := s.ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: aws.String("exp"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
			BillingMode: types.BillingModePayPerRequest,
		}); err != nil {
			b.Fatal(err)
		}
		harness.WaitActive(b, ctx, s.ddb, "exp")
		for i := 0; i < exportGWItems; i += 25 {
			var reqs []types.WriteRequest
			for j := i; j < i+25; j++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("p%03d", j%100)}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("item#%06d", j)},
					"n": &types.AttributeValueMemberN{Value: fmt.Sprint(j)}, "v": &types.AttributeValueMemberS{Value: strings.Repeat("v", 150)}}}})
			}
			for len(reqs) > 0 {
				out, err := s.ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"exp": reqs}})
				if err != nil {
					b.Fatal(err)
				}
				reqs = out.UnprocessedItems["exp"]
			}
		}
		d, err := s.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("exp")})
		if err != nil {
			b.Fatal(err)
		}
		s.arn = d.Table.TableArn
	}
	stream := func(s *side) time.Duration {
		c := client.New(s.srv.Endpoint, s.cred.Key)
		start := time.Now()
		n := 0
		err := c.Export(ctx, s.cred.TenantID, client.ExportRequest{Tables: []string{"exp"}}, func(ev client.ExportEvent) error {
			if ev.Item != nil {
				n++
			}
			return nil
		})
		if err != nil || n != exportGWItems {
			b.Fatalf("%s: export stream: %d items, %v", s.name, n, err)
		}
		return time.Since(start)
	}
	api := func(s *side, round int) time.Duration {
		start := time.Now()
		out, err := s.ddb.ExportTableToPointInTime(ctx, &dynamodb.ExportTableToPointInTimeInput{TableArn: s.arn,
			S3Bucket: aws.String("bench"), S3Prefix: aws.String(fmt.Sprint("r", round))})
		if err != nil {
			b.Fatal(err)
		}
		for {
			d, err := s.ddb.DescribeExport(ctx, &dynamodb.DescribeExportInput{ExportArn: out.ExportDescription.ExportArn})
			if err != nil {
				b.Fatal(err)
			}
			if st := d.ExportDescription.ExportStatus; st != types.ExportStatusInProgress {
				if st != types.ExportStatusCompleted || aws.ToInt64(d.ExportDescription.ItemCount) != exportGWItems {
					b.Fatalf("%s: export %s, %d items", s.name, st, aws.ToInt64(d.ExportDescription.ItemCount))
				}
				return time.Since(start)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	const rounds = 7
	ms := map[string][]float64{}
	for r := range rounds {
		for _, s := range sides {
			ms[s.name+"-stream"] = append(ms[s.name+"-stream"], float64(stream(s).Microseconds())/1000)
			ms[s.name+"-api"] = append(ms[s.name+"-api"], float64(api(s, r).Microseconds())/1000)
		}
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	for _, k := range []string{"embedded-stream", "gateway-stream", "embedded-api", "gateway-api"} {
		b.ReportMetric(med(ms[k]), k+"-ms")
	}
	b.ReportMetric(med(ms["gateway-stream"])/med(ms["embedded-stream"]), "stream-gw/emb")
	b.ReportMetric(med(ms["gateway-api"])/med(ms["embedded-api"]), "api-gw/emb")
}
