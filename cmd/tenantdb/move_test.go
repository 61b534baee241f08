package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// moveWriter writes one tenant's items at a steady rate from several
// goroutines (each its own keys), keeping the acknowledged state and
// every request's latency.
type moveWriter struct {
	lat harness.Latencies
	mu  sync.Mutex
	// want maps a key to v of the last acknowledged put ("" deleted).
	want  map[string]string
	acked int
	// changes counts the acknowledged writes that changed an item: every
	// put, and the deletes of an item that existed (a delete of an absent
	// item has no change record).
	changes int
	err     error
}

// run writes until ctx ends.
//
// NB: ctx ends the loop, not a request: a request cancelled mid-flight
// may still be applied by the server after the test has read the table
// (a delete cut off this way once left the GSI one entry short of the
// scan), so every request runs to its answer and is acknowledged or
// failed.
func (w *moveWriter) run(ctx context.Context, ddb *dynamodb.Client, g, perSecond int) {
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	rctx := context.WithoutCancel(ctx)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		key := fmt.Sprintf("g%d-k%d", g, i%300)
		v := fmt.Sprint(i)
		start := time.Now()
		var err error
		changed := true
		del := i%11 == 0
		if del {
			var out *dynamodb.DeleteItemOutput
			out, err = ddb.DeleteItem(rctx, &dynamodb.DeleteItemInput{TableName: aws.String("Orders"),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}, ReturnValues: types.ReturnValueAllOld})
			changed = err == nil && len(out.Attributes) > 0
		} else {
			_, err = ddb.PutItem(rctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: key}, "v": &types.AttributeValueMemberN{Value: v},
				"status": &types.AttributeValueMemberS{Value: []string{"OPEN", "CLOSED"}[i%2]}}})
		}
		w.lat.Add(start, time.Since(start))
		w.mu.Lock()
		if err != nil {
			w.err = err
			w.mu.Unlock()
			return
		}
		if del {
			w.want[key] = ""
		} else {
			w.want[key] = v
		}
		w.acked++
		if changed {
			w.changes++
		}
		w.mu.Unlock()
	}
}

