package tenancy

import (
	"strings"
	"sync/atomic"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// ActionClass groups actions by what they touch; it is what the guard
// decides on. Package dynamo's operations table gives each DynamoDB
// operation its class.
//
// NB: the zero ActionClass is ClassUnknown, so an Action built without a
// class is refused, never admitted as metadata.
type ActionClass uint8

// The action classes.
const (
	ClassUnknown ActionClass = iota // not an action tenantdb serves: UnknownOperation
	ClassMeta                       // describe and list: DescribeTable, ListTables, ...
	ClassRead                       // read items: GetItem, Query, Scan, ...
	ClassWrite                      // write items: PutItem, BatchWriteItem, ...
	ClassDDL                        // change tables: CreateTable, UpdateTimeToLive, TagResource, ...
)

// Action is what a principal asks the guard to admit: an action's name
// ("PutItem") and its class.
type Action struct {
	Name  string
	Class ActionClass
}

// Scope is a tenant-scoped (or operator-scoped) permission to run one
// action. Only the Guard (Admit, AdmitAdmin, AdmitMember) and, for the
// server's own work, SystemScope create one; the zero value is invalid.
type Scope struct {
	tenant TenantID
	env    string
	role   Role
	keyID  string
	action string
	policy *Policy
	bypass bool
	valid  bool
}

// Valid reports whether s was issued by a Guard.
func (s Scope) Valid() bool { return s.valid }

// Tenant returns the tenant the scope is bound to (zero for the operator).
func (s Scope) Tenant() TenantID { return s.tenant }

// Env returns the environment (data namespace) of the scope.
func (s Scope) Env() string { return s.env }

// Role returns the caller's role.
func (s Scope) Role() Role { return s.role }

// KeyID returns the caller's access key id, for audit.
func (s Scope) KeyID() string { return s.keyID }

// Action returns the admitted action.
func (s Scope) Action() string { return s.action }

// IsOperator reports whether the scope is the operator's.
func (s Scope) IsOperator() bool { return s.role == RoleOperator }

// CanManageTenantTables reports whether the scope may create, update and
// delete tables in its tenant's own namespace.
func (s Scope) CanManageTenantTables() bool { return s.role == RoleAdmin }

// Bypassed reports whether the guard runs in the benchmark-only mode that
// skips checks (never set in production configurations).
func (s Scope) Bypassed() bool { return s.bypass }

// AllowsTable reports whether a narrowed temporary credential may use table.
func (s Scope) AllowsTable(table string) bool { return s.policy.Allows(s.action, table) }

// Guard is the only issuer of Scopes.
type Guard struct {
	// bypassChecks admits everything without role checks. It exists only to
	// measure the cost of the checks in benchmarks, and can be set only in
	// a build with the benchbypass tag (BypassChecks in benchbypass.go).
	bypassChecks bool
}

// Admit decides whether p may perform a and returns the Scope to run it
// with. Errors are AccessDenied (role or policy forbids the action) or
// UnknownOperation (a's class is ClassUnknown).
func (g *Guard) Admit(p Principal, a Action) (Scope, error) {
	action := a.Name
	s := Scope{tenant: p.Tenant, env: p.Env, role: p.Role, keyID: p.KeyID, action: action, policy: p.Policy, valid: true}
	if benchBypass && g.bypassChecks {
		s.bypass = true
		return s, nil
	}
	if p.Role == RoleNone {
		return Scope{}, apierr.New(apierr.AccessDenied, "The credential has no role")
	}
	if p.Role != RoleOperator && p.Tenant.IsZero() {
		return Scope{}, apierr.New(apierr.AccessDenied, "The credential is not bound to a tenant")
	}
	deny := func() (Scope, error) {
		return Scope{}, apierr.New(apierr.AccessDenied,
			"User: %s is not authorized to perform: dynamodb:%s", p.KeyID, action)
	}
	if a.Class == ClassUnknown || a.Class > ClassDDL {
		return Scope{}, apierr.New(apierr.UnknownOperation, "Unknown operation %s", action)
	}
	if !roleMay(p.Role, a.Class) {
		return deny()
	}
	if p.Policy != nil && !p.Policy.Allows(action, "") {
		return deny()
	}
	return s, nil
}

// roleMay reports whether role r may take actions of class c.
func roleMay(r Role, c ActionClass) bool {
	switch c {
	case ClassMeta:
		return true
	case ClassRead:
		return r != RoleOperator
	case ClassWrite:
		return r == RoleApp || r == RoleAdmin
	case ClassDDL:
		return r == RoleOperator || r == RoleAdmin
	}
	return false
}

// Permits returns nil if s's principal may also take actions of class c
// within the admitted action, and an AccessDenied error otherwise. It is
// for actions whose class is known only once their input is read: an
// ExecuteStatement is admitted as a read, and its INSERT, UPDATE and
// DELETE statements must also be permitted as writes.
func (s Scope) Permits(c ActionClass) error {
	if s.bypass || (s.valid && roleMay(s.role, c)) {
		return nil
	}
	return apierr.New(apierr.AccessDenied,
		"User: %s is not authorized to perform: dynamodb:%s", s.keyID, s.action)
}

// ForStatement returns s narrowed to one PartiQL statement of an admitted
// ExecuteStatement, BatchExecuteStatement or ExecuteTransaction: its IAM
// action (ActionPartiQLSelect, ...) of class c must be permitted by the
// role and by a temporary credential's policy, and the returned Scope
// checks tables and leading keys under that action, as IAM does.
func (s Scope) ForStatement(action string, c ActionClass) (Scope, error) {
	if !s.bypass && (!s.valid || !roleMay(s.role, c) || s.policy != nil && !s.policy.Allows(action, "")) {
		return Scope{}, apierr.New(apierr.AccessDenied,
			"User: %s is not authorized to perform: dynamodb:%s", s.keyID, action)
	}
	s.action = action
	return s, nil
}

// CheckLeadingKey enforces a leading-keys pattern such as
// "TENANT#{tenant}|*" on a partition key value: the value must start with
// the pattern's prefix (up to "*") with {tenant} replaced by the scope's
// tenant id, or equal it exactly when the pattern has no "*". It returns an
// AccessDenied error that names neither the key nor another tenant.
func (s Scope) CheckLeadingKey(pattern, pk string) error {
	if s.bypass || testHookSkipLeadingKeys.Load() {
		return nil
	}
	want := strings.ReplaceAll(pattern, "{tenant}", s.tenant.String())
	ok := false
	if i := strings.IndexByte(want, '*'); i >= 0 {
		ok = strings.HasPrefix(pk, want[:i])
	} else {
		ok = pk == want
	}
	if !ok {
		return apierr.New(apierr.AccessDenied,
			"User: %s is not authorized to perform: dynamodb:%s because the partition key does not match dynamodb:LeadingKeys for this tenant", s.keyID, s.action)
	}
	return nil
}

// testHookSkipLeadingKeys disables CheckLeadingKey: an injected isolation
// leak, with which this package's tests prove that `tenantdb verify`
// (internal/verify) finds one.
//
// NB: only a test binary of this package can set it (export_test.go); the
// product has no way to.
var testHookSkipLeadingKeys atomic.Bool

// testHookCrossTenantAdmin admits a tenant admin key to another tenant's
// admin routes: the second injected leak (see testHookSkipLeadingKeys).
var testHookCrossTenantAdmin atomic.Bool
