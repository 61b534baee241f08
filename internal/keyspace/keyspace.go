// Package keyspace defines every physical key of tenantdb in one place.
//
// Layout (all in one ordered key space; see DESIGN.md):
//
//	s <name>                                     server-wide system values (sequences, server key)
//	c T <table name>                             shared (operator) table definitions
//	c X <tenant slug>                            tenant slug -> id
//	t <tenant:16> i                              tenant record
//	t <tenant:16> k <key id>                     credentials of the tenant (one direct lookup)
//	t <tenant:16> a <seq:8>                      audit log
//	t <tenant:16> u <hour:8>                     usage buckets
//	t <tenant:16> q <table>                      quotas
//	t <tenant:16> n <env> 0x00 T <name>          tenant-owned table definitions
//	t <tenant:16> n <env> 0x00 d <table:8> <hash:4> <pk> <sk>                  items
//	t <tenant:16> n <env> 0x00 x <table:8> <index:2> <hash:4> <ipk> <isk> <pk> <sk>   index entries
//	t <tenant:16> n <env> 0x00 m <table:8> <index:2> <counter>             statistics counters
//	t <tenant:16> n <env> 0x00 c <table:8> <stream:8> <shard:4> <seq:8>    change log records (change.go)
//
// NB: everything of one tenant starts with t<tenant>, so a tenant is one
// contiguous range (backup, restore, export, delete, move are range
// operations), and everything of one tenant's environment starts with
// Namespace(tenant, env). Key values use attr.AppendKey, whose byte order is
// DynamoDB's value order; <hash> spreads partitions so that parallel Scan
// segments are hash ranges, as in DynamoDB.
package keyspace

import (
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// System returns the key of a server-wide value.
func System(name string) []byte { return append([]byte{sysPrefix}, name...) }

// RetiredServerKey returns the key of the mark that the server key whose
// check value (auth.ServerKey.Check) is check was retired by a fleet's
// rotation: a write of a secret sealed under that key is conditioned on
// the mark's absence.
func RetiredServerKey(check []byte) []byte {
	return hex.AppendEncode(System(SysServerKeyRetired), check)
}

// RetiredKEK returns the key of the mark that the tenant-key encryption
// key with id (tenantkey's kek id) was retired by a fleet's server key
// rotation: a write of a data key wrapped under it is conditioned on the
// mark's absence.
func RetiredKEK(id string) []byte { return append(System(SysKEKRetired), id...) }

// SharedTable returns the key of a shared table's definition.
func SharedTable(name string) []byte { return append([]byte{catalogPrefix, catTable}, name...) }

// SharedTables returns the range of all shared table definitions.
func SharedTables() (lo, hi []byte) { return prefixRange([]byte{catalogPrefix, catTable}) }

// TenantSlug returns the key mapping a tenant slug to its id.
func TenantSlug(slug string) []byte { return append([]byte{catalogPrefix, catSlug}, slug...) }

// Tenant returns the prefix of everything a tenant owns.
func Tenant(t tenancy.TenantID) []byte {
	b := make([]byte, 0, 64)
	b = append(b, tenantPrefix)
	return append(b, t[:]...)
}

// TenantRange returns [lo, hi) covering everything a tenant owns.
func TenantRange(t tenancy.TenantID) (lo, hi []byte) { return prefixRange(Tenant(t)) }

// Tenants returns the range of all tenants' data.
func Tenants() (lo, hi []byte) { return prefixRange([]byte{tenantPrefix}) }

// TenantRecord returns the key of a tenant's own record.
func TenantRecord(t tenancy.TenantID) []byte { return append(Tenant(t), subRecord) }

// Credential returns the key of one of a tenant's credentials.
func Credential(t tenancy.TenantID, keyID string) []byte {
	return append(append(Tenant(t), subCredential), keyID...)
}

// Credentials returns the range of a tenant's credentials.
func Credentials(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(Tenant(t), subCredential))
}

// Audit returns the key of audit record seq of a tenant.
func Audit(t tenancy.TenantID, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(Tenant(t), subAudit), seq)
}

// AuditRange returns the range of a tenant's audit records.
func AuditRange(t tenancy.TenantID) (lo, hi []byte) { return prefixRange(append(Tenant(t), subAudit)) }

