// Package atrest checks encryption at rest against the real tenantdb
// binary and its data directory: that no file holds a tenant's non-key
// values in plaintext (WAL, sstables, silo stores, change records), that
// deleting a tenant destroys its data key so even an earlier copy of the
// store cannot be read for it, that a tenant key rotation survives kill
// -9 and resumes, and that a server key rotation survives a restart.
package atrest
