package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/crashpoint"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestMoveCrash: `tenant move` is killed with kill -9 at different points
// while the tenant writes: after delays that land in the copy, the
// catch-up or after the end, and then exactly at the two crash points
// (internal/crashpoint) a delay rarely hits: the instant after the
// cutover's switch batch is synced (before the held writers go on), and
// in the middle of the cleanup of the source copy. After each restart the
// move resumes on its own and ends with the data where it was asked to
// go (at once, for the crash points: the switch was durable); every write
// acknowledged before the kill is there, no write is there that was
// never sent, the item count and the index agree, and another tenant's
// data is untouched. The finished moves are listed after the restarts
// (durably), for A only.
func TestMoveCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := crashBinary(t)
	dir := t.TempDir()
	args := []string{"--fairness=false"}
	srv := harness.StartBinary(t, bin, dir, args...)
	ctx := context.Background()
	_, err := srv.Client(srv.Operator).CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("Orders"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
	if err != nil {
		t.Fatal(err)
	}
	a := srv.NewTenant(t, "crash-mover", "app")
	b := srv.NewTenant(t, "crash-other", "app")
	cli := func(srv *harness.Server, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "TENANTDB_ENDPOINT="+srv.Endpoint, "TENANTDB_KEY="+srv.Operator.Key)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tenantdb %v: %v\n%s", args, err, out)
		}
		return out
	}
	// Enough items that a move takes a while to copy.
	batch := func(c *dynamodb.Client, from, n int, tag string) {
		t.Helper()
		for i := from; i < from+n; i += 25 {
			var reqs []types.WriteRequest
			for j := i; j < min(i+25, from+n); j++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("pre%06d", j)}, "g": &types.AttributeValueMemberS{Value: "G"},
					"pad": &types.AttributeValueMemberS{Value: tag + fmt.Sprintf("%0200d", j)}}}})
			}
			if _, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"Orders": reqs}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	const pre = 20000
	batch(srv.Client(a), 0, pre, "a")
	batch(srv.Client(b), 0, 500, "b")

	acked := map[string]bool{} // written and acknowledged
	sent := map[string]bool{}  // written, acknowledged or not
	writer := func(srv *harness.Server, round int, stop <-chan struct{}) *sync.WaitGroup {
		var wg sync.WaitGroup
		c := srv.Client(a)
		var mu sync.Mutex
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := fmt.Sprintf("r%d-g%d-%d", round, g, i)
					mu.Lock()
					sent[k] = true
					mu.Unlock()
					_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: map[string]types.AttributeValue{
						"pk": &types.AttributeValueMemberS{Value: k}, "g": &types.AttributeValueMemberS{Value: "G"}}})
					if err != nil {
						return // the server is gone
					}
					mu.Lock()
					acked[k] = true
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}
		return &wg
	}
	placement := func(srv *harness.Server) client.TablePlacement {
		t.Helper()
		var tn client.Tenant
		if err := json.Unmarshal(cli(srv, "tenant", "show", a.TenantID, "--json"), &tn); err != nil {
			t.Fatal(err)
		}
		for _, p := range tn.Placement {
			if p.Table == "Orders" {
				return p
			}
		}
		t.Fatalf("no placement of Orders: %+v", tn.Placement)
		return client.TablePlacement{}
	}
	check := func(srv *harness.Server, when string) {
		t.Helper()
		c := srv.Client(a)
		got := map[string]bool{}
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String("Orders"), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				k := it["pk"].(*types.AttributeValueMemberS).Value
				if got[k] {
					t.Fatalf("%s: %s twice", when, k)
				}
				got[k] = true
			}
		}
		for k := range acked {
			if !got[k] {
				t.Fatalf("%s: acknowledged write %s lost", when, k)
			}
		}
		n := 0
		for k := range got {
			if len(k) > 3 && k[:3] == "pre" {
				n++
			} else if !sent[k] {
				t.Fatalf("%s: %s was never written", when, k)
			}
		}
		if n != pre {
			t.Fatalf("%s: %d preloaded items, want %d", when, n, pre)
		}
		q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Orders"), IndexName: aws.String("byG"), Select: types.SelectCount,
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: "G"}}})
		if err != nil {
			t.Fatal(err)
		}
		total := q.Count
		for q.LastEvaluatedKey != nil {
			q, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Orders"), IndexName: aws.String("byG"), Select: types.SelectCount, ExclusiveStartKey: q.LastEvaluatedKey,
				KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: "G"}}})
			if err != nil {
				t.Fatal(err)
			}
			total += q.Count
		}
		if int(total) != len(got) {
			t.Fatalf("%s: the index holds %d entries for %d items", when, total, len(got))
		}
		sb, err := srv.Client(b).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("Orders"), Select: types.SelectCount})
		if err != nil {
			t.Fatal(err)
		}
		if sb.Count != 500 && sb.LastEvaluatedKey == nil {
			t.Fatalf("%s: the other tenant has %d items, want 500", when, sb.Count)
		}
	}

	to := "silo"
	type round struct {
		delay time.Duration
		point string // a crash point instead of a delay
	}
	rounds := []round{{delay: 0}, {delay: 5 * time.Millisecond}, {delay: 30 * time.Millisecond}, {delay: 100 * time.Millisecond},
		{delay: 250 * time.Millisecond}, {delay: 600 * time.Millisecond},
		{point: crashpoint.MoveCutover}, {point: crashpoint.MoveCutover}, {point: crashpoint.MoveCleanup}, {point: crashpoint.MoveCleanup}}
	for round, rd := range rounds {
		delay := rd.delay
		if rd.point != "" {
			// The server dies by itself at the point; the mark says it got there.
			srv.Stop(t)
			mark := filepath.Join(t.TempDir(), "hit")
			srv = harness.StartBinaryEnv(t, bin, dir, []string{crashpoint.Env + "=" + rd.point, crashpoint.MarkEnv + "=" + mark}, args...)
			stop := make(chan struct{})
			wg := writer(srv, round, stop)
			time.Sleep(20 * time.Millisecond)
			cli(srv, "tenant", "move", a.TenantID, "--table", "Orders", "--to", to, "--no-wait")
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(mark); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: the server did not reach crash point %s", round, rd.point)
				}
			}
			srv.Kill(t) // reaps the process that killed itself
			close(stop)
			wg.Wait()
		} else {
			stop := make(chan struct{})
			wg := writer(srv, round, stop)
			time.Sleep(20 * time.Millisecond)
			cli(srv, "tenant", "move", a.TenantID, "--table", "Orders", "--to", to, "--no-wait")
			time.Sleep(delay)
			srv.Kill(t)
			close(stop)
			wg.Wait()
		}
		srv = harness.StartBinary(t, bin, dir, args...)
		// The move resumes by itself; it ends with the data moved.
		deadline := time.Now().Add(2 * time.Minute)
		resumed := ""
		for first := true; ; first = false {
			p := placement(srv)
			if first {
				resumed = p.Moving
				if rd.point != "" && p.Store != to {
					// NB: the switch batch was synced before either point.
					t.Fatalf("round %d: killed at %s; after the restart the data is in the %s, want %s", round, rd.point, p.Store, to)
				}
			}
			if p.Moving == "" && p.Store == to {
				break
			}
			if p.Moving == "" && p.Store != to && delay == 0 {
				// Killed before the move was recorded: nothing to resume.
				cli(srv, "tenant", "move", a.TenantID, "--table", "Orders", "--to", to)
				continue
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the move did not end after the restart: %+v", round, p)
			}
			time.Sleep(20 * time.Millisecond)
		}
		when := fmt.Sprintf("after %v", delay)
		if rd.point != "" {
			when = "at " + rd.point
		}
		check(srv, fmt.Sprintf("round %d (killed %s, moving to %s)", round, when, to))
		t.Logf("round %d: killed %s of the move to %s; after the restart: %q; done", round, when, to, resumed)
		if to == "silo" {
			to = "pool"
		} else {
			to = "silo"
		}
	}

	// The finished moves survived the restarts: one done per round (a
	// round may also have a failed one), newest first; B has none.
	var ms []client.TenantMove
	if err := json.Unmarshal(cli(srv, "tenant", "moves", a.TenantID, "--json"), &ms); err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, m := range ms {
		if m.Table != "Orders" || m.Finished.IsZero() {
			t.Fatalf("tenant moves: %+v", m)
		}
		if m.Phase == "done" {
			done++
		}
	}
	if done < len(rounds) || ms[0].To != map[bool]string{true: "silo", false: "pool"}[len(rounds)%2 == 1] {
		t.Fatalf("tenant moves after %d rounds: %d done, newest %+v", len(rounds), done, ms[0])
	}
	if err := json.Unmarshal(cli(srv, "tenant", "moves", b.TenantID, "--json"), &ms); err != nil || len(ms) != 0 {
		t.Fatalf("the other tenant's moves: %+v, %v", ms, err)
	}
}
