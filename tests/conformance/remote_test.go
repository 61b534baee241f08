package conformance

import (
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRemote runs the suite's SDK tests once more against a gateway over
// the remote backend, whose engine is a second in-process tenantdb
// reached only through the DynamoDB API (the AWS CLI and boto3 tests run
// over it with TENANTDB_REMOTE=1). Every test of the suite passes there.
func TestRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run of the suite")
	}
	harness.RemoteFor(t, "")
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
		{"AttributeNameLimits", TestAttributeNameLimits}, {"KeyNameLimits", TestKeyNameLimits},
		{"NestingBoundary", TestNestingBoundary}, {"ExpressionLength", TestExpressionLength},
		{"IndexKeySizeLimits", TestIndexKeySizeLimits}, {"TransactionSizeLimit", TestTransactionSizeLimit},
		{"NumberMessages", TestNumberMessages}, {"UnknownAttributeValueType", TestUnknownAttributeValueType},
		{"LegacyAndExpressionParameters", TestLegacyAndExpressionParameters}, {"UpdateItemOnMissingItem", TestUpdateItemOnMissingItem},
		{"MemberTypeWording", TestMemberTypeWording},
		{"SiloTier", TestSiloTier}, {"PointInTimeSDK", TestPointInTimeSDK}, {"BackupsSDK", TestBackupsSDK},
	} {
		t.Run(c.name, c.fn)
	}
}

// TestDynalite runs the suite's SDK tests that need no transactions
// against a gateway over dynalite (a DynamoDB-API server from npm, which
// has no transactions): the remote backend relies only on documented
// DynamoDB semantics. It skips, saying why, without node or dynalite.
func TestDynalite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the remote backend's run of the suite")
	}
	harness.RemoteFor(t, harness.StartDynalite(t))
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"BadInput", TestBadInput}, {"BatchWriteAndGet", TestBatchWriteAndGet}, {"ItemRoundTripAllTypes", TestItemRoundTripAllTypes},
		{"UpdateDeleteConditional", TestUpdateDeleteConditional}, {"ValidationErrors", TestValidationErrors}, {"Query", TestQuery},
		{"ScanSegments", TestScanSegments}, {"TableLifecycle", TestTableLifecycle}, {"ListTablesPaged", TestListTablesPaged},
		{"DescribeEndpointsAndLimits", TestDescribeEndpointsAndLimits}, {"ConcurrentCounter", TestConcurrentCounter},
	} {
		t.Run(c.name, c.fn)
	}
}
