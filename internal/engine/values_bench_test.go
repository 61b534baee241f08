package engine

import (
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// BenchmarkValues measures what sealing adds to storing one item value
// (1 KB, as tests/bench's items): the attr encoding alone (what the engine
// did before encryption) against values.encode/decode, in one run:
//
//	go test ./internal/engine -run '^$' -bench Values -count 6
func BenchmarkValues(b *testing.B) {
	item := attr.Item{"pk": attr.Value{Type: attr.S, S: "p00000001"}, "sk": attr.Value{Type: attr.S, S: "s01"},
		"data": attr.Value{Type: attr.S, S: strings.Repeat("x", 1000)}}
	v := &values{keys: testKeys(b, "")}
	pk := keyspace.Items(keyspace.Namespace(tenancy.NewTenantID(), "live"), 42)
	pk = append(pk, "\x00\x00\x00\x01p00000001\x00s01"...)
	sealed, err := v.encode(pk, item)
	if err != nil {
		b.Fatal(err)
	}
	plain := attr.EncodeItem(item)
	b.Run("encode/plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = attr.EncodeItem(item)
		}
	})
	b.Run("encode/sealed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.encode(pk, item); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := attr.DecodeItem(plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/sealed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.decode(pk, sealed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
