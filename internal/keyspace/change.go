package keyspace

import (
	"encoding/binary"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Keys of the change log (package changelog). A namespace's records of one
// stream of one table are one range inside the namespace, ordered by shard
// and then by the namespace's sequence number:
//
//	<ns> c <table:8> <stream:8> <shard:4> <seq:8>   a change record
//	<ns> C s                                        the namespace's leased sequence ceiling
//	<ns> C h <table:8> <stream:8>                   a stream's trim horizon in the namespace
//	<ns> C t <table:8>                              the newest record of the table trimmed in the namespace
//	s chs/ <table:8> <stream:8>                     a stream's descriptor (server-wide)
//	s chl/ <ns> <table:8> <stream:8>                ns holds records of the stream (for trimming)
//	s chn/ <owner> <name> 0 <table:8> <stream:8>    a stream's descriptor, indexed by owner and table name

// ChangeStream returns the prefix of the records of one stream of a table
// in namespace ns.
func ChangeStream(ns []byte, table, stream uint64) []byte {
	b := binary.BigEndian.AppendUint64(append(clone(ns), nsChange), table)
	return binary.BigEndian.AppendUint64(b, stream)
}

// ChangeShard returns the prefix of the records of one shard of a stream in
// namespace ns.
func ChangeShard(ns []byte, table, stream uint64, shard uint32) []byte {
	return binary.BigEndian.AppendUint32(ChangeStream(ns, table, stream), shard)
}

// ChangeRecord returns the key of the record with sequence number seq in a
// shard of a stream in namespace ns.
func ChangeRecord(ns []byte, table, stream uint64, shard uint32, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(ChangeShard(ns, table, stream, shard), seq)
}

// ChangeStreamRange returns the range of a stream's records in ns.
func ChangeStreamRange(ns []byte, table, stream uint64) (lo, hi []byte) {
	return prefixRange(ChangeStream(ns, table, stream))
}

// ChangeLogRange returns the range of all change records of namespace ns.
func ChangeLogRange(ns []byte) (lo, hi []byte) { return prefixRange(append(clone(ns), nsChange)) }

// ChangeCeiling returns the key of namespace ns's leased sequence ceiling.
func ChangeCeiling(ns []byte) []byte { return append(clone(ns), nsChgMeta, chgCeiling) }

// ChangeHorizon returns the key of a stream's trim horizon in ns.
func ChangeHorizon(ns []byte, table, stream uint64) []byte {
	b := binary.BigEndian.AppendUint64(append(clone(ns), nsChgMeta, chgHorizon), table)
	return binary.BigEndian.AppendUint64(b, stream)
}

// ChangeTrimmed returns the key of the sequence number and time of the
// newest record of a table (any of its streams) trimmed away in ns.
func ChangeTrimmed(ns []byte, table uint64) []byte {
	return binary.BigEndian.AppendUint64(append(clone(ns), nsChgMeta, chgTrimmed), table)
}

// StreamDescriptor returns the key of a stream's descriptor.
func StreamDescriptor(table, stream uint64) []byte {
	b := binary.BigEndian.AppendUint64(System(SysStreams), table)
	return binary.BigEndian.AppendUint64(b, stream)
}

// StreamDescriptors returns the range of the descriptors of a table's
// streams.
func StreamDescriptors(table uint64) (lo, hi []byte) {
	return prefixRange(binary.BigEndian.AppendUint64(System(SysStreams), table))
}

// AllStreamDescriptors returns the range of every stream descriptor.
func AllStreamDescriptors() (lo, hi []byte) { return prefixRange(System(SysStreams)) }

// ChangeLogEntry returns the key recording that namespace ns holds records
// of a stream.
func ChangeLogEntry(ns []byte, table, stream uint64) []byte {
	b := binary.BigEndian.AppendUint64(append(System(SysChangeLogs), ns...), table)
	return binary.BigEndian.AppendUint64(b, stream)
}

// ChangeLogEntries returns the range of every ChangeLogEntry.
func ChangeLogEntries() (lo, hi []byte) { return prefixRange(System(SysChangeLogs)) }

// TenantChangeLogEntries returns the range of the ChangeLogEntry keys of
// one tenant's namespaces.
func TenantChangeLogEntries(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(System(SysChangeLogs), Tenant(t)...))
}

// ParseChangeLogEntry splits a ChangeLogEntry key. ok is false if key is
// not one.
func ParseChangeLogEntry(key []byte) (ns []byte, table, stream uint64, ok bool) {
	p := System(SysChangeLogs)
	if len(key) < len(p)+16+1 || string(key[:len(p)]) != string(p) {
		return nil, 0, 0, false
	}
	rest := key[len(p):]
	n := len(rest) - 16
	return clone(rest[:n]), binary.BigEndian.Uint64(rest[n:]), binary.BigEndian.Uint64(rest[n+8:]), true
}

// StreamName returns the key indexing a stream's descriptor by the owner
// of its table (the owning namespace, nil for a shared table) and the
// table's name, so that the streams of a deleted table are found without
// reading every descriptor.
func StreamName(owner []byte, name string, table, stream uint64) []byte {
	b := append(streamNameOwner(owner), name...)
	b = binary.BigEndian.AppendUint64(append(b, strNameEnd), table)
	return binary.BigEndian.AppendUint64(b, stream)
}

// StreamNames returns the range of the StreamName keys of tables named
// name of owner.
func StreamNames(owner []byte, name string) (lo, hi []byte) {
	return prefixRange(append(append(streamNameOwner(owner), name...), strNameEnd))
}

// OwnerStreamNames returns the range of every StreamName key of owner.
func OwnerStreamNames(owner []byte) (lo, hi []byte) { return prefixRange(streamNameOwner(owner)) }

// TenantStreamNames returns the range of the StreamName keys of the
// tables of every namespace of tenant t.
func TenantStreamNames(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(append(System(SysStreamNames), strOwned), Tenant(t)...))
}

// ParseStreamName returns the table and stream of a StreamName key; ok is
// false if key is not one.
func ParseStreamName(key []byte) (table, stream uint64, ok bool) {
	p := System(SysStreamNames)
	if len(key) < len(p)+1+1+16 || string(key[:len(p)]) != string(p) || key[len(key)-17] != strNameEnd {
		return 0, 0, false
	}
	n := len(key) - 16
	return binary.BigEndian.Uint64(key[n:]), binary.BigEndian.Uint64(key[n+8:]), true
}

func streamNameOwner(owner []byte) []byte {
	if owner == nil {
		return append(System(SysStreamNames), strShared)
	}
	return append(append(System(SysStreamNames), strOwned), owner...)
}

// ChangeMetaRange returns the range of namespace ns's change log state
// (sequence ceiling and trim horizons).
func ChangeMetaRange(ns []byte) (lo, hi []byte) { return prefixRange(append(clone(ns), nsChgMeta)) }

// ChangeTableRange returns the range of the records of every stream of a
// table in namespace ns.
func ChangeTableRange(ns []byte, table uint64) (lo, hi []byte) {
	return prefixRange(binary.BigEndian.AppendUint64(append(clone(ns), nsChange), table))
}
