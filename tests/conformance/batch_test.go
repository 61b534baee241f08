package conformance

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestBatchWriteAndGet(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	createTable(t, c, "Batch", keyDef{"pk", "S"}, nil, nil)
	var reqs []types.WriteRequest
	for i := 0; i < 25; i++ {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item("pk", S(fmt.Sprint(i)), "v", N(fmt.Sprint(i)))}})
	}
	out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"Batch": reqs}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.UnprocessedItems) != 0 {
		t.Errorf("UnprocessedItems: %v", out.UnprocessedItems)
	}

	// 26 requests are one too many.
	reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item("pk", S("x"))}})
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"Batch": reqs}})
	wantCode(t, err, "ValidationException")

	var keys []map[string]types.AttributeValue
	for i := 0; i < 30; i++ { // 5 of them do not exist
		keys = append(keys, item("pk", S(fmt.Sprint(i))))
	}
	got := 0
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"Batch": {Keys: keys}}}
	for len(in.RequestItems) > 0 {
		bg, err := c.BatchGetItem(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got += len(bg.Responses["Batch"])
		in.RequestItems = bg.UnprocessedKeys
	}
	if got != 25 {
		t.Errorf("BatchGetItem returned %d items, want 25", got)
	}
}

func TestTransactions(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	createTable(t, c, "Accounts", keyDef{"id", "S"}, nil, nil)
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("Accounts"), Item: item("id", S("a"), "bal", N("100"))}},
		{Put: &types.Put{TableName: aws.String("Accounts"), Item: item("id", S("b"), "bal", N("0"))}},
	}}); err != nil {
		t.Fatal(err)
	}
	transfer := func(amount string) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String("Accounts"), Key: item("id", S("a")),
				UpdateExpression: aws.String("SET bal = bal - :x"), ConditionExpression: aws.String("bal >= :x"),
				ExpressionAttributeValues:           item(":x", N(amount)),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			{Update: &types.Update{TableName: aws.String("Accounts"), Key: item("id", S("b")),
				UpdateExpression: aws.String("SET bal = bal + :x"), ExpressionAttributeValues: item(":x", N(amount))}},
		}})
		return err
	}
	if err := transfer("60"); err != nil {
		t.Fatal(err)
	}
	err := transfer("60")
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("overdraft: %v, want TransactionCanceledException", err)
	}
	if len(tce.CancellationReasons) != 2 || aws.ToString(tce.CancellationReasons[0].Code) != "ConditionalCheckFailed" ||
		aws.ToString(tce.CancellationReasons[1].Code) != "None" {
		t.Errorf("CancellationReasons = %+v", tce.CancellationReasons)
	} else if str(tce.CancellationReasons[0].Item["bal"]) != "40" {
		t.Errorf("reason item = %v, want the old item", tce.CancellationReasons[0].Item)
	}

	tg, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("Accounts"), Key: item("id", S("a"))}},
		{Get: &types.Get{TableName: aws.String("Accounts"), Key: item("id", S("b"))}},
		{Get: &types.Get{TableName: aws.String("Accounts"), Key: item("id", S("nobody"))}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.Responses) != 3 || str(tg.Responses[0].Item["bal"]) != "40" || str(tg.Responses[1].Item["bal"]) != "60" || tg.Responses[2].Item != nil {
		t.Errorf("TransactGetItems = %+v", tg.Responses)
	}
}

// TestConcurrentCounter: concurrent ADD updates of one counter end at the
// exact total.
func TestConcurrentCounter(t *testing.T) {
	_, c := start(t)
	createTable(t, c, "Counters", keyDef{"pk", "S"}, nil, nil)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := c.UpdateItem(ctxT(t), &dynamodb.UpdateItemInput{TableName: aws.String("Counters"), Key: item("pk", S("k")),
					UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: item(":one", N("1"))})
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
		t.Fatal(err)
	}
	out, err := c.GetItem(ctxT(t), &dynamodb.GetItemInput{TableName: aws.String("Counters"), Key: item("pk", S("k")), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got := str(out.Item["n"]); got != fmt.Sprint(workers*each) {
		t.Errorf("counter = %s, want %d", got, workers*each)
	}
}
