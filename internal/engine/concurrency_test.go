package engine

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestConcurrentAddCounter(t *testing.T) {
	env := openEnv(t)
	env.operator().create(tableInput("Counters", false))
	a := env.tenant(tenancy.RoleApp)
	const workers, each = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a.scope("UpdateItem")
			for i := 0; i < each; i++ {
				_, err := env.e.UpdateItem(testCtx, s, &wire.UpdateItemInput{
					TableName:                 "Counters",
					Key:                       attr.Item{"pk": attr.Str("c")},
					UpdateExpression:          strPtr("ADD n :one"),
					ExpressionAttributeValues: map[string]attr.Value{":one": attr.Num(attr.MustNumber("1"))},
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("UpdateItem: %v", err)
	}
	got := a.get("Counters", attr.Item{"pk": attr.Str("c")})
	if got["n"].N.String() != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s, want %d", got["n"].N, workers*each)
	}
	if n, _ := a.counters("Counters", 0); n != 1 {
		t.Fatalf("item count %d", n)
	}
}

// TestConcurrentTransfers moves money between accounts with transactions
// while readers take transactional snapshots: the total never changes and
// no balance goes negative.
func TestConcurrentTransfers(t *testing.T) {
	env := openEnv(t)
	env.operator().create(tableInput("Accounts", false))
	a := env.tenant(tenancy.RoleApp)
	const accounts, start = 8, 100
	for i := 0; i < accounts; i++ {
		a.put("Accounts", attr.Item{"pk": attr.Str(fmt.Sprint("acct", i)), "bal": attr.Num(attr.MustNumber(fmt.Sprint(start)))})
	}
	num := func(n int) attr.Value { return attr.Num(attr.MustNumber(fmt.Sprint(n))) }
	transfer := func(s tenancy.Scope, from, to, amt int) error {
		_, err := env.e.TransactWriteItems(testCtx, s, &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
			{Update: &wire.TransactUpdate{TableName: "Accounts", Key: attr.Item{"pk": attr.Str(fmt.Sprint("acct", from))},
				UpdateExpression: "SET bal = bal - :a", ConditionExpression: strPtr("bal >= :a"), ExpressionAttributeValues: map[string]attr.Value{":a": num(amt)}}},
			{Update: &wire.TransactUpdate{TableName: "Accounts", Key: attr.Item{"pk": attr.Str(fmt.Sprint("acct", to))},
				UpdateExpression: "SET bal = bal + :a", ExpressionAttributeValues: map[string]attr.Value{":a": num(amt)}}},
		}})
		if apierr.Is(err, apierr.TransactionCanceled) {
			return nil // insufficient funds
		}
		return err
	}
	snapshot := func(s tenancy.Scope) (int64, error) {
		in := &wire.TransactGetItemsInput{}
		for i := 0; i < accounts; i++ {
			in.TransactItems = append(in.TransactItems, wire.TransactGetItem{Get: &wire.Get{TableName: "Accounts", Key: attr.Item{"pk": attr.Str(fmt.Sprint("acct", i))}}})
		}
		out, err := env.e.TransactGetItems(testCtx, s, in)
		if err != nil {
			return 0, err
		}
		var sum int64
		for _, r := range out.Responses {
			v, _ := r.Item["bal"].N.Int64()
			if v < 0 {
				return 0, fmt.Errorf("negative balance %d", v)
			}
			sum += v
		}
		return sum, nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := 0; w < 12; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			s := a.scope("TransactWriteItems")
			for i := 0; i < 40; i++ {
				from := r.Intn(accounts)
				to := (from + 1 + r.Intn(accounts-1)) % accounts
				if err := transfer(s, from, to, 1+r.Intn(60)); err != nil {
					errs <- err
					return
				}
			}
		}(int64(w))
	}
	for rd := 0; rd < 3; rd++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a.scope("TransactGetItems")
			for i := 0; i < 40; i++ {
				sum, err := snapshot(s)
				if err != nil {
					errs <- err
					return
				}
				if sum != accounts*start {
					errs <- fmt.Errorf("snapshot sum %d, want %d", sum, accounts*start)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum, err := snapshot(a.scope("TransactGetItems"))
	noErr(t, err)
	if sum != accounts*start {
		t.Fatalf("final sum %d", sum)
	}
}
