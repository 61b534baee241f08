package conformance

import (
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestConflictingTransactionsSerialize: transactions and single-item
// writes that touch the same items at the same time all succeed, in some
// serial order, never with TransactionConflictException. This is
// tenantdb's decision (internal/engine/DESIGN.md): DynamoDB may cancel an
// overlapping transaction with reason TransactionConflict, but waiting
// cannot be told apart from DynamoDB running them one after the other,
// because no request can hold an item locked beyond its own commit.
func TestConflictingTransactionsSerialize(t *testing.T) {
	_, c := start(t)
	createTable(t, c, "Txs", keyDef{"pk", "S"}, nil, nil)
	tbl := aws.String("Txs")
	for _, pk := range []string{"a", "b"} {
		_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: tbl, Item: item("pk", S(pk), "n", N("0"))})
		ok(t, err)
	}
	add := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: tbl, Key: item("pk", S(pk)),
			UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": N("1")}}}
	}
	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				// Both items in one transaction, while others do the same
				// and single writes hit one of them.
				_, err := c.TransactWriteItems(ctxT(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{add("a"), add("b")}})
				errs <- err
				_, err = c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: tbl, Key: item("pk", S("a")),
					UpdateExpression: aws.String("ADD single :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": N("1")}})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a conflicting write failed: %v (code %s)", err, code(err))
		}
	}
	got := map[string]string{}
	for _, pk := range []string{"a", "b"} {
		out, err := c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: tbl, Key: item("pk", S(pk)), ConsistentRead: aws.Bool(true)})
		ok(t, err)
		got[pk] = str(out.Item["n"])
		if pk == "a" && str(out.Item["single"]) != "160" {
			t.Errorf("single writes on a: %s, want 160", str(out.Item["single"]))
		}
	}
	if got["a"] != "160" || got["b"] != "160" {
		t.Errorf("after %d transactions: a=%s b=%s, want 160 each", workers*rounds, got["a"], got["b"])
	}
}
