package conformance

import (
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// fleetBound is how long a control change (a quota, a key) or a metered
// request may take to be seen through every gateway of a fleet: the
// gateways' staleness bound (2 × node.FleetStaleness, which also covers
// each gateway's usage flush every second), with slack for scheduling on
// a loaded machine.
const fleetBound = 2*node.FleetStaleness + 3*time.Second

// settled fails t with what check reports ("" when all is as it should
// be): on the embedded server at once — a change is seen by the next
// request there — and on a gateway over a remote engine once the fleet's
// bound has passed without check reporting nothing.
func settled(t *testing.T, srv *harness.Server, check func() string) {
	t.Helper()
	deadline := time.Now().Add(fleetBound)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if !srv.Remote || time.Now().After(deadline) {
			t.Error(msg)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
