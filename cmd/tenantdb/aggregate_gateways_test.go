package main

import (
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestAggregateCLIGateways runs TestAggregateCLI once more over two
// gateways sharing one stand-in engine, behind a front that alternates
// requests between them: `tenantdb aggregate create/show/rebuild/list/
// delete` through either gateway, the groups folded from the engine
// table's stream by the gateway holding the aggregate's lease, the
// materialised items written through the remote backend.
func TestAggregateCLIGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two gateways over a stand-in engine")
	}
	harness.RemoteGatewaysFor(t, 2)
	t.Run("CLI", TestAggregateCLI)
}
