package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// binary returns TENANTDB_BIN or a freshly built ./cmd/tenantdb.
func binary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(harness.BinEnv); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "tenantdb")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/tenantdb/tenantdb/cmd/tenantdb")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// acked records the writes a gateway acknowledged.
type acked struct {
	mu   sync.Mutex
	puts map[string]bool // "w<worker>/<i>" of acknowledged PutItems
	adds map[string]int  // counter item -> acknowledged ADDs
	sent map[string]int  // counter item -> ADDs sent (acknowledged or not)
}

// writeLoad sends PutItem and UpdateItem ADD from workers goroutines to
// c until stop is closed or c's gateway is gone, recording what was
// acknowledged; onAck is called after each acknowledgement.
func writeLoad(c *dynamodb.Client, gateway string, workers int, a *acked, stop <-chan struct{}, onAck func()) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fails := 0
			for i := 0; fails < 20; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				key := fmt.Sprintf("%s-w%02d/%d", gateway, w, i)
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Kill"), Item: map[string]types.AttributeValue{
					"pk": s(key), "marker": s("kill"), "payload": s(string(make([]byte, 256)))}})
				if err == nil {
					a.mu.Lock()
					a.puts[key] = true
					a.mu.Unlock()
					onAck()
				}
				counter := fmt.Sprintf("counter-%d", w%4) // NB: shared by both gateways
				a.mu.Lock()
				a.sent[counter]++
				a.mu.Unlock()
				_, uerr := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Kill"),
					Key: map[string]types.AttributeValue{"pk": s(counter)}, UpdateExpression: aws.String("ADD n :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}})
				cancel()
				if uerr == nil {
					a.mu.Lock()
					a.adds[counter]++
					a.mu.Unlock()
					onAck()
				}
				if err != nil || uerr != nil {
					fails++ // the gateway is gone (or going)
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	return &wg
}

// TestKill9GatewayKeepsAcknowledgedWrites: two gateway processes over
// one engine take one tenant's PutItem and UpdateItem ADD (on 4 counters
// both write) from 8 workers each; one is
// killed with SIGKILL mid-load while the other keeps serving. Every write
// either gateway acknowledged is in the engine (read there directly, with
// the gateways' own engine credential), and each counter holds at least
// the ADDs acknowledged and at most those sent.
func TestKill9GatewayKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and kills the tenantdb binary")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 0, harness.Options{})
	gwA := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	gwB := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	// One tenant, created through A, served by both.
	f.Gateways = []*harness.Server{gwA, gwB}
	cs := sharedTenant(t, f, "killed")
	ca, cb := cs[0], cs[1]
	createTable(t, ca, "Kill")
	waitTable(t, cs, "Kill")

	a := &acked{puts: map[string]bool{}, adds: map[string]int{}, sent: map[string]int{}}
	b := &acked{puts: map[string]bool{}, adds: map[string]int{}, sent: map[string]int{}}
	stop := make(chan struct{})
	var n atomic.Int64
	var once sync.Once
	killed := make(chan struct{})
	kill := func() {
		if n.Add(1) == 1500 {
			once.Do(func() { gwA.Kill(t); close(killed) })
		}
	}
	wa := writeLoad(ca, "a", 8, a, stop, kill)
	wb := writeLoad(cb, "b", 8, b, stop, func() {})
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatalf("gateway A acknowledged only %d writes in 60 s", n.Load())
	}
	wa.Wait() // its workers give up once the gateway is gone
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wb.Wait()

	// Read the engine directly: every item with the test's marker.
	direct := f.Engine.Client(f.EngineKey)
	inEngine := map[string]bool{}
	counters := map[string]int{}
	var start map[string]types.AttributeValue
	for {
		out, err := direct.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("gw-tenantdb"), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			pk, _ := it["pk"].(*types.AttributeValueMemberS)
			if pk == nil {
				continue
			}
			if m, ok := it["marker"].(*types.AttributeValueMemberS); ok && m.Value == "kill" {
				inEngine[pk.Value] = true
			}
			if c, ok := it["n"].(*types.AttributeValueMemberN); ok {
				v, _ := strconv.Atoi(c.Value)
				counters[pk.Value] = v
			}
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	for name, ak := range map[string]*acked{"A (killed)": a, "B": b} {
		missing := 0
		for key := range ak.puts {
			if !inEngine[key] {
				missing++
				if missing <= 5 {
					t.Errorf("gateway %s acknowledged PutItem %s, not in the engine", name, key)
				}
			}
		}
		t.Logf("gateway %s: %d acknowledged PutItems, %d missing from the engine; ADDs acknowledged %v, sent %v",
			name, len(ak.puts), missing, ak.adds, ak.sent)
		if len(ak.puts) == 0 {
			t.Errorf("gateway %s acknowledged no writes", name)
		}
	}
	// Counters, written through both gateways: at least the ADDs
	// acknowledged, at most those sent.
	for c := range a.sent {
		acked, sent := a.adds[c]+b.adds[c], a.sent[c]+b.sent[c]
		if got := counters[c]; got < acked || got > sent {
			t.Errorf("%s = %d, want between the %d ADDs acknowledged and the %d sent", c, got, acked, sent)
		}
	}
	for c, sent := range b.sent {
		if b.adds[c] != sent {
			t.Errorf("gateway B acknowledged %d of %d ADDs to %s without being killed", b.adds[c], sent, c)
		}
	}
}
