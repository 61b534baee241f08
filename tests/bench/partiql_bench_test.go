package bench

import (
	"fmt"
	"testing"

	"github.com/tenantdb/tenantdb/internal/node"
)

// BenchmarkPartiQLGet compares an ExecuteStatement SELECT that names an
// item's full key (translated onto GetItem) with the GetItem it becomes,
// on one server, for the same items: the price of parsing and translating
// a statement. Read cpu-µs/op of the two sub-benchmarks as a ratio
// (target ≤ 1.2x).
func BenchmarkPartiQLGet(b *testing.B) {
	t := startTenantDB(b, node.Options{})
	b.Run("GetItem", func(b *testing.B) {
		run(b, t, "GetItem", "GetItem", func(i int) string {
			return `{"TableName":"` + table + `","Key":` + key(spread(i, preload)) + `}`
		})
	})
	b.Run("ExecuteStatement", func(b *testing.B) {
		run(b, t, "ExecuteStatement", "ExecuteStatement", func(i int) string {
			n := spread(i, preload)
			return `{"Statement":"SELECT * FROM \"` + table + `\" WHERE pk = ? AND sk = ?",` +
				fmt.Sprintf(`"Parameters":[{"S":"p%08d"},{"S":"s%02d"}]}`, n/20, n%20)
		})
	})
}
