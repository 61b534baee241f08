package seeds

import (
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestSeedsGateways runs seed 002's and seed 004's SDK tests over two
// gateways sharing one stand-in engine, each request going to the other
// gateway than the last.
func TestSeedsGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the seeds over two gateways")
	}
	harness.RemoteGatewaysFor(t, 2)
	t.Run("Seed002", TestSeed002)
	t.Run("Seed004PartiQL", TestSeed004PartiQL)
}
