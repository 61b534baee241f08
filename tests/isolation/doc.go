// Package isolation attacks a running tenantdb from one tenant's
// credentials and checks that nothing of another tenant — or of another
// environment of the same tenant — can be read, written, counted or
// inferred, and that every refused attempt lands in the attacker's audit
// log.
//
// The suites are black-box: they talk to a server started by package
// harness (in-process, or the TENANTDB_BIN executable) only through the
// DynamoDB API and the admin API. Every response the attacking clients
// receive is captured byte for byte and searched for the victims'
// secret values and tenant ids.
package isolation
