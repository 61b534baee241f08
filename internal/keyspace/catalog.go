package keyspace

// Keys of the catalog, auth and audit packages that keyspace.go does not
// declare. Layout (in addition to keyspace.go's):
//
//	c M <sub> 0x00 <tenant:16>                   platform membership (sub -> tenant)
//	t <tenant:16> l <key id>                     credential last-used time (written lazily)
//	t <tenant:16> p <sub>                        reverse membership (tenant -> sub), for deletion
//	t <tenant:16> v <invite hash:32>             pending invitations
//	t <tenant:16> A                              audit chain head (last seq and hash)
//	t <tenant:16> S <token hash:32>              web console sessions
//
// NB: the zero tenant id never names a tenant (tenancy.NewTenantID sets
// UUID version bits). Its range holds the platform's own records: the
// operator's credentials (Credential(TenantID{}, id)) and the platform
// audit log (Audit(TenantID{}, seq)).

import "github.com/tenantdb/tenantdb/internal/tenancy"

// Platform is the pseudo-tenant that owns operator credentials and the
// platform audit log.
var Platform = tenancy.TenantID{}

// TenantSlugs returns the range of all slug -> tenant id entries, which
// is also the list of all tenants.
func TenantSlugs() (lo, hi []byte) { return prefixRange([]byte{catalogPrefix, catSlug}) }

// Membership returns the key of platform user sub's membership of tenant t.
// sub must not contain a 0x00 byte.
func Membership(sub string, t tenancy.TenantID) []byte {
	b := make([]byte, 0, 2+len(sub)+1+16)
	b = append(b, catalogPrefix, catMembership)
	b = append(b, sub...)
	b = append(b, membershipSep)
	return append(b, t[:]...)
}

// Memberships returns the range of all memberships of platform user sub.
func Memberships(sub string) (lo, hi []byte) {
	b := append([]byte{catalogPrefix, catMembership}, sub...)
	return prefixRange(append(b, membershipSep))
}

// TenantMember returns the key of tenant t's reverse membership entry for sub.
func TenantMember(t tenancy.TenantID, sub string) []byte {
	return append(append(Tenant(t), subMember), sub...)
}

// TenantMembers returns the range of tenant t's reverse membership entries.
func TenantMembers(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(Tenant(t), subMember))
}

// CredentialLastUsed returns the key of a credential's last-used time.
func CredentialLastUsed(t tenancy.TenantID, keyID string) []byte {
	return append(append(Tenant(t), subLastUsed), keyID...)
}

// CredentialsLastUsed returns the range of a tenant's last-used times.
func CredentialsLastUsed(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(Tenant(t), subLastUsed))
}

// Invite returns the key of a pending invitation, by the hash of its token.
func Invite(t tenancy.TenantID, tokenHash []byte) []byte {
	return append(append(Tenant(t), subInvite), tokenHash...)
}

// ConsoleSession returns the key of a web console session of tenant t
// (Platform for the operator's and platform users'), by the hash of its
// token (internal/console).
func ConsoleSession(t tenancy.TenantID, tokenHash []byte) []byte {
	return append(append(Tenant(t), subSession), tokenHash...)
}

// ConsoleSessions returns the range of tenant t's console sessions.
func ConsoleSessions(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(Tenant(t), subSession))
}

// AuditHead returns the key holding the last seq and hash of a tenant's
// audit chain.
func AuditHead(t tenancy.TenantID) []byte { return append(Tenant(t), subAuditHead) }

// AuditDenials returns the key of the denied attempts against tenant t
// that gateway gw counted and the log does not hold yet (audit on a fleet).
func AuditDenials(t tenancy.TenantID, gw []byte) []byte {
	return append(append(Tenant(t), subAuditDeny), gw...)
}

// AuditDenialsRange returns the range of every gateway's AuditDenials of t.
func AuditDenialsRange(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(Tenant(t), subAuditDeny))
}

// Partition returns the prefix of key that decides which engine partition
// (item collection) holds it when the control plane lives in a
// DynamoDB-API engine (package enginekv): the tenant prefix
// (Tenant(t)) for a tenant's records, so a tenant's records are one
// collection and every range this package returns for a tenant lies in
// one; the first byte otherwise (server-wide values, slugs, memberships).
func Partition(key []byte) []byte {
	if len(key) >= 17 && key[0] == tenantPrefix {
		return key[:17]
	}
	if len(key) == 0 {
		return nil
	}
	return key[:1]
}
