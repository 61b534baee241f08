package remote

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// BenchmarkStorageMetering measures the gateway CPU that storage
// metering adds to an UpdateItem (the client's update applied to the old
// item, both items sized, the delta added) against the baseline of the
// rewrite every UpdateItem already pays (place.update), in one run, on a
// 1 KB item.
//
//	go test ./internal/remote -run '^$' -bench StorageMetering -benchtime 20000x -count 5
func BenchmarkStorageMetering(b *testing.B) {
	t := &schema.Table{ID: 7, Name: "tbl", Hash: schema.KeyAttr{Name: "pk", Type: attr.S}}
	s := tenancy.SystemScope(tenancy.NewTenantID(), "bench")
	tg := resolve.Target{Table: t, Namespace: resolve.Namespace(s), Scope: s}
	p := place{tg: tg}
	bk := &Backend{meter: newStorageMeter()}
	key := attr.Item{"pk": attr.Str("k1")}
	old := attr.Item{"pk": attr.Str("k1"), "v": attr.Str(strings.Repeat("x", 1000)), "n": attr.Num(attr.MustNumber("41"))}
	in := &wire.UpdateItemInput{TableName: "tbl", Key: key, UpdateExpression: aws.String("SET w = :w ADD n :one"),
		ExpressionAttributeValues: map[string]attr.Value{":w": attr.Str("new"), ":one": attr.Num(attr.MustNumber("1"))}}
	// NB: interleaved in one loop, so that both see the same load of a
	// shared machine; each is timed on its own.
	var rewrite, metering time.Duration
	for range b.N {
		start := time.Now()
		if _, _, _, err := p.update(key, *in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := bk.meterUpdate(context.Background(), p, nil, in, old); err != nil {
			b.Fatal(err)
		}
		rewrite += mid.Sub(start)
		metering += time.Since(mid)
	}
	b.ReportMetric(float64(rewrite.Nanoseconds())/float64(b.N), "baseline-rewrite-ns/op")
	b.ReportMetric(float64(metering.Nanoseconds())/float64(b.N), "metering-ns/op")
	b.ReportMetric(float64(metering)/float64(rewrite), "metering/baseline")
}
