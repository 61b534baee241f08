package remote_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestTTLExpiry drives TTL over the stand-in engine, whose own TTL
// sweeper (every 10 s) deletes what the gateway's copies say: items of a
// table with TTL expire whichever way their TTL attribute was written
// (before TTL was enabled, PutItem, UpdateItem SET and ADD, a
// transaction, BatchWriteItem), items whose attribute was removed or is
// not a number do not, nor do another tenant's items under the same keys
// in a same-named table without TTL; turning TTL off removes the copies
// (DISABLING until done), so an item due after that stays.
func TestTTLExpiry(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t, harness.Options{Remote: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := srv.Client(srv.Default)
	b := srv.Client(srv.NewTenant(t, "ttl-other", "admin"))
	createTable(t, a, "ttltab")
	createTable(t, b, "ttltab")
	past := n(strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10))
	future := n(strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	key := func(k string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(k), "sk": n("1")}
	}
	put := func(c *dynamodb.Client, k string, exp types.AttributeValue) {
		t.Helper()
		it := key(k)
		if exp != nil {
			it["exp"] = exp
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ttltab"), Item: it}); err != nil {
			t.Fatalf("PutItem %s: %v", k, err)
		}
	}
	update := func(k, upd string, vals map[string]types.AttributeValue) {
		t.Helper()
		in := &dynamodb.UpdateItemInput{TableName: aws.String("ttltab"), Key: key(k), UpdateExpression: aws.String(upd), ExpressionAttributeValues: vals}
		if strings.Contains(upd, "#e") {
			in.ExpressionAttributeNames = map[string]string{"#e": "exp"}
		}
		if _, err := a.UpdateItem(ctx, in); err != nil {
			t.Fatalf("UpdateItem %s %s: %v", k, upd, err)
		}
	}
	exists := func(c *dynamodb.Client, k string) bool {
		t.Helper()
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ttltab"), Key: key(k), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("GetItem %s: %v", k, err)
		}
		return out.Item != nil
	}
	ttl := func(on bool) {
		t.Helper()
		if _, err := a.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("ttltab"),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(on)}}); err != nil {
			t.Fatalf("UpdateTimeToLive %v: %v", on, err)
		}
	}
	status := func() string {
		t.Helper()
		out, err := a.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("ttltab")})
		if err != nil {
			t.Fatal(err)
		}
		return string(out.TimeToLiveDescription.TimeToLiveStatus)
	}

	// Written before TTL is enabled: the job gives them their copies.
	put(a, "before", past)
	put(a, "before-str", s("yesterday"))
	ttl(true)
	if st := status(); st != "ENABLED" {
		t.Errorf("DescribeTimeToLive after enabling: %s, want ENABLED", st)
	}
	put(a, "put", past)
	put(a, "future", future)
	put(a, "none", nil)
	put(a, "str", s("1"))
	update("set", "SET #e = :p", map[string]types.AttributeValue{":p": past})
	update("add", "ADD #e :p", map[string]types.AttributeValue{":p": past})
	put(a, "arith", future)
	update("arith", "SET #e = #e - :d", map[string]types.AttributeValue{":d": n("7200")})
	put(a, "removed", past)
	update("removed", "REMOVE #e", nil)
	put(a, "retyped", past)
	update("retyped", "SET #e = :s", map[string]types.AttributeValue{":s": s("later")})
	put(a, "other-attr", past)
	update("other-attr", "SET v = :v", map[string]types.AttributeValue{":v": s("x")}) // the copy stays
	if _, err := a.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String("ttltab"), Key: key("tx"), UpdateExpression: aws.String("SET #e = :p"),
			ExpressionAttributeNames: map[string]string{"#e": "exp"}, ExpressionAttributeValues: map[string]types.AttributeValue{":p": past}}},
		{Put: &types.Put{TableName: aws.String("ttltab"), Item: map[string]types.AttributeValue{"pk": s("txput"), "sk": n("1"), "exp": past}}},
	}}); err != nil {
		t.Fatal(err)
	}
	bi := key("batch")
	bi["exp"] = past
	if _, err := a.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"ttltab": {{PutRequest: &types.PutRequest{Item: bi}}}}}); err != nil {
		t.Fatal(err)
	}
	// Tenant B: the same keys and attribute, TTL never enabled.
	for _, k := range []string{"before", "put", "set", "tx", "batch"} {
		put(b, k, past)
	}

	gone := []string{"before", "put", "set", "add", "arith", "other-attr", "tx", "txput", "batch"}
	stay := []string{"before-str", "future", "none", "str", "removed", "retyped"}
	deadline := time.Now().Add(90 * time.Second)
	for {
		var left []string
		for _, k := range gone {
			if exists(a, k) {
				left = append(left, k)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not expired within 90 s: %v", left)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, k := range stay {
		if !exists(a, k) {
			t.Errorf("%s was deleted; its TTL attribute was no number (or removed)", k)
		}
	}
	for _, k := range []string{"before", "put", "set", "tx", "batch"} {
		if !exists(b, k) {
			t.Errorf("LEAK: tenant B's %s expired by A's TTL setting on A's table of the same name", k)
		}
	}

	// Turning TTL off removes the copies: an item due after that stays.
	put(a, "due", n(strconv.FormatInt(time.Now().Add(8*time.Second).Unix(), 10)))
	ttl(false)
	if st := status(); st != "DISABLING" && st != "DISABLED" {
		t.Errorf("DescribeTimeToLive after disabling: %s", st)
	}
	for deadline := time.Now().Add(60 * time.Second); status() != "DISABLED"; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still DISABLING after 60 s")
		}
	}
	put(a, "after", past)
	time.Sleep(25 * time.Second) // the due time and two sweeps of the engine
	for _, k := range []string{"due", "after", "future"} {
		if !exists(a, k) {
			t.Errorf("%s expired after TTL was disabled", k)
		}
	}
}

// TestReservedUpdatePaths: an update may not name the gateway's physical
// attributes (an index slot's key would put the item into another
// collection's index; the TTL copy would expire it by another attribute).
func TestReservedUpdatePaths(t *testing.T) {
	srv := harness.Start(t, harness.Options{Remote: true})
	ctx := context.Background()
	a := srv.Client(srv.Default)
	createTable(t, a, "res")
	for _, name := range []string{"tenantdb:x1p", "tenantdb:ttl", "tenantdb:pk", "tenantdb:v"} {
		_, err := a.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("res"),
			Key:                       map[string]types.AttributeValue{"pk": s("k"), "sk": n("1")},
			UpdateExpression:          aws.String("SET #n = :v"),
			ExpressionAttributeNames:  map[string]string{"#n": name},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("x")}})
		if err == nil || !strings.Contains(err.Error(), "ValidationException") || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("SET %s: %v, want a ValidationException (reserved)", name, err)
		}
	}
}
