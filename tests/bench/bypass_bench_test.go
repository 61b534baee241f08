//go:build benchbypass

package bench

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/node"
)

// BenchmarkServerBypass runs the workloads with tenancy checks bypassed
// (issue 3's benchmark-only mode, as `serve --bench-bypass-tenancy`): no
// signature verification after a key's first request, no guard checks.
// It exists only with the benchbypass tag:
//
//	go test -tags benchbypass -run '^$' -bench 'Server' ./tests/bench/
func BenchmarkServerBypass(b *testing.B) {
	var o node.Options
	o.BenchBypassTenancy = true
	t := startTenantDB(b, o)
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) { run(b, t, w.name, w.op, w.body) })
	}
}
