// Package seeds proves that what the project's seed documents do runs on
// tenantdb unchanged: seed 002's CloudFormation table and its 17 access
// patterns on a seeded data set, and seed 004's AWS CLI commands (run
// verbatim) and the same flow through boto3, for one tenant and for two
// tenants sharing a table. Black-box, through the network only (see
// package harness; TENANTDB_BIN runs them against the built binary).
//
// testdata/seeds holds verbatim copies of the two seed documents, so that
// the tests check the template and commands against them in any clone.
// Seed 004 keeps its AGGREGATE items up to date from a change stream; in
// the AWS CLI test the server maintains them (an aggregate materialised as
// those items) and the test accepts only counts that match the tickets.
// The boto3 test still updates them as the application would.
package seeds
