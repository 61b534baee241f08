package isolation

import (
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestIsolationGateways runs the suite's attacks once more over two
// gateways sharing one stand-in engine, behind a front that sends each
// request to the other gateway than the last (TENANTDB_REMOTE_GATEWAYS=2
// does so for the whole package): a key revoked, a tenant suspended or
// deleted, a quota changed or a table dropped through one gateway is
// refused or gone on the other when the change returns, a tenant created
// again with a deleted tenant's id finds nothing of it cached on either,
// and denied attempts are coalesced fleet-wide. What the remote backend
// does not serve skips there, saying so.
func TestIsolationGateways(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the suite over two gateways")
	}
	harness.RemoteGatewaysFor(t, 2)
	t.Run("Isolation", TestIsolation)
	t.Run("TTLIsolation", TestTTLIsolation)
	t.Run("ShardIsolation", TestShardIsolation)
	t.Run("OperatorBackupRefusesTenants", TestOperatorBackupRefusesTenants)
	t.Run("StreamsIsolation", TestStreamsIsolation)
	t.Run("DeletedTableStreamsIsolation", TestDeletedTableStreamsIsolation)
	t.Run("BackupIsolation", TestBackupIsolation)
	t.Run("WebhookIsolation", TestWebhookIsolation)
	t.Run("RestoreIsolation", TestRestoreIsolation)
	t.Run("TransfersIsolation", TestTransfersIsolation)
	t.Run("ConsoleIsolation", TestConsoleIsolation)
	t.Run("WebhookCountIsolation", TestWebhookCountIsolation)
}
