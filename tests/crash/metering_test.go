package crash

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// flushInterval is quota.Options.FlushInterval as `tenantdb serve` sets it
// (the default): the documented bound on the metering of reads lost on
// kill -9 (README "Metering").
const flushInterval = time.Second

// opUsage is one operation's figures in GET /v1/tenants/{id}/usage.
type opUsage struct {
	Requests           int64   `json:"requests"`
	ConsumedReadUnits  float64 `json:"consumed_read_units"`
	ConsumedWriteUnits float64 `json:"consumed_write_units"`
}

// usageOf returns tenant's usage by operation since from, as the admin API
// (and `tenantdb usage`) reports it.
func usageOf(t *testing.T, srv *harness.Server, tenant string, from time.Time) map[string]opUsage {
	t.Helper()
	var rep struct {
		ByOperation map[string]opUsage `json:"by_operation"`
	}
	q := url.Values{"from": {from.UTC().Format(time.RFC3339)}, "to": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}
	if err := srv.Admin().Do(context.Background(), "GET", "/v1/tenants/"+tenant+"/usage?"+q.Encode(), nil, &rep); err != nil {
		t.Fatalf("GET usage: %v", err)
	}
	return rep.ByOperation
}

func createTable(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// noRetry makes a throttled request fail instead of being retried by the SDK.
func noRetry(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} }

// A write request of each kind the crash test drives, and what one
// acknowledged request of it writes: items, and write units (each item is
// under 1 KB; a transaction's cost double).
var meteredWrites = []struct {
	op           string
	items, units int64
}{
	{"PutItem", 1, 1},
	{"UpdateItem", 1, 1},
	{"BatchWriteItem", 2, 2},
	{"TransactWriteItems", 1, 2},
}

// writeOne makes request i of writer w, of kind meteredWrites[w%4].
func writeOne(ctx context.Context, c *dynamodb.Client, w, i int, payload string) error {
	item := func(n int) map[string]types.AttributeValue {
		it := key(w, n)
		it["payload"] = &types.AttributeValueMemberS{Value: payload}
		return it
	}
	var err error
	switch meteredWrites[w%len(meteredWrites)].op {
	case "PutItem":
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Meter"), Item: item(i)}, noRetry)
	case "UpdateItem":
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Meter"), Key: key(w, i),
			UpdateExpression:          aws.String("SET payload = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: payload}}}, noRetry)
	case "BatchWriteItem":
		_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"Meter": {
			{PutRequest: &types.PutRequest{Item: item(2 * i)}}, {PutRequest: &types.PutRequest{Item: item(2*i + 1)}}}}}, noRetry)
	case "TransactWriteItems":
		_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("Meter"), Item: item(i)}}}}, noRetry)
	}
	return err
}

// itemsOf counts writer w's items in table Meter.
func itemsOf(t *testing.T, c *dynamodb.Client, w int) int64 {
	t.Helper()
	var n int64
	var next map[string]types.AttributeValue
	for {
		out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("Meter"),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": key(w, 0)["pk"]},
			Select:                    types.SelectCount, ConsistentRead: aws.Bool(true), ExclusiveStartKey: next})
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		n += int64(out.Count)
		if next = out.LastEvaluatedKey; next == nil {
			return n
		}
	}
}

