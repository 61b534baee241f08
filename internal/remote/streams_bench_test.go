package remote_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// BenchmarkStreamRead measures what a tenant's stream costs on the remote
// backend, over the stand-in engine in one run: another tenant writes
// `noise` items to its collection of a table with a stream, then tenant A
// writes 500 to its own; A then reads its stream through the gateway
// (GetRecords, Limit 1000) until it has its 500 records, filtering the
// other tenant's on the way. The baseline reads the same engine shard
// directly with the engine's Streams client (what A's read filters).
// Reported: A's GetRecords calls and time, against the direct read's.
//
//	go test ./internal/remote -run '^$' -bench StreamRead -benchtime 1x
func BenchmarkStreamRead(b *testing.B) {
	for _, noise := range []int{0, 2000, 8000} {
		b.Run(fmt.Sprintf("noise=%d", noise), func(b *testing.B) {
			engine := harness.Start(b, harness.Options{})
			db, sc := engine.Client(engine.Default), engine.Streams(engine.Default)
			ctx := context.Background()
			for i := range b.N {
				gw, err := remote.Open(ctx, remote.Options{Client: db, Streams: sc, StreamSecret: make([]byte, 32),
					TablePrefix: fmt.Sprintf("sbench%d-", i), Region: harness.Region})
				if err != nil {
					b.Fatal(err)
				}
				a, o := tenancy.SystemScope(tenancy.NewTenantID(), "test"), tenancy.SystemScope(tenancy.NewTenantID(), "test")
				// A shared table (the scopes have the operator's role): each
				// tenant writes its own collection of it.
				var arn string
				for _, s := range []tenancy.Scope{a} {
					out, err := gw.CreateTable(ctx, s, &wire.CreateTableInput{TableName: "tbl",
						AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
						KeySchema:            []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
						BillingMode:          "PAY_PER_REQUEST",
						StreamSpecification:  &wire.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: "NEW_AND_OLD_IMAGES"}})
					if err != nil {
						b.Fatal(err)
					}
					if s == a {
						arn = out.TableDescription.LatestStreamArn
					}
				}
				// The other tenant's writes first: A's reader filters them all.
				for k := range noise {
					if _, err := gw.PutItem(ctx, o, &wire.PutItemInput{TableName: "tbl", Item: attr.Item{"pk": attr.Str(fmt.Sprintf("o%d", k)), "v": attr.Str("x")}}); err != nil {
						b.Fatal(err)
					}
				}
				for k := range 500 {
					if _, err := gw.PutItem(ctx, a, &wire.PutItemInput{TableName: "tbl", Item: attr.Item{"pk": attr.Str(fmt.Sprintf("a%d", k)), "v": attr.Str("x")}}); err != nil {
						b.Fatal(err)
					}
				}
				d, err := gw.DescribeStream(ctx, a, &wire.DescribeStreamInput{StreamArn: arn})
				if err != nil {
					b.Fatal(err)
				}
				shard := d.StreamDescription.Shards[len(d.StreamDescription.Shards)-1].ShardId
				start := time.Now()
				it, err := gw.GetShardIterator(ctx, a, &wire.GetShardIteratorInput{StreamArn: arn, ShardId: shard, ShardIteratorType: "TRIM_HORIZON"})
				if err != nil {
					b.Fatal(err)
				}
				calls, got, iter := 0, 0, it.ShardIterator
				for {
					r, err := gw.GetRecords(ctx, a, &wire.GetRecordsInput{ShardIterator: iter})
					if err != nil {
						b.Fatal(err)
					}
					calls++
					got += len(r.Records)
					if r.NextShardIterator == nil || got >= 500 {
						break
					}
					iter = *r.NextShardIterator
				}
				viaGW := time.Since(start)
				if got != 500 {
					b.Fatalf("A read %d records, want 500", got)
				}
				// Baseline: the engine shard read directly, to its end.
				ed, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(engineStreamARN(b, gw))})
				if err != nil {
					b.Fatal(err)
				}
				start = time.Now()
				eit, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: ed.StreamDescription.StreamArn,
					ShardId: ed.StreamDescription.Shards[len(ed.StreamDescription.Shards)-1].ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
				if err != nil {
					b.Fatal(err)
				}
				engineRecs, ecalls, eiter := 0, 0, eit.ShardIterator
				for eiter != nil {
					r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: eiter, Limit: aws.Int32(1000)})
					if err != nil {
						b.Fatal(err)
					}
					ecalls++
					engineRecs += len(r.Records)
					if len(r.Records) == 0 {
						break
					}
					eiter = r.NextShardIterator
				}
				direct := time.Since(start)
				b.ReportMetric(float64(calls), "gw-calls")
				b.ReportMetric(float64(viaGW.Milliseconds()), "gw-ms")
				b.ReportMetric(float64(engineRecs), "engine-records")
				b.ReportMetric(float64(ecalls), "direct-calls")
				b.ReportMetric(float64(direct.Milliseconds()), "direct-ms")
				_ = gw.Close()
			}
		})
	}
}

// engineStreamARN returns the ARN of the engine table's stream.
func engineStreamARN(b *testing.B, gw *remote.Backend) string {
	b.Helper()
	return remote.EngineStreamARNForTest(gw)
}
