package conformance

import (
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRemoteGateways runs TestRemote's tests once more over two gateways
// sharing one stand-in engine, behind a front that sends each request to
// the other gateway than the last (TENANTDB_REMOTE_GATEWAYS=2 does so for
// the whole suite): a table created, changed or dropped through one is
// used through the other at once, and a tenant and its keys are the
// same on both.
func TestRemoteGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run of the suite over two gateways")
	}
	harness.RemoteGatewaysFor(t, 2)
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"BadInput", TestBadInput}, {"BatchWriteAndGet", TestBatchWriteAndGet}, {"Transactions", TestTransactions},
		{"ConcurrentCounter", TestConcurrentCounter}, {"Golden", TestGolden}, {"ItemRoundTripAllTypes", TestItemRoundTripAllTypes},
		{"UpdateDeleteConditional", TestUpdateDeleteConditional}, {"ValidationErrors", TestValidationErrors}, {"Query", TestQuery},
		{"ScanSegments", TestScanSegments}, {"TableLifecycle", TestTableLifecycle}, {"ListTablesPaged", TestListTablesPaged},
		{"DescribeEndpointsAndLimits", TestDescribeEndpointsAndLimits}, {"TagRules", TestTagRules},
		{"PartiQLStatements", TestPartiQLStatements}, {"PartiQLTransaction", TestPartiQLTransaction},
		{"PartiQLMetering", TestPartiQLMetering}, {"DescribeLimitsIsTheQuota", TestDescribeLimitsIsTheQuota},
		{"UpdateItemOnMissingItem", TestUpdateItemOnMissingItem}, {"SiloTier", TestSiloTier},
		{"BackupsSDK", TestBackupsSDK}, {"PointInTimeSDK", TestPointInTimeSDK},
	} {
		t.Run(c.name, c.fn)
	}
}

// TestRemoteGatewaysStreams runs the Streams tests over two gateways
// sharing one stand-in engine (requests alternating between them): the
// gateways serve tenants' streams from the engine table's own stream
// (internal/remote/DESIGN.md, "Streams"). The AWS CLI's reads run over
// a gateway with TENANTDB_REMOTE=1. Over dynalite, which has no Streams,
// a stream is refused (TestDynaliteRefusesStreams).
func TestRemoteGatewaysStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run of the suite over two gateways")
	}
	harness.RemoteGatewaysFor(t, 2)
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"StreamsSDK", TestStreamsSDK}, {"StreamsIteratorsAndLifecycle", TestStreamsIteratorsAndLifecycle},
		{"StreamsFullPages", TestStreamsFullPages},
		{"StreamsDisabledShardsEnd", TestStreamsDisabledShardsEnd}, {"StreamsOfDeletedTable", TestStreamsOfDeletedTable},
		{"Boto3Streams", TestBoto3Streams},
	} {
		t.Run(c.name, c.fn)
	}
}
