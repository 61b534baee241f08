// Package fleet holds black-box tests of several tenantdb gateways over
// one DynamoDB-API engine (issue 14): capacity enforced across gateways,
// counters and transactions that stay exact with clients spread over
// gateways, and a gateway killed with SIGKILL under load losing nothing
// it acknowledged. The engine is a stand-in tenantdb (package harness,
// StartCluster), reached by the gateways only through the DynamoDB API.
package fleet
