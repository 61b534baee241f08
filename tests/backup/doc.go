// Package backup proves operator backups end to end against the tenantdb
// binary: a server under a concurrent writer, `tenantdb backup create`
// (full, then incremental) through the admin API, `backup restore` into a
// new data directory, a server started on it answering aws-sdk-go-v2, a
// corrupted byte refused, and kill -9 during a backup.
package backup
