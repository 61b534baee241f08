package crash

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// Webhook crash test sizes: hookTenants tenants × hookWorkers writers on
// a shared table, each writer owning hookKeys keys it writes in turn;
// the server is killed (kill -9) once hookKillAfter writes of a round are
// acknowledged, twice, while deliveries are in flight.
const (
	hookTenants, hookWorkers, hookKeys = 3, 3, 4
	hookKillAfter                      = 1200
	hookKills                          = 2
)

// hookLoad writes versions of each worker's keys until the server dies
// (or, with kill nil, until n writes per client are done), appending to
// want[tenant][pk].
func hookLoad(clients []*dynamodb.Client, round, n int, want []map[string][]version, kill func()) {
	var acked atomic.Int64
	var once sync.Once
	var mu sync.Mutex
	var wg sync.WaitGroup
	for tn, c := range clients {
		for w := range hookWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; kill != nil || i < n; i++ {
					pk := fmt.Sprintf("t%d-w%d-k%d", tn, w, i%hookKeys)
					v := round*1_000_000 + i
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("CrashHook"), Item: map[string]types.AttributeValue{
						"pk": &types.AttributeValueMemberS{Value: pk},
						"v":  &types.AttributeValueMemberN{Value: strconv.Itoa(v)},
					}}, noRetry)
					cancel()
					mu.Lock()
					want[tn][pk] = append(want[tn][pk], version{v: v, optional: err != nil})
					mu.Unlock()
					if err != nil {
						return
					}
					if kill != nil && acked.Add(1) >= hookKillAfter {
						once.Do(kill)
					}
				}
			}()
		}
	}
	wg.Wait()
}

// TestKill9WebhooksDeliverEveryCommittedChange: three tenants write to a
// shared table, each with a subscription to a loopback receiver, while the
// server is killed twice mid-delivery. After a last restart every
// acknowledged change of each tenant reaches its own receiver at least
// once, first deliveries in per-key commit order, nothing of another
// tenant and nothing that did not commit.
func TestKill9WebhooksDeliverEveryCommittedChange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := binary(t)
	dir := t.TempDir()
	args := []string{"--fairness=false", "--allow-private-webhooks"}
	var creds []harness.Credential
	var rcs []*harness.Receiver
	want := make([]map[string][]version, hookTenants)
	for tn := range want {
		want[tn] = map[string][]version{}
		rcs = append(rcs, harness.StartReceiver(t))
	}
	start := func() (*harness.Server, []*dynamodb.Client) {
		srv := harness.StartBinary(t, bin, dir, args...)
		var cs []*dynamodb.Client
		for _, c := range creds {
			cs = append(cs, srv.Client(c))
		}
		return srv, cs
	}
	for round := 0; round <= hookKills; round++ {
		srv := harness.StartBinary(t, bin, dir, args...)
		if round == 0 {
			if _, err := srv.Client(srv.Operator).CreateTable(context.Background(), &dynamodb.CreateTableInput{
				TableName:            aws.String("CrashHook"),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
				BillingMode:          types.BillingModePayPerRequest,
			}); err != nil {
				t.Fatal(err)
			}
			for tn := range hookTenants {
				c := srv.NewTenant(t, fmt.Sprintf("hook%d", tn), "admin")
				creds = append(creds, c)
				sub, err := (&client.Client{Endpoint: srv.Endpoint, Key: c.Key}).CreateSubscription(context.Background(), c.TenantID,
					client.CreateSubscriptionRequest{Table: "CrashHook", URL: rcs[tn].URL, BatchSize: 25})
				if err != nil {
					t.Fatal(err)
				}
				rcs[tn].Trust(sub.Secret)
			}
		}
		srv.Stop(t)
		srv, clients := start()
		if round < hookKills {
			hookLoad(clients, round, 0, want, func() { srv.Kill(t) })
			continue
		}
		// The last round writes a little more and lets deliveries finish.
		hookLoad(clients, round, 50, want, nil)
		for tn := range hookTenants {
			acked := 0
			for _, vs := range want[tn] {
				for _, v := range vs {
					if !v.optional {
						acked++
					}
				}
			}
			rcs[tn].WaitFor(t, 3*time.Minute, fmt.Sprintf("tenant %d's %d acknowledged changes", tn, acked), func(r []harness.Received) bool {
				return delivered(want[tn], r)
			})
		}
	}
	for tn, rc := range rcs {
		got := rc.Records()
		first := map[string]bool{}
		perKey := map[string][]int{}
		dups := 0
		for _, r := range got {
			if first[r.EventID] {
				dups++
				continue
			}
			first[r.EventID] = true
			pk, _ := r.Dynamodb.Keys["pk"]["S"].(string)
			if _, mine := want[tn][pk]; !mine {
				t.Fatalf("LEAK: tenant %d's receiver got key %q, not one of its writes", tn, pk)
			}
			n, _ := r.Dynamodb.NewImage["v"]["N"].(string)
			v, _ := strconv.Atoi(n)
			perKey[pk] = append(perKey[pk], v)
		}
		acked, optional, present := 0, 0, 0
		for pk, vs := range want[tn] {
			seen := perKey[pk]
			j := 0
			for _, v := range vs {
				if j < len(seen) && seen[j] == v.v {
					j++
					if v.optional {
						present++
						optional++
					} else {
						acked++
					}
					continue
				}
				if v.optional {
					optional++
					continue
				}
				t.Fatalf("tenant %d key %s: acknowledged v=%d not delivered in order (first deliveries %v)", tn, pk, v.v, seen)
			}
			if j != len(seen) {
				t.Fatalf("tenant %d key %s: deliveries %v beyond or out of the committed order", tn, pk, seen[j:])
			}
		}
		if rc.Invalid() != 0 {
			t.Errorf("tenant %d: %d deliveries did not verify", tn, rc.Invalid())
		}
		t.Logf("tenant %d: %d acknowledged changes delivered at least once in per-key order (%d redeliveries after the kills); %d of %d in-flight writes delivered",
			tn, acked, dups, present, optional)
	}
}

// delivered reports whether r holds every acknowledged version of want.
func delivered(want map[string][]version, r []harness.Received) bool {
	got := map[string]map[int]bool{}
	for _, x := range r {
		pk, _ := x.Dynamodb.Keys["pk"]["S"].(string)
		n, _ := x.Dynamodb.NewImage["v"]["N"].(string)
		v, _ := strconv.Atoi(n)
		if got[pk] == nil {
			got[pk] = map[int]bool{}
		}
		got[pk][v] = true
	}
	for pk, vs := range want {
		for _, v := range vs {
			if !v.optional && !got[pk][v.v] {
				return false
			}
		}
	}
	return true
}
