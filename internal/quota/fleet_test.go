package quota_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// These tests run several quota Managers — the quota layers of several
// gateways — over one engine's fleet-wide buckets (remote.Capacity): the
// tenantdb stand-in engine, reached through the DynamoDB API only, and
// dynalite when it is installed (it does not return the old item of a
// failed condition, so the leaser has to guess more).

// countingLeaser counts the engine calls of a gateway's leases.
type countingLeaser struct {
	next           quota.Leaser
	calls, refused atomic.Int64
}

func (c *countingLeaser) Lease(ctx context.Context, key string, units, rate, size float64, now time.Time) (bool, time.Time, error) {
	c.calls.Add(1)
	ok, at, err := c.next.Lease(ctx, key, units, rate, size, now)
	if !ok {
		c.refused.Add(1)
	}
	return ok, at, err
}

// fakeClock is the gateways' common clock, so a test can step time.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// engineCapacity opens n gateways' views of the fleet-wide buckets of one
// engine: a tenantdb stand-in (engine "tenantdb", reached with a tenant's
// key) or dynalite.
func engineCapacity(t *testing.T, engine string, n int) []*remote.Capacity {
	t.Helper()
	var client *dynamodb.Client
	if engine == "dynalite" {
		client = dynamodb.New(dynamodb.Options{
			Region:       harness.Region,
			BaseEndpoint: aws.String(harness.StartDynalite(t)),
			Credentials:  credentials.NewStaticCredentialsProvider("dummy", "dummy", ""),
		})
	} else {
		srv := harness.Start(t)
		client = srv.Client(srv.Default)
	}
	ctx := context.Background()
	var caps []*remote.Capacity
	for range n {
		b, err := remote.Open(ctx, remote.Options{Client: client, TablePrefix: "fleet-", IndexSlots: 1})
		if err != nil {
			t.Fatal(err)
		}
		caps = append(caps, b.Capacity())
	}
	return caps
}

