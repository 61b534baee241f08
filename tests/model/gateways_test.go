package model

import (
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestModelGateways runs the model over two gateways sharing one stand-in
// engine, each request going to the other gateway than the last (without
// streams, which the remote backend does not serve yet).
func TestModelGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the model over two gateways")
	}
	harness.RemoteGatewaysFor(t, 2)
	t.Run("Model", TestModel)
}
