package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// sharedTenant creates a tenant through the first gateway of f and
// returns a client of it on each gateway, once its key is valid on all
// of them (the control plane lives in the engine; a gateway's cache of
// credentials has a bounded staleness).
func sharedTenant(t *testing.T, f *harness.Cluster, name string) []*dynamodb.Client {
	t.Helper()
	return sharedTenantWith(t, f, name, nil)
}

// sharedTenantWith is sharedTenant, calling setup (if not nil) with the
// tenant's key before any request of the tenant reaches a gateway.
func sharedTenantWith(t *testing.T, f *harness.Cluster, name string, setup func(harness.Credential)) []*dynamodb.Client {
	t.Helper()
	cred := f.Gateways[0].NewTenant(t, name, "admin")
	if setup != nil {
		setup(cred)
	}
	var cs []*dynamodb.Client
	for i, gw := range f.Gateways {
		c := gw.Client(cred)
		var err error
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err = c.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a key created through gateway 1 is not valid on gateway %d after 15 s: %v", i+1, err)
			}
		}
		cs = append(cs, c)
	}
	return cs
}

// waitTable waits until every client sees table name (a definition
// created through one gateway, cached by the others).
func waitTable(t *testing.T, cs []*dynamodb.Client, name string) {
	t.Helper()
	for i, c := range cs {
		var err error
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err = c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("table %s is not visible on gateway %d after 15 s: %v", name, i+1, err)
			}
		}
	}
}

func intOf(t *testing.T, it map[string]types.AttributeValue, name string) int {
	t.Helper()
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item %v has no number %s", it, name)
	}
	x, err := strconv.Atoi(v.Value)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestConcurrencyAcrossGateways: 64 clients spread over 3 gateways (client
// i on gateway i mod 3) work on one tenant's overlapping items at once:
//   - UpdateItem `ADD n :1` on 4 shared counters: each counter ends equal
//     to the ADDs acknowledged;
//   - TransactWriteItems moving one unit between 2 of 8 accounts, each
//     conditioned on the source's balance (some ask more than any
//     balance, and must be cancelled with ConditionalCheckFailed), retried
//     on TransactionConflict: every account ends at exactly its start plus
//     the acknowledged moves in minus out;
//   - meanwhile TransactGetItems of all 8 accounts, through every gateway,
//     always sees the total unchanged and the move counters consistent
//     with it: no transaction is ever seen half done, so none interleaves.
//
// Correctness comes from the engine's conditional writes and
// transactions; no gateway holds a lock.
func TestConcurrencyAcrossGateways(t *testing.T) {
	const (
		gateways = 3
		clients  = 64
		rounds   = 12
		accounts = 8
		start    = 1000
	)
	f := harness.StartCluster(t, gateways, harness.Options{})
	cs := sharedTenant(t, f, "concurrent")
	ctx := context.Background()
	createTable(t, cs[0], "Bank")
	waitTable(t, cs, "Bank")
	acct := func(i int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(fmt.Sprintf("acct-%d", i))}
	}
	for i := range accounts {
		if _, err := cs[i%gateways].PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Bank"),
			Item: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("acct-%d", i)), "bal": n(strconv.Itoa(start)), "moves": n("0")}}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu        sync.Mutex
		adds      = map[string]int{} // counter -> acknowledged ADDs
		net       = make([]int, accounts)
		committed int
		refused   atomic.Int64 // cancelled by their condition, as they must be
		conflicts atomic.Int64
		snapshots atomic.Int64
	)
	stopReaders := make(chan struct{})
	var readers sync.WaitGroup
	for r := range gateways {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var items []types.TransactGetItem
			for i := range accounts {
				items = append(items, types.TransactGetItem{Get: &types.Get{TableName: aws.String("Bank"), Key: acct(i)}})
			}
			for {
				select {
				case <-stopReaders:
					return
				default:
				}
				out, err := cs[r].TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: items})
				var tce *types.TransactionCanceledException
				if errors.As(err, &tce) {
					continue // a conflict with a write in progress: retried
				}
				if err != nil {
					t.Errorf("TransactGetItems through gateway %d: %v", r+1, err)
					return
				}
				total, moves := 0, 0
				for _, resp := range out.Responses {
					total += intOf(t, resp.Item, "bal")
					moves += intOf(t, resp.Item, "moves")
				}
				if total != accounts*start || moves%2 != 0 {
					t.Errorf("gateway %d saw a transaction half done: total %d (want %d), moves %d (want even)", r+1, total, accounts*start, moves)
					return
				}
				snapshots.Add(1)
			}
		}()
	}

	var wg sync.WaitGroup
	for w := range clients {
		c := cs[w%gateways]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 14))
			for range rounds {
				counter := fmt.Sprintf("counter-%d", rng.IntN(4))
				if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("Bank"),
					Key: map[string]types.AttributeValue{"pk": s(counter)}, UpdateExpression: aws.String("ADD n :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}); err != nil {
					t.Errorf("ADD through gateway %d: %v", w%gateways+1, err)
					return
				}
				mu.Lock()
				adds[counter]++
				mu.Unlock()

				from, to := rng.IntN(accounts), rng.IntN(accounts-1)
				if to >= from {
					to++
				}
				amount := 1
				if rng.IntN(8) == 0 {
					amount = accounts * start // more than any balance: must be refused
				}
				in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{TableName: aws.String("Bank"), Key: acct(from),
						UpdateExpression:          aws.String("SET bal = bal - :a ADD moves :one"),
						ConditionExpression:       aws.String("bal >= :a"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":a": n(strconv.Itoa(amount)), ":one": n("1")}}},
					{Update: &types.Update{TableName: aws.String("Bank"), Key: acct(to),
						UpdateExpression:          aws.String("SET bal = bal + :a ADD moves :one"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":a": n(strconv.Itoa(amount)), ":one": n("1")}}},
				}}
				for attempt := 0; ; attempt++ {
					_, err := c.TransactWriteItems(ctx, in)
					var tce *types.TransactionCanceledException
					if errors.As(err, &tce) {
						code := ""
						for _, r := range tce.CancellationReasons {
							if r.Code != nil && *r.Code != "None" {
								code = *r.Code
							}
						}
						if code == "ConditionalCheckFailed" && amount > 1 {
							refused.Add(1)
							break
						}
						if code == "TransactionConflict" && attempt < 100 {
							conflicts.Add(1)
							time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
							continue
						}
					}
					if err != nil {
						t.Errorf("transfer %d -> %d of %d through gateway %d: %v", from, to, amount, w%gateways+1, err)
						return
					}
					if amount > 1 {
						t.Errorf("transfer of %d from account %d was not refused", amount, from)
					}
					mu.Lock()
					net[from] -= amount
					net[to] += amount
					committed++
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	close(stopReaders)
	readers.Wait()

	// The engine's totals, read through each gateway in turn.
	for name, want := range adds {
		out, err := cs[len(name)%gateways].GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Bank"),
			Key: map[string]types.AttributeValue{"pk": s(name)}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if got := intOf(t, out.Item, "n"); got != want {
			t.Errorf("%s = %d, want the %d ADDs acknowledged", name, got, want)
		}
	}
	moves := 0
	for i := range accounts {
		out, err := cs[i%gateways].GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Bank"), Key: acct(i), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if got := intOf(t, out.Item, "bal"); got != start+net[i] {
			t.Errorf("account %d: balance %d, want %d (start %d, net of the acknowledged transfers %+d)", i, got, start+net[i], start, net[i])
		}
		moves += intOf(t, out.Item, "moves")
	}
	if moves != 2*committed {
		t.Errorf("%d moves recorded on the accounts, want 2 x %d transfers acknowledged", moves, committed)
	}
	t.Logf("%d ADDs, %d transfers committed, %d refused by their condition, %d conflicts retried; %d consistent snapshots read",
		clients*rounds, committed, refused.Load(), conflicts.Load(), snapshots.Load())
	if refused.Load() == 0 || snapshots.Load() == 0 {
		t.Errorf("the test did not exercise refusals (%d) or snapshots (%d)", refused.Load(), snapshots.Load())
	}
}

