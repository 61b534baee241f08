package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// moveItems is how many items BenchmarkMove's tenant holds
// (TENANTDB_BENCH_MOVE_ITEMS overrides it).
func moveItems() int {
	if n, err := strconv.Atoi(os.Getenv("TENANTDB_BENCH_MOVE_ITEMS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// BenchmarkMove measures online moves on one on-disk server (synced WAL):
// a tenant holding moveItems() items of a shared table (a GSI, a
// NEW_AND_OLD_IMAGES stream) writes 1,000 PutItems a second through
// aws-sdk-go-v2 while its data moves to its silo store and back to the
// pool; another tenant writes 200 a second meanwhile. It reports the
// tenant's writes held at each cutover (blocked-ms), the move's duration,
// and the p99 of both tenants' writes during the moves against a baseline
// window without a move in the same run. Run with -benchtime 1x.
func BenchmarkMove(b *testing.B) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	n, err := node.Open(ctx, node.Options{DataDir: b.TempDir(), Endpoint: l.Addr().String(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n.Shutdown(sctx)
		<-served
		n.Close()
	}()
	opk := n.Bootstrap().Operator
	srv := &harness.Server{Endpoint: "http://" + l.Addr().String(),
		Operator: harness.Credential{AccessKeyID: opk.AccessKeyID(), SecretAccessKey: opk.Secret, Key: opk.String()}}
	op := srv.Client(srv.Operator)
	_, err = op.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("moves"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	if err != nil {
		b.Fatal(err)
	}
	a, other := srv.NewTenant(b, "mover", "app"), srv.NewTenant(b, "neighbour", "app")
	da, do := srv.Client(a), srv.Client(other)
	items := moveItems()
	item := func(k string, i int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k}, "g": &types.AttributeValueMemberS{Value: fmt.Sprint("G", i%16)},
			"v": &types.AttributeValueMemberS{Value: fmt.Sprintf("%0150d", i)}}
	}
	// Preload, 8 batches in flight.
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var reqs []types.WriteRequest
				for j := i; j < min(i+25, items); j++ {
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item(fmt.Sprintf("k%08d", j), j)}})
				}
				if _, err := da.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"moves": reqs}}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < items; i += 25 {
		next <- i
	}
	close(next)
	wg.Wait()

	for range b.N {
		var la, lo harness.Latencies
		wctx, stop := context.WithCancel(ctx)
		write := func(ddb *dynamodb.Client, g, perSecond int, lat *harness.Latencies) {
			defer wg.Done()
			tick := time.NewTicker(time.Second / time.Duration(perSecond))
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-wctx.Done():
					return
				case <-tick.C:
				}
				start := time.Now()
				_, err := ddb.PutItem(wctx, &dynamodb.PutItemInput{TableName: aws.String("moves"), Item: item(fmt.Sprintf("k%08d", (g*7919+i*31)%items), i)})
				if wctx.Err() != nil {
					return
				}
				if err != nil {
					b.Error(err)
					return
				}
				lat.Add(start, time.Since(start))
			}
		}
		for g := range 4 {
			wg.Add(1)
			go write(da, g, 250, &la)
		}
		wg.Add(1)
		go write(do, 9, 200, &lo)
		time.Sleep(500 * time.Millisecond)
		base := time.Now()
		time.Sleep(3 * time.Second)
		baseEnd := time.Now()
		report := func(name string, from, to time.Time) {
			p, top, _ := la.P99(from, to)
			po, _, _ := lo.P99(from, to)
			b.ReportMetric(float64(p.Microseconds())/1000, name+"-p99-ms")
			b.ReportMetric(float64(top.Microseconds())/1000, name+"-max-ms")
			b.ReportMetric(float64(po.Microseconds())/1000, name+"-neighbour-p99-ms")
		}
		report("baseline", base, baseEnd)
		admin := client.New(srv.Endpoint, srv.Operator.Key)
		for _, to := range []string{"silo", "pool"} {
			start := time.Now()
			if _, err := admin.MoveTenant(ctx, a.TenantID, client.MoveRequest{Table: "moves", To: to}); err != nil {
				b.Fatal(err)
			}
			var m client.TenantMove
			for {
				ms, err := admin.Moves(ctx, a.TenantID)
				if err != nil {
					b.Fatal(err)
				}
				if len(ms) > 0 && ms[0].Done() {
					m = ms[0]
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			end := time.Now()
			if m.Phase != "done" {
				b.Fatalf("move to %s: %+v", to, m)
			}
			b.ReportMetric(m.BlockedMS, "to-"+to+"-blocked-ms")
			b.ReportMetric(end.Sub(start).Seconds(), "to-"+to+"-s")
			b.ReportMetric(float64(m.Attempts), "to-"+to+"-cutovers")
			b.ReportMetric(float64(m.Changes), "to-"+to+"-changes")
			report("to-"+to, start, end)
			time.Sleep(time.Second)
		}
		stop()
		wg.Wait()
	}
}