// Usage returns the key of a tenant's usage bucket for an hour (Unix hours).
func Usage(t tenancy.TenantID, hour uint64, name string) []byte {
	return append(binary.BigEndian.AppendUint64(append(Tenant(t), subUsage), hour), name...)
}

// UsageRange returns the range of a tenant's usage buckets for hours in [from, to).
func UsageRange(t tenancy.TenantID, from, to uint64) (lo, hi []byte) {
	p := append(Tenant(t), subUsage)
	return binary.BigEndian.AppendUint64(append([]byte(nil), p...), from), binary.BigEndian.AppendUint64(append([]byte(nil), p...), to)
}

// Quota returns the key of a tenant's quota ("" table for the tenant-wide one).
func Quota(t tenancy.TenantID, table string) []byte {
	return append(append(Tenant(t), subQuota), table...)
}

// Namespace returns the prefix of a tenant environment's data.
func Namespace(t tenancy.TenantID, env string) []byte {
	b := append(Tenant(t), subNamespace)
	b = append(b, env...)
	return append(b, envSep)
}

// NamespaceRange returns the range of a tenant environment's data.
func NamespaceRange(t tenancy.TenantID, env string) (lo, hi []byte) {
	return prefixRange(Namespace(t, env))
}

// TenantTable returns the key of a tenant-owned table's definition.
func TenantTable(ns []byte, name string) []byte {
	return append(append(clone(ns), nsTable), name...)
}

// TenantTables returns the range of a namespace's own table definitions.
func TenantTables(ns []byte) (lo, hi []byte) { return prefixRange(append(clone(ns), nsTable)) }

// Items returns the prefix of a table's items in a namespace.
func Items(ns []byte, table uint64) []byte {
	return binary.BigEndian.AppendUint64(append(clone(ns), nsItem), table)
}

// Index returns the prefix of an index's entries in a namespace.
func Index(ns []byte, table uint64, index uint16) []byte {
	b := binary.BigEndian.AppendUint64(append(clone(ns), nsIndex), table)
	return binary.BigEndian.AppendUint16(b, index)
}

// Counter returns the key of a statistics counter of a table (index 0) or
// one of its indexes.
func Counter(ns []byte, table uint64, index uint16, name string) []byte {
	b := binary.BigEndian.AppendUint64(append(clone(ns), nsCounter), table)
	b = binary.BigEndian.AppendUint16(b, index)
	return append(b, name...)
}

// TableRanges returns the ranges holding all items, index entries and
// counters of one table in one namespace (to drop the table).
func TableRanges(ns []byte, table uint64) [][2][]byte {
	var out [][2][]byte
	for _, sub := range []byte{nsItem, nsIndex, nsCounter} {
		lo, hi := prefixRange(binary.BigEndian.AppendUint64(append(clone(ns), sub), table))
		out = append(out, [2][]byte{lo, hi})
	}
	return out
}

// Hash returns the partition hash of an encoded partition key value.
func Hash(encodedPK []byte) uint32 {
	h := fnv.New32a()
	h.Write(encodedPK)
	return h.Sum32()
}

// AppendPartition appends <hash:4><pk> for an encoded partition key.
func AppendPartition(dst, encodedPK []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, Hash(encodedPK))
	return append(dst, encodedPK...)
}

// SegmentRange returns the hash bounds [lo, hi) of parallel Scan segment
// seg of total (hi == 1<<32 for the last segment).
func SegmentRange(seg, total int) (lo, hi uint64) {
	span := uint64(1) << 32
	return span * uint64(seg) / uint64(total), span * uint64(seg+1) / uint64(total)
}

// PrefixEnd returns the smallest key greater than every key with prefix p
// (nil if p is all 0xFF).
func PrefixEnd(p []byte) []byte {
	end := clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func prefixRange(p []byte) (lo, hi []byte) { return clone(p), PrefixEnd(p) }

func clone(b []byte) []byte { return append(make([]byte, 0, len(b)+48), b...) }

// TenantOf returns the tenant whose range key lies in (false for a key
// outside every tenant's range).
func TenantOf(key []byte) (tenancy.TenantID, bool) {
	var t tenancy.TenantID
	if len(key) < 1+len(t) || key[0] != tenantPrefix {
		return t, false
	}
	copy(t[:], key[1:1+len(t)])
	return t, !t.IsZero()
}
