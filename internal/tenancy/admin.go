package tenancy

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
)

// AdminClass says who may take an admin (control-plane) action.
type AdminClass uint8

// The admin classes.
const (
	// AdminOperator actions (tenant lifecycle, the platform audit log,
	// seeding memberships) are the operator's only.
	AdminOperator AdminClass = iota + 1
	// AdminTenant actions (a tenant's keys, sessions, invites, quota and
	// record) are the operator's or an admin key's of the target tenant.
	AdminTenant
	// AdminTenantWide actions report on every environment of the tenant
	// (its audit log, its usage): as AdminTenant, but only admin keys of
	// the live environment.
	AdminTenantWide
	// AdminSelf actions (whoami) are any credential's, on its own tenant.
	AdminSelf
)

// LiveEnv is the default environment of keys, the one whose admin keys may
// read a tenant's tenant-wide reports.
const LiveEnv = "live"

// AdminRefusal is the error AdmitAdmin returns: Err is what the caller is
// told (an *apierr.Error), Reason what the caller's own audit log records.
type AdminRefusal struct {
	Err    error
	Reason string
}

func (r *AdminRefusal) Error() string { return r.Err.Error() }

// Unwrap returns Err, so that apierr.KindOf and errors.As see it.
func (r *AdminRefusal) Unwrap() error { return r.Err }

func refuse(reason string, kind apierr.Kind, format string, args ...any) (Scope, error) {
	return Scope{}, &AdminRefusal{Err: apierr.New(kind, format, args...), Reason: reason}
}

// AdmitAdmin decides whether p may take the admin action of class on the
// target tenant and returns the Scope to take it with, bound to target.
// target is the tenant the request names, already resolved by the caller:
// for the operator, the tenant found by id or slug (zero for actions on the
// platform itself); for anyone else, the id parsed from the request, or
// zero when the request's reference is no tenant id. The rules:
//
//   - the operator is admitted to every class, on target, with role
//     operator;
//   - AdminOperator refuses everyone else (AccessDenied);
//   - AdminTenant and AdminTenantWide refuse roles other than admin and
//     temporary credentials narrowed by a policy (AccessDenied); an admin
//     key naming another tenant (or no tenant id) gets NotFound, exactly
//     what a tenant that does not exist gets, so nothing is revealed;
//     AdminTenantWide refuses admin keys of other environments than live;
//   - AdminSelf admits any credential on its own tenant.
//
// Errors are *AdminRefusal wrapping an *apierr.Error. Guard.BypassChecks
// does not apply: the admin plane is never bypassed.
func (g *Guard) AdmitAdmin(p Principal, class AdminClass, action string, target TenantID) (Scope, error) {
	if p.Role == RoleNone {
		return refuse("no role", apierr.AccessDenied, "the credential has no role")
	}
	if p.IsOperator() {
		return Scope{tenant: target, env: p.Env, role: RoleOperator, keyID: p.KeyID, action: action, valid: true}, nil
	}
	if p.Tenant.IsZero() {
		return refuse("no tenant", apierr.AccessDenied, "the credential is not bound to a tenant")
	}
	own := Scope{tenant: p.Tenant, env: p.Env, role: p.Role, keyID: p.KeyID, action: action, policy: p.Policy, valid: true}
	switch class {
	case AdminSelf:
		return own, nil
	case AdminOperator:
		return refuse("not the operator", apierr.AccessDenied, "only the operator may call %s", action)
	case AdminTenant, AdminTenantWide:
		if p.Role != RoleAdmin {
			return refuse("role "+p.Role.String(), apierr.AccessDenied, "a %s key may not use the admin API; use an admin key", p.Role)
		}
		if p.Policy != nil {
			// NB: a policy narrows a temporary credential to some tables and
			// DynamoDB actions; none of them is an admin action, and minting
			// or rotating a key would escape the policy and the expiry.
			return refuse("narrowed session", apierr.AccessDenied, "a temporary credential narrowed to tables or actions may not use the admin API")
		}
		if target.IsZero() || target != p.Tenant {
			if !target.IsZero() && testHookCrossTenantAdmin.Load() {
				own.tenant = target // the injected leak
			} else {
				// NB: the same answer as for a tenant that does not exist.
				return refuse("cross-tenant attempt", apierr.NotFound, "tenant not found")
			}
		}
		if class == AdminTenantWide && p.Env != LiveEnv {
			return refuse("environment "+apierr.Clip(p.Env)+" on a tenant-wide route", apierr.AccessDenied,
				"%s reports on every environment of the tenant; use an admin key of the %s environment (this key is of %s)", action, LiveEnv, p.Env)
		}
		return own, nil
	}
	return refuse("unknown admin class", apierr.Internal, "tenancy: unknown admin class")
}

// AdmitMember admits a platform user (an OIDC subject) who holds a
// membership of tenant t with role, as the catalog has just established
// (for instance by accepting an invite), to record that action in t's
// audit log. Errors: AccessDenied for an empty subject or no tenant.
func (g *Guard) AdmitMember(sub string, t TenantID, role Role, action string) (Scope, error) {
	if sub == "" || t.IsZero() {
		return Scope{}, apierr.New(apierr.AccessDenied, "no membership to act with")
	}
	return Scope{tenant: t, role: role, keyID: "sub:" + sub, action: action, valid: true}, nil
}

// SystemScope returns a Scope for tenant t for work the server does on its
// own, without a request to admit: bootstrap, the default tenant, deletion
// sweeps. reason names that work (it is the scope's key id, "system:" +
// reason, in audit records). The scope has the operator's role.
//
// NB: every call is a place where no guard decided; internal/lint allows
// it only in the files it lists.
func SystemScope(t TenantID, reason string) Scope {
	return Scope{tenant: t, role: RoleOperator, keyID: "system:" + reason, action: reason, valid: true}
}

// SystemScopeIn is SystemScope in environment env of tenant t: the
// server's own work on one tenant environment's data, such as a webhook
// subscription's delivery worker reading that environment's change log.
// The same lint rule applies.
func SystemScopeIn(t TenantID, env, reason string) Scope {
	s := SystemScope(t, reason)
	s.env = env
	return s
}
