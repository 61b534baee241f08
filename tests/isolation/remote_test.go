package isolation

import (
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRemote runs every attack once more against a gateway over the
// remote backend, whose engine is a second in-process tenantdb reached
// only through the DynamoDB API. What that backend does not serve yet
// (deleting an index with UpdateTable) skips there, saying so.
func TestRemote(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the remote backend's run of the suite")
	}
	harness.RemoteFor(t, "")
	t.Run("Isolation", TestIsolation)
	t.Run("TTLIsolation", TestTTLIsolation)
	t.Run("TTLChangeIsolation", TestTTLChangeIsolation)
	t.Run("PhysicalNames", TestPhysicalNames)
}
