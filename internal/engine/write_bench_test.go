package engine

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// benchEnv is openEnv for benchmarks.
func benchEnv(b *testing.B) (*testEnv, testActor) {
	env := openEnv(b)
	in := tableInput("Bench", false)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "g", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"}}}
	if _, err := env.e.CreateTable(testCtx, env.operator().scope("CreateTable"), in); err != nil {
		b.Fatal(err)
	}
	return env, env.tenant(tenancy.RoleApp)
}

func benchItem(i int64) attr.Item {
	return attr.Item{
		"pk":   attr.Str(fmt.Sprint("item-", i)),
		"g":    attr.Str(fmt.Sprint("g-", i%100)),
		"data": attr.Str(string(make([]byte, 1000))),
	}
}

func BenchmarkPutItem(b *testing.B) {
	env, a := benchEnv(b)
	s := a.scope("PutItem")
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := env.e.PutItem(testCtx, s, &wire.PutItemInput{TableName: "Bench", Item: benchItem(n.Add(1))}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGetItem(b *testing.B) {
	env, a := benchEnv(b)
	ps := a.scope("PutItem")
	for i := int64(0); i < 1000; i++ {
		if _, err := env.e.PutItem(testCtx, ps, &wire.PutItemInput{TableName: "Bench", Item: benchItem(i)}); err != nil {
			b.Fatal(err)
		}
	}
	s := a.scope("GetItem")
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := attr.Item{"pk": attr.Str(fmt.Sprint("item-", n.Add(1)%1000))}
			if _, err := env.e.GetItem(testCtx, s, &wire.GetItemInput{TableName: "Bench", Key: k}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
