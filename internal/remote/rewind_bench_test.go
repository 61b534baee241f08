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

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// BenchmarkTenantRestore measures, in one run, an in-place tenant restore
// (`tenant restore`, the admin API, start to done) of one tenant's
// 2,000-item view of a shared table — 500 items changed, 250 deleted and
// 250 created since the time — inside 10,000 items of another tenant, on
// the embedded server and on a gateway over the stand-in engine, with
// the same data (medians of 3 restores each, alternated). On the gateway
// it also reports the part after the fence (UndoTo to done: the engine
// table's restore into the scratch table — all of its 12,000 items and
// the control records — and the copy).
//
//	go test ./internal/remote -run '^$' -bench TenantRestore -benchtime 1x
func BenchmarkTenantRestore(b *testing.B) {
	const mine, others = 2000, 10000
	ctx := context.Background()
	type side struct {
		name   string
		srv    *harness.Server
		a      *dynamodb.Client
		adm    *client.Client
		tenant string
	}
	const value = "a value of some forty bytes, give or take"
	load := func(c *dynamodb.Client, from, to int, v string, del bool) {
		for k := from; k < to; k += 25 {
			var reqs []types.WriteRequest
			for j := k; j < min(k+25, to); j++ {
				key := map[string]types.AttributeValue{"pk": s(fmt.Sprint("p", j%20)), "sk": n(fmt.Sprint(j))}
				if del {
					reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
					continue
				}
				key["v"] = s(v)
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: key}})
			}
			for len(reqs) > 0 {
				out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"shared": reqs}})
				if err != nil {
					b.Fatal(err)
				}
				reqs = out.UnprocessedItems["shared"]
			}
		}
	}
	var sides []*side
	for _, remote := range []bool{false, true} {
		srv := harness.Start(b, harness.Options{Remote: remote})
		createTable(b, srv.Client(srv.Operator), "shared")
		ka, ko := srv.NewTenant(b, "rwbench", "admin"), srv.NewTenant(b, "rwothers", "admin")
		sd := &side{name: map[bool]string{false: "embedded", true: "gateway"}[remote], srv: srv, a: srv.Client(ka), adm: client.New(srv.Endpoint, ka.Key), tenant: ka.TenantID}
		o := srv.Client(ko)
		for _, c := range []*dynamodb.Client{sd.a, o} {
			if _, err := pitrOn(ctx, c, "shared"); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(1100 * time.Millisecond)
		load(sd.a, 0, mine, value, false)
		load(o, 100000, 100000+others, value, false)
		sides = append(sides, sd)
	}
	median := func(ds []float64) float64 {
		sort.Float64s(ds)
		return ds[len(ds)/2]
	}
	took := map[string][]float64{}
	var after []float64
	b.ResetTimer()
	for round := range 3 {
		for _, sd := range sides {
			time.Sleep(1100 * time.Millisecond) // inside the engine's window
			at := time.Now()
			time.Sleep(10 * time.Millisecond)
			load(sd.a, 0, 500, fmt.Sprint("changed ", round), false)
			load(sd.a, 500, 750, "", true)
			load(sd.a, mine, mine+250, "created", false)
			time.Sleep(1100 * time.Millisecond)
			start := time.Now()
			if _, err := sd.adm.StartRestore(ctx, sd.tenant, client.RestoreRequest{ToTime: at}); err != nil {
				b.Fatal(err)
			}
			var r client.TenantRestore
			for {
				var err error
				if r, err = sd.adm.Restore(ctx, sd.tenant); err != nil {
					b.Fatal(err)
				}
				if r.State == "done" {
					break
				}
				if r.Error != "" && !r.Running {
					b.Fatalf("%s restore stopped: %s", sd.name, r.Error)
				}
				time.Sleep(20 * time.Millisecond)
			}
			took[sd.name] = append(took[sd.name], time.Since(start).Seconds())
			if sd.name == "gateway" {
				after = append(after, r.Finished.Sub(r.UndoTo).Seconds())
			}
			if len(r.Tables) != 1 || r.Tables[0].Changed != 1000 {
				b.Fatalf("%s restore: %+v, want 1,000 items written back or deleted", sd.name, r.Tables)
			}
			d, err := sd.a.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("shared"), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
			if err != nil || d.Count != mine && d.LastEvaluatedKey == nil {
				b.Fatalf("%s after the restore: %v items (%v)", sd.name, d, err)
			}
		}
	}
	e, g := median(took["embedded"]), median(took["gateway"])
	b.ReportMetric(e, "embedded-s")
	b.ReportMetric(g, "gateway-s")
	b.ReportMetric(g/e, "gateway/embedded")
	b.ReportMetric(median(after), "gateway-after-fence-s")
}
