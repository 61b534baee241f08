// Package gateways tests several tenantdb gateways over one DynamoDB-API
// engine (a stand-in tenantdb reached only through the DynamoDB API):
// the control plane — tenants, credentials, the operator, audit, quotas
// and usage — lives in the engine, so what one gateway changes every
// other one sees within the stated bound (node.FleetStaleness), and races
// between gateways are decided by the engine's conditional writes.
package gateways
