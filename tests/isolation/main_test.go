package isolation

import (
	"os"
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// The suites of this package run in parallel, each on servers of its own;
// those over gateways spend much of their time waiting (a tenant's
// deletion waits out the write fence, node.FleetWriteFence; a narrowing
// change the fleet's settle), so they overlap even on two cores
// (harness.WaitingParallel).
func TestMain(m *testing.M) {
	harness.WaitingParallel(8)
	os.Exit(m.Run())
}
