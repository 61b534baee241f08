package keyspace

import "encoding/binary"

// Keys of backups (the engine's CreateBackup and restores). A backup
// belongs to the tenant environment that took it and lives in its
// namespace, so listing a tenant's backups reads only its range and
// deleting the tenant deletes them:
//
//	<ns> B <backup id>          the backup's descriptor
//	<ns> b <backup id> <n:8>    its n-th item
//	s bkp/ <ns> <backup id>     the backup is being written (gone once complete)
//	s rst/ <table:8>            the table is being restored (gone once complete)

// Backup returns the key of a backup's descriptor in namespace ns.
func Backup(ns []byte, id string) []byte { return append(append(clone(ns), nsBackup), id...) }

// Backups returns the range of the backup descriptors of namespace ns.
func Backups(ns []byte) (lo, hi []byte) { return prefixRange(append(clone(ns), nsBackup)) }

// BackupItem returns the key of the n-th item of a backup in ns.
func BackupItem(ns []byte, id string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(append(clone(ns), nsBakItem), id...), n)
}

// BackupItems returns the range of the items of a backup in ns. NB:
// backup ids have a fixed length, so no id's range holds another's.
func BackupItems(ns []byte, id string) (lo, hi []byte) {
	return prefixRange(append(append(clone(ns), nsBakItem), id...))
}

// BackupOpen returns the key marking a backup of ns as being written.
func BackupOpen(ns []byte, id string) []byte {
	return append(append(System(SysBackupsOpen), ns...), id...)
}

// BackupsOpen returns the range of every BackupOpen key.
func BackupsOpen() (lo, hi []byte) { return prefixRange(System(SysBackupsOpen)) }

// RestoreOpen returns the key marking table as being restored.
func RestoreOpen(table uint64) []byte {
	return binary.BigEndian.AppendUint64(System(SysRestoresOpen), table)
}

// RestoresOpen returns the range of every RestoreOpen key.
func RestoresOpen() (lo, hi []byte) { return prefixRange(System(SysRestoresOpen)) }