// TestTenantMoveUnderLoad: `tenantdb tenant move` moves a tenant's data of
// a shared table to its silo store and back while the tenant writes at
// ~1,000 writes/s through aws-sdk-go-v2 and another tenant writes too.
// Afterwards every acknowledged write is there, with no extra item; the
// GSI agrees; a Streams consumer reading with an iterator taken before
// the moves reads on across them, and the stream holds every change once,
// in order; `tenant show` says where the data lives. The tenant's p99
// during each move and the blocked interval are logged.
func TestTenantMoveUnderLoad(t *testing.T) {
	srv := harness.Start(t)
	ctx := context.Background()
	op := srv.Client(srv.Operator)
	_, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("Orders"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("status"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byStatus"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("status"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, op, "Orders")
	a, b := srv.NewTenant(t, "mover", "app"), srv.NewTenant(t, "stayer", "app")
	da, db := srv.Client(a), srv.Client(b)

	// A Streams consumer of a takes its iterator before anything moves.
	st := streamsClient(srv, a)
	desc, err := st.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: latestArn(t, da)})
	if err != nil {
		t.Fatal(err)
	}
	shards := desc.StreamDescription.Shards
	it, err := st.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: desc.StreamDescription.StreamArn,
		ShardId: shards[len(shards)-1].ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}

	wa := &moveWriter{want: map[string]string{}}
	wb := &moveWriter{want: map[string]string{}}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); wa.run(wctx, da, g, 250) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); wb.run(wctx, db, 9, 100) }()
	time.Sleep(time.Second)

	move := func(to string) client.TenantMove {
		t.Helper()
		start := time.Now()
		out := tcli(t, srv, srv.Operator.Key, "tenant", "move", a.TenantID, "--table", "Orders", "--to", to, "--json")
		end := time.Now()
		var ms []client.TenantMove
		if err := json.Unmarshal([]byte(out), &ms); err != nil || len(ms) != 1 {
			t.Fatalf("tenant move output %q: %v", out, err)
		}
		m := ms[0]
		if m.Phase != "done" || m.To != to {
			t.Fatalf("move to %s: %+v", to, m)
		}
		p99, top, n := wa.lat.P99(start, end)
		t.Logf("move to %s: %.1f ms writes blocked at the cutover (%d attempt(s)), %d items copied, %d changes caught up, took %v; tenant's writes during it: %d, p99 %v, max %v",
			to, m.BlockedMS, m.Attempts, m.Items, m.Changes, end.Sub(start).Round(time.Millisecond), n, p99, top)
		show := tcli(t, srv, srv.Operator.Key, "tenant", "show", a.TenantID)
		if !strings.Contains(show, "Orders") || !strings.Contains(show, " "+to+" ") {
			t.Fatalf("tenant show after the move to %s:\n%s", to, show)
		}
		return m
	}
	move("silo")
	time.Sleep(500 * time.Millisecond)
	move("pool")
	time.Sleep(500 * time.Millisecond)
	stop()
	wg.Wait()
	if wa.err != nil || wb.err != nil {
		t.Fatalf("writers: %v, %v", wa.err, wb.err)
	}
	p99, top, n := wa.lat.P99(time.Time{}, time.Now())
	t.Logf("tenant's writes over the whole run: %d, p99 %v, max %v", n, p99, top)

	for _, w := range []struct {
		w   *moveWriter
		ddb *dynamodb.Client
	}{{wa, da}, {wb, db}} {
		got := map[string]string{}
		p := dynamodb.NewScanPaginator(w.ddb, &dynamodb.ScanInput{TableName: aws.String("Orders"), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				got[it["pk"].(*types.AttributeValueMemberS).Value] = it["v"].(*types.AttributeValueMemberN).Value
			}
		}
		present := 0
		for k, v := range w.w.want {
			if v == "" {
				if _, ok := got[k]; ok {
					t.Fatalf("deleted item %s is back", k)
				}
				continue
			}
			present++
			if got[k] != v {
				t.Fatalf("item %s: v=%q, want the acknowledged %q", k, got[k], v)
			}
		}
		if len(got) != present {
			t.Fatalf("%d items, want %d", len(got), present)
		}
		open, err := w.ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Orders"), IndexName: aws.String("byStatus"),
			KeyConditionExpression: aws.String("#s = :s"), ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "OPEN"}}, Select: types.SelectCount})
		if err != nil {
			t.Fatal(err)
		}
		closed, err := w.ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Orders"), IndexName: aws.String("byStatus"),
			KeyConditionExpression: aws.String("#s = :s"), ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "CLOSED"}}, Select: types.SelectCount})
		if err != nil {
			t.Fatal(err)
		}
		if int(open.Count+closed.Count) != present {
			t.Fatalf("GSI holds %d+%d entries, want %d", open.Count, closed.Count, present)
		}
	}

	// The consumer reads on with its old iterator: every acknowledged
	// write that changed something once, in order, none twice.
	seen := map[string]bool{}
	var last string
	records := 0
	for it.ShardIterator != nil {
		out, err := st.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Records {
			seq := *r.Dynamodb.SequenceNumber
			if seen[*r.EventID] || last != "" && (len(seq) < len(last) || len(seq) == len(last) && seq <= last) {
				t.Fatalf("record %s (sequence %s after %s) out of order or repeated", *r.EventID, seq, last)
			}
			seen[*r.EventID], last = true, seq
			records++
		}
		if len(out.Records) == 0 {
			break // caught up with the open shard
		}
		it.ShardIterator = out.NextShardIterator
	}
	if records != wa.changes {
		t.Fatalf("the consumer read %d records for %d acknowledged writes that changed an item (%d in all)", records, wa.changes, wa.acked)
	}
	t.Logf("the consumer read %d records across both moves for %d acknowledged writes", records, wa.acked)
}

func streamsClient(srv *harness.Server, c harness.Credential) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       harness.Region,
		BaseEndpoint: aws.String(srv.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
	})
}

func latestArn(t *testing.T, ddb *dynamodb.Client) *string {
	t.Helper()
	d, err := ddb.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("Orders")})
	if err != nil {
		t.Fatal(err)
	}
	return d.Table.LatestStreamArn
}