// TestClientRequestTokenAcrossGateways: a TransactWriteItems with a
// ClientRequestToken, sent again through the other gateways, succeeds
// without being applied again (the engine's idempotency, keyed by the
// tenant, not by the gateway), and the same token with other parameters
// is refused with IdempotentParameterMismatchException on any gateway.
func TestClientRequestTokenAcrossGateways(t *testing.T) {
	f := harness.StartCluster(t, 3, harness.Options{})
	cs := sharedTenant(t, f, "idempotent")
	ctx := context.Background()
	createTable(t, cs[0], "Idem")
	waitTable(t, cs, "Idem")
	add := func(by string) *dynamodb.TransactWriteItemsInput {
		return &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("token-14"), TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String("Idem"), Key: map[string]types.AttributeValue{"pk": s("once")},
				UpdateExpression: aws.String("ADD n :by"), ExpressionAttributeValues: map[string]types.AttributeValue{":by": n(by)}}}}}
	}
	for i, c := range cs {
		if _, err := c.TransactWriteItems(ctx, add("1")); err != nil {
			t.Fatalf("the request through gateway %d: %v", i+1, err)
		}
	}
	for i, c := range cs {
		_, err := c.TransactWriteItems(ctx, add("2"))
		var ipm *types.IdempotentParameterMismatchException
		if !errors.As(err, &ipm) {
			t.Errorf("the token with other parameters through gateway %d: %v, want IdempotentParameterMismatchException", i+1, err)
		}
	}
	out, err := cs[2].GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Idem"), Key: map[string]types.AttributeValue{"pk": s("once")}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got := intOf(t, out.Item, "n"); got != 1 {
		t.Errorf("n = %d after the same transaction through 3 gateways, want 1", got)
	}
}