func newTenant(t *testing.T) (tenancy.TenantID, func(op string) tenancy.Scope) {
	var id tenancy.TenantID
	rand.Read(id[:])
	return id, func(op string) tenancy.Scope {
		s, err := (&tenancy.Guard{}).Admit(tenancy.Principal{Tenant: id, Env: "live", Role: tenancy.RoleAdmin, KeyID: "k"}, dynamo.ActionOf(op))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func gateway(t *testing.T, o quota.Options) *quota.Manager {
	t.Helper()
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	o.DB = db
	m, err := quota.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestFleetCapacityIsSharedByGateways: three gateways hammer one tenant's
// write capacity for 5 s (simulated time, a common clock) with requests
// of one unit each. Together they get the tenant's burst plus its rate,
// within the stated overshoot — one lease slice per gateway, plus each
// gateway's overdraw — not three times it, with one engine call per slice
// rather than per request; and the refusals are DynamoDB's
// ProvisionedThroughputExceededException. Without the fleet's buckets the
// same gateways let through about three times as much.
func TestFleetCapacityIsSharedByGateways(t *testing.T) {
	const (
		gateways = 3
		rate     = 200.0 // WCU/s
		burst    = 2.0   // s
		size     = rate * burst
		slice    = rate * 0.1 // DefaultLeaseSlice
		span     = 5 * time.Second
		step     = 5 * time.Millisecond
		perStep  = 40 // requests each gateway tries per step, at most
	)
	run := func(t *testing.T, caps []*remote.Capacity) (admitted int, calls, refused int64) {
		clk := &fakeClock{t: time.Now()}
		_, scope := newTenant(t)
		var ms []*quota.Manager
		var counters []*countingLeaser
		for i := range gateways {
			o := quota.Options{Now: clk.now, Default: quota.Limits{WriteUnits: rate, BurstSeconds: burst}}
			if caps != nil {
				c := &countingLeaser{next: caps[i]}
				counters = append(counters, c)
				o.Fleet = c
			}
			ms = append(ms, gateway(t, o))
		}
		put, _ := dynamo.Lookup("PutItem")
		in := &wire.PutItemInput{TableName: "t"}
		out := &wire.PutItemOutput{Metered: wire.Metered{U: wire.Usage{WriteUnits: 1, Table: "t", Committed: true}}}
		ctx := context.Background()
		s := scope("PutItem")
		for elapsed := time.Duration(0); elapsed < span; elapsed += step {
			for _, m := range ms {
				for range perStep {
					tk, err := m.Admit(ctx, s, put, in)
					if err != nil {
						if !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
							t.Fatalf("refused with %v, want ProvisionedThroughputExceededException", err)
						}
						break
					}
					tk.Done(out, nil)
					admitted++
				}
			}
			clk.add(step)
		}
		for _, c := range counters {
			calls += c.calls.Load()
			refused += c.refused.Load()
		}
		return admitted, calls, refused
	}

	// What the tenant may use over the span, and the stated overshoot.
	allowed := size + rate*span.Seconds()
	overshoot := gateways*slice + gateways*1 // a slice each, and one request's overdraw each
	for _, name := range []string{"tenantdb", "dynalite"} {
		t.Run(name, func(t *testing.T) {
			caps := engineCapacity(t, name, gateways)
			admitted, calls, refused := run(t, caps)
			t.Logf("%s: %d units admitted through %d gateways (allowed %.0f + overshoot bound %.0f); %d engine calls, %d of them refused",
				name, admitted, gateways, allowed, overshoot, calls, refused)
			if float64(admitted) > allowed+overshoot {
				t.Errorf("%d units admitted, more than the tenant's %.0f + the overshoot bound %.0f", admitted, allowed, overshoot)
			}
			// Leases refused while other gateways hold slices cost some
			// capacity, never much: the fleet still gets most of it.
			if float64(admitted) < 0.9*allowed {
				t.Errorf("%d units admitted, less than 90%% of the tenant's %.0f", admitted, allowed)
			}
			if calls*5 > int64(admitted) {
				t.Errorf("%d engine calls for %d requests of one unit: want one per slice of %.0f, not per request", calls, admitted, slice)
			}
		})
	}
	t.Run("local", func(t *testing.T) {
		admitted, _, _ := run(t, nil)
		t.Logf("without the fleet's buckets: %d units admitted through %d gateways", admitted, gateways)
		if float64(admitted) < 2.5*allowed {
			t.Errorf("%d units admitted through %d gateways with their own buckets; want about %d x %.0f", admitted, gateways, gateways, allowed)
		}
	})
}

// TestFleetCapacityConcurrent: three gateways with 8 clients each spend
// one tenant's read capacity concurrently, on the real clock, for a
// second: the units admitted stay within the tenant's burst and rate over
// the time taken plus the overshoot bound (a slice per gateway, and one
// in-flight request's overdraw per client).
func TestFleetCapacityConcurrent(t *testing.T) {
	const (
		gateways = 3
		clients  = 8
		rate     = 100.0
		burst    = 1.0
		slice    = rate * 0.1
	)
	caps := engineCapacity(t, "tenantdb", gateways)
	_, scope := newTenant(t)
	get, _ := dynamo.Lookup("GetItem")
	in := &wire.GetItemInput{TableName: "t"}
	out := &wire.GetItemOutput{Metered: wire.Metered{U: wire.Usage{ReadUnits: 1, Table: "t"}}}
	s := scope("GetItem")
	var admitted atomic.Int64
	start := time.Now()
	deadline := start.Add(time.Second)
	var wg sync.WaitGroup
	for i := range gateways {
		m := gateway(t, quota.Options{Fleet: caps[i], Default: quota.Limits{ReadUnits: rate, BurstSeconds: burst}})
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					tk, err := m.Admit(context.Background(), s, get, in)
					if err != nil {
						if !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
							t.Errorf("refused with %v", err)
							return
						}
						time.Sleep(2 * time.Millisecond)
						continue
					}
					tk.Done(out, nil)
					admitted.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	bound := rate*burst + rate*elapsed + gateways*slice + gateways*clients*1
	t.Logf("%d units admitted in %.2fs through %d gateways x %d clients; bound %.0f", admitted.Load(), elapsed, gateways, clients, bound)
	if float64(admitted.Load()) > bound {
		t.Errorf("%d units admitted, more than the bound %.0f", admitted.Load(), bound)
	}
}
