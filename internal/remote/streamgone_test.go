package remote_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestDeletedTableStreamsSwept: the stream of a deleted table is kept
// for 24 hours after the deletion (listed, described), then no longer
// shown, and the sweep deletes what the engine kept of it.
func TestDeletedTableStreamsSwept(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a gateway over the stand-in engine")
	}
	engine := harness.Start(t, harness.Options{})
	db, sc := engine.Client(engine.Default), engine.Streams(engine.Default)
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	gw, err := remote.Open(ctx, remote.Options{Client: db, Streams: sc, StreamSecret: make([]byte, 32),
		TablePrefix: "swept-", Region: harness.Region, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	a := tenancy.SystemScope(tenancy.NewTenantID(), "test")
	out, err := gw.CreateTable(ctx, a, &wire.CreateTableInput{TableName: "tbl",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		KeySchema:            []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		BillingMode:          "PAY_PER_REQUEST",
		StreamSpecification:  &wire.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: "KEYS_ONLY"}})
	if err != nil {
		t.Fatal(err)
	}
	arn := out.TableDescription.LatestStreamArn
	if _, err := gw.PutItem(ctx, a, &wire.PutItemInput{TableName: "tbl", Item: attr.Item{"pk": attr.Str("k")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.DeleteTable(ctx, a, &wire.DeleteTableInput{TableName: "tbl"}); err != nil {
		t.Fatal(err)
	}
	listed := func() int {
		t.Helper()
		ls, err := gw.ListStreams(ctx, a, &wire.ListStreamsInput{})
		if err != nil {
			t.Fatal(err)
		}
		return len(ls.Streams)
	}
	kept := func() []string {
		t.Helper()
		var found []string
		in := &dynamodb.ScanInput{TableName: aws.String("swept-tenantdb"), ConsistentRead: aws.Bool(true)}
		for {
			res, err := db.Scan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range res.Items {
				if pk, ok := it["tenantdb:pk"].(*types.AttributeValueMemberS); ok && (pk.Value == "meta#gone" || strings.HasPrefix(pk.Value, "meta#stream#")) {
					found = append(found, pk.Value)
				}
			}
			if len(res.LastEvaluatedKey) == 0 {
				return found
			}
			in.ExclusiveStartKey = res.LastEvaluatedKey
		}
	}
	if got := kept(); len(got) != 2 {
		t.Fatalf("the engine keeps %q of the deleted table's stream, want its record and its entry", got)
	}
	advance(23 * time.Hour)
	if n := listed(); n != 1 {
		t.Errorf("23 h after the deletion: %d streams listed, want 1", n)
	}
	if n, err := remote.SweepGoneForTest(gw, clock()); n != 0 || err != nil {
		t.Errorf("the sweep at 23 h forgot %d (%v)", n, err)
	}
	advance(time.Hour + time.Minute)
	if n := listed(); n != 0 {
		t.Errorf("24 h after the deletion: %d streams listed, want 0", n)
	}
	if _, err := gw.DescribeStream(ctx, a, &wire.DescribeStreamInput{StreamArn: arn}); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("DescribeStream 24 h after the deletion: %v, want ResourceNotFound", err)
	}
	if n, err := remote.SweepGoneForTest(gw, clock()); n != 1 || err != nil {
		t.Errorf("the sweep at 24 h forgot %d (%v), want 1", n, err)
	}
	if got := kept(); len(got) != 0 {
		t.Errorf("after the sweep the engine still keeps %q", got)
	}
}
