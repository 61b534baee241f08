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

// syncWindow bounds what kill -9 may lose of the metering of writes: those
// acknowledged while the WAL fsync that follows them was in progress
// (README "Metering"). An fsync takes milliseconds; the margin is for a
// loaded test machine.
const syncWindow = 100 * time.Millisecond

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

// TestKill9KeepsMetering drives acknowledged writes and reads through the
// SDK, kills the binary with SIGKILL in the middle of the load, restarts it
// and checks that the usage report counts every write acknowledged more
// than syncWindow before the kill (each one write unit) and every read
// acknowledged more than one flush interval before it: the bounds README
// "Metering" documents. It logs what was lost.
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
	var writes, reads atomic.Int64
	var mu sync.Mutex
	var readAcks, writeAcks []time.Time // when each request was acknowledged
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
				it := key(w, i)
				it["payload"] = &types.AttributeValueMemberS{Value: payload}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Meter"), Item: it}, noRetry)
				cancel()
				if err != nil {
					return
				}
				writes.Add(1)
				mu.Lock()
				writeAcks = append(writeAcks, time.Now())
				mu.Unlock()
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
	put, get := got["PutItem"], got["GetItem"]
	acked := writes.Load()
	// ackedBefore counts the acknowledgements in acks before the kill - d.
	ackedBefore := func(acks []time.Time, d time.Duration) int64 {
		n := int64(0)
		for _, at := range acks {
			if at.Before(killedAt.Add(-d)) {
				n++
			}
		}
		return n
	}
	// Every write acknowledged before the sync window is counted; a write
	// in flight at the kill may have committed and been counted too, never
	// more than one per writer.
	durable := ackedBefore(writeAcks, syncWindow)
	t.Logf("writes: %d acknowledged, %d of them more than %v before the kill; counted after kill -9: %d PutItem, %v WCU (%d lost)",
		acked, durable, syncWindow, put.Requests, put.ConsumedWriteUnits, max(acked-put.Requests, 0))
	if put.Requests < durable || put.Requests > acked+writers {
		t.Errorf("PutItem requests after kill -9 = %d, want at least the %d acknowledged more than %v before the kill, at most %d acknowledged + %d in flight",
			put.Requests, durable, syncWindow, acked, writers)
	}
	if put.ConsumedWriteUnits < float64(durable) || put.ConsumedWriteUnits > float64(acked+writers) {
		t.Errorf("PutItem write units after kill -9 = %v, want at least %d, at most %d", put.ConsumedWriteUnits, durable, acked+writers)
	}
	// Reads: what kill -9 may lose is bounded by the flush interval.
	before := ackedBefore(readAcks, flushInterval)
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
