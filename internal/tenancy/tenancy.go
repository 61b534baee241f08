// Package tenancy is the vocabulary of multi-tenancy: tenant ids,
// principals, roles, isolation modes, and Scope, the tenant-scoped handle
// without which no engine call can be made.
//
// NB: a Scope has only unexported fields and its zero value is rejected by
// the engine; the only way to obtain one is the Guard, which decides
// whether a principal may perform an action: Admit for the data plane,
// AdmitAdmin for the admin plane (/v1/), AdmitMember for a platform
// user's membership. SystemScope, for the server's own work without a
// request, is allowed only where internal/lint lists it. The tenant is therefore never
// read from a request body, a header other than the credential, or a
// context value: forgetting to pass a Scope fails to compile.
package tenancy

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
)

// TenantID is a tenant's 128-bit id, written as 32 lower-case hex chars.
type TenantID [16]byte

// NewTenantID returns a random (version 4 UUID) tenant id.
func NewTenantID() TenantID {
	var t TenantID
	if _, err := rand.Read(t[:]); err != nil {
		panic("tenancy: no randomness: " + err.Error())
	}
	t[6] = t[6]&0x0f | 0x40
	t[8] = t[8]&0x3f | 0x80
	return t
}

// ErrBadTenantID is returned for a malformed tenant id.
var ErrBadTenantID = errors.New("tenancy: tenant id must be 32 hex characters")

// ParseTenantID parses 32 hex characters (dashes of the UUID form are
// accepted and ignored).
func ParseTenantID(s string) (TenantID, error) {
	var t TenantID
	s = strings.ReplaceAll(s, "-", "")
	if len(s) != 32 {
		return t, ErrBadTenantID
	}
	if _, err := hex.Decode(t[:], []byte(strings.ToLower(s))); err != nil {
		return t, ErrBadTenantID
	}
	return t, nil
}

// String returns the 32-hex form.
func (t TenantID) String() string { return hex.EncodeToString(t[:]) }

// IsZero reports whether t is the zero id (no tenant).
func (t TenantID) IsZero() bool { return t == TenantID{} }

// Role is what a credential may do.
type Role uint8

// The roles.
const (
	RoleNone     Role = iota
	RoleRead          // read items
	RoleApp           // read and write items
	RoleAdmin         // app + the tenant's own tables, keys, audit and usage
	RoleOperator      // the platform: shared tables, tenants, quotas; no item access
)

var roleNames = [...]string{"", "read", "app", "admin", "operator"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "unknown"
}

// ParseRole parses "read", "app", "admin" or "operator".
func ParseRole(s string) (Role, bool) {
	for i, n := range roleNames {
		if i > 0 && n == s {
			return Role(i), true
		}
	}
	return RoleNone, false
}

// IsolationMode is how a table separates tenants.
type IsolationMode uint8

// The isolation modes.
const (
	Namespace   IsolationMode = iota // the server prefixes every physical key with the tenant
	LeadingKeys                      // the application writes tenant-prefixed keys; the server checks them
	Silo                             // each tenant's data lives in its own physical store
)

var modeNames = [...]string{"namespace", "leading-keys", "silo"}

func (m IsolationMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// ParseIsolationMode parses a tenantdb:isolation tag value.
func ParseIsolationMode(s string) (IsolationMode, bool) {
	for i, n := range modeNames {
		if n == s {
			return IsolationMode(i), true
		}
	}
	return Namespace, false
}

// Tag keys that choose isolation at CreateTable.
const (
	TagIsolation         = "tenantdb:isolation"
	TagLeadingKeyPattern = "tenantdb:leading-key-pattern"
)

// Policy narrows a temporary credential to some tables and actions. Empty
// lists mean no narrowing.
type Policy struct {
	Tables  []string `json:"tables,omitempty"`
	Actions []string `json:"actions,omitempty"`
}

// Allows reports whether the policy permits action on table ("" for
// actions without a table).
func (p *Policy) Allows(action, table string) bool {
	if p == nil {
		return true
	}
	if len(p.Actions) > 0 && !p.allowsAction(action) {
		return false
	}
	if table != "" && len(p.Tables) > 0 && !contains(p.Tables, table) && !contains(p.Tables, "*") {
		return false
	}
	return true
}

// PartiQL statements are authorized as IAM does: by the statement's verb
// (dynamodb:PartiQLSelect, ...), never by the operation that carries them.
const (
	ActionPartiQLSelect = "PartiQLSelect"
	ActionPartiQLInsert = "PartiQLInsert"
	ActionPartiQLUpdate = "PartiQLUpdate"
	ActionPartiQLDelete = "PartiQLDelete"
)

var partiqlActions = []string{ActionPartiQLSelect, ActionPartiQLInsert, ActionPartiQLUpdate, ActionPartiQLDelete}

// IsPartiQLAction reports whether name is one of the PartiQL actions.
func IsPartiQLAction(name string) bool { return contains(partiqlActions, name) }

// CarriesPartiQL reports whether the operation op carries PartiQL
// statements: IAM has no action of that name.
func CarriesPartiQL(op string) bool {
	return op == "ExecuteStatement" || op == "BatchExecuteStatement" || op == "ExecuteTransaction"
}

// allowsAction reports whether p's action list names action. An operation
// carrying PartiQL statements is allowed if any PartiQL action is, and
// each statement is then checked for its own (Scope.ForStatement).
func (p *Policy) allowsAction(action string) bool {
	if contains(p.Actions, "*") || contains(p.Actions, "dynamodb:*") {
		return true
	}
	if CarriesPartiQL(action) {
		for _, a := range partiqlActions {
			if p.allowsAction(a) {
				return true
			}
		}
		return false
	}
	return contains(p.Actions, action) || contains(p.Actions, "dynamodb:"+action)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// Principal is an authenticated caller, as auth derives it from a
// credential.
type Principal struct {
	Tenant TenantID // zero for the operator
	Env    string   // "live", "test", ...; the data namespace within the tenant
	Role   Role
	KeyID  string  // the access key id (for audit and logs; never the secret)
	Policy *Policy // non-nil for narrowed temporary credentials
}

// IsOperator reports whether p is the platform operator.
func (p Principal) IsOperator() bool { return p.Role == RoleOperator }
