package tenancy

// ResumedScope returns the Scope of a long job (an export or import of
// the DynamoDB API) that a credential of tenant t, environment env, with
// role, started and the server resumes after a restart, without the
// request that admitted it: the same tenant, environment, role and key
// id (for the audit log) as the Scope the guard admitted the job with.
// It returns the zero (invalid) Scope for any role but app and admin:
// only those start such jobs.
//
// NB: a job started with a credential narrowed by a policy (Narrowed) is
// not resumed: the policy is not kept. internal/lint allows this call
// only in the files it lists.
func ResumedScope(t TenantID, env string, role Role, keyID, action string) Scope {
	if t.IsZero() || role != RoleApp && role != RoleAdmin {
		return Scope{}
	}
	return Scope{tenant: t, env: env, role: role, keyID: keyID, action: action, valid: true}
}

// Narrowed reports whether s is narrowed by a temporary credential's
// policy.
func (s Scope) Narrowed() bool { return s.policy != nil }
