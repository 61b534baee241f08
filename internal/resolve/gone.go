package resolve

import (
	"bytes"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// MayReadGone reports whether scope s may reach what is left of a deleted
// table named name (its streams, readable until retention), which no
// definition resolves any more: owner is the namespace that owned the
// table, nil for a shared table. A tenant may, for a shared table or one
// its own namespace owned, within a narrowed credential's tables; the
// operator, which has no access to table data, may not.
func MayReadGone(s tenancy.Scope, owner []byte, name string) bool {
	if s.Tenant().IsZero() || !s.AllowsTable(name) {
		return false
	}
	return owner == nil || bytes.Equal(owner, Namespace(s))
}