// TestKill9KeepsMetering drives acknowledged writes of every kind
// (PutItem, UpdateItem, BatchWriteItem, TransactWriteItems) and reads
// through the SDK, kills the binary with SIGKILL in the middle of the
// load, restarts it and checks the bounds README "Metering" documents:
// every acknowledged write is counted, and a write's usage survived
// exactly when its items did (the items after the restart are exactly
// those of the writes counted), since both are one commit; every read
// acknowledged more than one flush interval before the kill is counted.
// It logs what was lost.
func TestKill9KeepsMetering(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := binary(t)
	dir := t.TempDir()
	start := time.Now().Add(-time.Hour)
	srv := harness.StartBinary(t, bin, dir, "--fairness=false")
	tenant := srv.Default.TenantID
	c := srv.Client(srv.Default)
	createTable(t, c, "Meter")
	payload := string(make([]byte, 512)) // one write unit, one read unit

	const writers, readers, loadFor = 8, 4, 3*flushInterval + flushInterval/2
	var acked [writers]atomic.Int64 // acknowledged requests by writer
	var reads atomic.Int64
	var mu sync.Mutex
	var readAcks []time.Time // when each read was acknowledged
	var killedAt time.Time
	var once sync.Once
	kill := func() {
		once.Do(func() {
			mu.Lock()
			killedAt = time.Now()
			mu.Unlock()
			srv.Kill(t)
		})
	}
	time.AfterFunc(loadFor, kill)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := writeOne(ctx, c, w, i, payload)
				cancel()
				if err != nil {
					return
				}
				acked[w].Add(1)
			}
		}()
	}
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Meter"), Key: key(r, 0), ConsistentRead: aws.Bool(true)}, noRetry)
				cancel()
				if err != nil {
					return
				}
				reads.Add(1)
				mu.Lock()
				readAcks = append(readAcks, time.Now())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	srv = harness.StartBinary(t, bin, dir, "--fairness=false")
	got := usageOf(t, srv, tenant, start)
	c = srv.Client(srv.Default)
	// Writes: for each kind, every acknowledged request is counted, at
	// most one more per writer (in flight at the kill: committed, not
	// acknowledged), each with its units; and the items that survived
	// are exactly those the counted requests wrote.
	for k, mw := range meteredWrites {
		var ack, items, inFlight int64
		for w := k; w < writers; w += len(meteredWrites) {
			ack += acked[w].Load()
			items += itemsOf(t, c, w)
			inFlight++
		}
		u := got[mw.op]
		t.Logf("%s: %d acknowledged; after kill -9: %d counted, %v WCU, %d items", mw.op, ack, u.Requests, u.ConsumedWriteUnits, items)
		if ack == 0 {
			t.Errorf("%s: no request acknowledged before the kill", mw.op)
		}
		if u.Requests < ack || u.Requests > ack+inFlight {
			t.Errorf("%s requests after kill -9 = %d, want every one of the %d acknowledged, at most %d more in flight", mw.op, u.Requests, ack, inFlight)
		}
		if want := float64(u.Requests * mw.units); u.ConsumedWriteUnits != want {
			t.Errorf("%s write units after kill -9 = %v, want %v for %d requests", mw.op, u.ConsumedWriteUnits, want, u.Requests)
		}
		if want := u.Requests * mw.items; items != want {
			t.Errorf("%s: %d items after kill -9, want exactly the %d of the %d requests counted", mw.op, items, want, u.Requests)
		}
	}
	// Reads: what kill -9 may lose is bounded by the flush interval.
	before := int64(0)
	for _, at := range readAcks {
		if at.Before(killedAt.Add(-flushInterval)) {
			before++
		}
	}
	get := got["GetItem"]
	t.Logf("reads: %d acknowledged, %d of them more than %v before the kill; counted after kill -9: %d GetItem (%d lost)",
		reads.Load(), before, flushInterval, get.Requests, max(reads.Load()-get.Requests, 0))
	if get.Requests < before {
		t.Errorf("GetItem requests after kill -9 = %d, want at least the %d acknowledged more than %v before the kill", get.Requests, before, flushInterval)
	}
	if get.Requests > reads.Load()+readers {
		t.Errorf("GetItem requests after kill -9 = %d, want at most %d acknowledged + %d in flight", get.Requests, reads.Load(), readers)
	}
}

// TestKill9KeepsBucketDebits throttles a tenant, kills the binary with
// SIGKILL and checks that after the restart the tenant gets no more write
// capacity back than the refill of the time it was down plus the debits
// of one flush interval (the token bucket checkpoint's bound, README
// "Metering"), not its whole burst.
func TestKill9KeepsBucketDebits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := binary(t)
	dir := t.TempDir()
	srv := harness.StartBinary(t, bin, dir) // admission control on
	tenant := srv.Default.TenantID
	c := srv.Client(srv.Default)
	createTable(t, c, "Bucket")
	const rate, burstSeconds = 10.0, 20.0 // a 200-unit burst
	var out any
	if err := srv.Admin().Do(context.Background(), "PUT", "/v1/tenants/"+tenant+"/quota",
		map[string]float64{"write_units": rate, "burst_seconds": burstSeconds}, &out); err != nil {
		t.Fatal(err)
	}
	// put writes until the first throttle (or n successes) and returns the successes.
	put := func(c *dynamodb.Client, round, n int) int {
		for i := 0; i < n; i++ {
			_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("Bucket"), Item: key(round, i)}, noRetry)
			var pte *types.ProvisionedThroughputExceededException
			if errors.As(err, &pte) {
				return i
			}
			if err != nil {
				t.Fatalf("PutItem: %v", err)
			}
		}
		return n
	}
	if n := put(c, 0, 1000); n >= 1000 {
		t.Fatalf("%d writes without a throttle; the quota is not applied", n)
	}
	// Keep the tenant throttled over a few checkpoints (it takes each unit
	// as it is refilled), then kill it.
	for round, until := 1, time.Now().Add(3*flushInterval); time.Now().Before(until); round++ {
		put(c, round, 1000)
		time.Sleep(5 * time.Millisecond)
	}
	down := time.Now()
	srv.Kill(t)

	srv = harness.StartBinary(t, bin, dir)
	c = srv.Client(srv.Default)
	got := put(c, 1_000_000, 1000)
	// Refill while down and restarting, the debits of one flush interval
	// the checkpoint may not hold, and one request that overdraws.
	bound := int(rate*(time.Since(down)+flushInterval).Seconds()) + 1
	t.Logf("after kill -9, a throttled tenant got %d writes before the next throttle (bound %d, burst %d)", got, bound, int(rate*burstSeconds))
	if got > bound {
		t.Fatalf("after kill -9 a throttled tenant got %d writes, want at most %d (refill while down + one flush interval of debits)", got, bound)
	}
}
