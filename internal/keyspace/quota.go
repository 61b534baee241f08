package keyspace

// Keys of the quota package that keyspace.go does not declare: ranges over
// a tenant's quota records and usage buckets, and the parsing that lets
// quota read the engine's per-table statistics counters of a tenant by
// skipping from namespace to namespace instead of scanning items.
//
//	t <tenant:16> q <table>                      quotas ("" = tenant-wide)
//	t <tenant:16> u <hour:8> <name>              usage counters of one hour
//	t <tenant:16> n <env> 0x00 m <table:8> <index:2> <name>   statistics counters

import (
	"bytes"
	"encoding/binary"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Quotas returns the range of all of a tenant's quota records (the
// tenant-wide one and the per-table ones).
func Quotas(t tenancy.TenantID) (lo, hi []byte) { return prefixRange(append(Tenant(t), subQuota)) }

// QuotaTable returns the table name of a quota key of tenant t ("" for the
// tenant-wide record) and whether key is one.
func QuotaTable(t tenancy.TenantID, key []byte) (string, bool) {
	p := append(Tenant(t), subQuota)
	if !bytes.HasPrefix(key, p) {
		return "", false
	}
	return string(key[len(p):]), true
}

// ParseUsage splits a key made by Usage(t, hour, name) into its hour and
// counter name.
func ParseUsage(t tenancy.TenantID, key []byte) (hour uint64, name string, ok bool) {
	p := append(Tenant(t), subUsage)
	if !bytes.HasPrefix(key, p) || len(key) < len(p)+8 {
		return 0, "", false
	}
	return binary.BigEndian.Uint64(key[len(p):]), string(key[len(p)+8:]), true
}

// Namespaces returns the range holding every namespace (environment) of a
// tenant. Use NamespaceOf on a key found in it and skip to the end of that
// namespace to visit each environment once.
func Namespaces(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(Tenant(t), subNamespace))
}

// NamespaceOf returns the environment whose namespace holds key, a key in
// Namespaces(t).
func NamespaceOf(t tenancy.TenantID, key []byte) (env string, ok bool) {
	p := append(Tenant(t), subNamespace)
	if !bytes.HasPrefix(key, p) {
		return "", false
	}
	rest := key[len(p):]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return "", false
	}
	return string(rest[:i]), true
}

// Counters returns the range of all statistics counters of a namespace.
func Counters(ns []byte) (lo, hi []byte) { return prefixRange(append(clone(ns), nsCounter)) }

// ParseCounter splits a key made by Counter(ns, table, index, name).
func ParseCounter(ns, key []byte) (table uint64, index uint16, name string, ok bool) {
	if len(key) < len(ns)+1+10 || !bytes.HasPrefix(key, ns) || key[len(ns)] != nsCounter {
		return 0, 0, "", false
	}
	b := key[len(ns)+1:]
	return binary.BigEndian.Uint64(b), binary.BigEndian.Uint16(b[8:]), string(b[10:]), true
}

// Capacity returns the key of a tenant's checkpoint of its token buckets
// (quota.Manager), inside the tenant's range like its quota records.
func Capacity(t tenancy.TenantID) []byte { return append(Tenant(t), subCapacity) }
