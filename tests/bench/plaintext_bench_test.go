//go:build benchbypass

package bench

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/node"
)

// BenchmarkServerPlaintext runs the put, get and query workloads with the
// tenants' values stored unencrypted (node's benchmark-only
// BenchPlaintext), the baseline of what encryption at rest costs against
// BenchmarkServer's same workloads. It exists only with the benchbypass
// tag:
//
//	go test -tags benchbypass -run '^$' -bench 'Server(Plaintext)?/(PutItem|GetItem|Query20)$' ./tests/bench/
func BenchmarkServerPlaintext(b *testing.B) {
	var o node.Options
	o.BenchPlaintext = true
	t := startTenantDB(b, o)
	for _, w := range workloads[:3] { // PutItem, GetItem, Query20
		b.Run(w.name, func(b *testing.B) { run(b, t, w.name, w.op, w.body) })
	}
}
