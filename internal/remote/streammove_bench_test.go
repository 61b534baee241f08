package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/remote"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// BenchmarkMove measures what marking a move between shards costs
// (streammove.go), over the stand-in engine in one run: each op reads one
// item (~250 bytes) in shard 0 of 1 and moves it to its shard of 4, as
// the migrator does. "marked" is the gateway's move (the mark, then the
// transaction); "unmarked" is the transaction alone, the move before the
// marks; "put" is a PutItem of such an item through the gateway, for
// scale.
//
//	go test ./internal/remote -run '^$' -bench BenchmarkMove -benchtime 300x -count 3
func BenchmarkMove(b *testing.B) {
	engine := harness.Start(b, harness.Options{})
	db := engine.Client(engine.Default)
	ctx := context.Background()
	round := 0
	for _, v := range []string{"marked", "unmarked", "put"} {
		b.Run(v, func(b *testing.B) {
			round++ // NB: each run on an engine table of its own
			gw, err := remote.Open(ctx, remote.Options{Client: db, TablePrefix: fmt.Sprintf("mvbench-%s-%d-", v, round), Region: harness.Region})
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			s := tenancy.SystemScope(tenancy.NewTenantID(), "bench")
			if _, err := gw.CreateTable(ctx, s, &wire.CreateTableInput{TableName: "tbl",
				AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
				KeySchema:            []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
				BillingMode:          "PAY_PER_REQUEST"}); err != nil {
				b.Fatal(err)
			}
			pad := attr.Str(strings.Repeat("x", 200))
			item := func(i int) attr.Item { return attr.Item{"pk": attr.Str(fmt.Sprintf("k%06d", i)), "v": pad} }
			if v == "put" {
				b.ResetTimer()
				for i := range b.N {
					if _, err := gw.PutItem(ctx, s, &wire.PutItemInput{TableName: "tbl", Item: item(i)}); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			var keys []attr.Item
			for i := 0; len(keys) < b.N; i++ {
				if _, err := gw.PutItem(ctx, s, &wire.PutItemInput{TableName: "tbl", Item: item(i)}); err != nil {
					b.Fatal(err)
				}
				keys = append(keys, attr.Item{"pk": item(i)["pk"]})
			}
			b.ResetTimer()
			moved := 0
			for _, k := range keys {
				err := remote.MoveForTest(ctx, gw, s, "tbl", k, v == "marked")
				if errors.Is(err, remote.ErrNoMoveForTest) {
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				moved++
			}
			b.ReportMetric(float64(moved)/float64(b.N), "moved/op")
		})
	}
}
