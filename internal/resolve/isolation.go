package resolve

import (
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// ApplyIsolationTags sets a new table's isolation mode and leading-key
// pattern from its tags tenantdb:isolation and
// tenantdb:leading-key-pattern (CreateTable; the tags are fixed for the
// table's life), and checks the key types the mode needs. Errors:
// ValidationException.
func ApplyIsolationTags(t *schema.Table) error {
	var mode, pattern string
	var hasMode, hasPattern bool
	for _, tg := range t.Tags {
		switch tg.Key {
		case tenancy.TagIsolation:
			mode, hasMode = tg.Value, true
		case tenancy.TagLeadingKeyPattern:
			pattern, hasPattern = tg.Value, true
		default:
			if strings.HasPrefix(tg.Key, "tenantdb:") {
				return apierr.Validationf("One or more parameter values were invalid: Unknown reserved tag key %s (tenantdb:isolation and tenantdb:leading-key-pattern are defined)", tg.Key)
			}
		}
	}
	if hasMode {
		m, ok := tenancy.ParseIsolationMode(mode)
		if !ok {
			return apierr.Validationf("One or more parameter values were invalid: Tag %s must be one of namespace, leading-keys, silo; got %q", tenancy.TagIsolation, mode)
		}
		t.Isolation = m
	}
	if t.Isolation != tenancy.LeadingKeys {
		if hasPattern {
			return apierr.Validationf("One or more parameter values were invalid: Tag %s requires %s=leading-keys", tenancy.TagLeadingKeyPattern, tenancy.TagIsolation)
		}
		return nil
	}
	if !hasPattern || !strings.Contains(pattern, "{tenant}") {
		return apierr.Validationf("One or more parameter values were invalid: A leading-keys table needs tag %s with a pattern containing {tenant}, such as TENANT#{tenant}|*", tenancy.TagLeadingKeyPattern)
	}
	if strings.Contains(strings.TrimSuffix(pattern, "*"), "*") {
		return apierr.Validationf("One or more parameter values were invalid: Tag %s may contain * only at its end", tenancy.TagLeadingKeyPattern)
	}
	t.LeadingKeyPattern = pattern
	return CheckLeadingKeyTypes(t)
}

// CheckLeadingKeyTypes requires string partition keys on a leading-keys
// table and its GSIs (the pattern is a string prefix); CreateTable and
// UpdateTable (a new GSI) call it. Errors: ValidationException.
func CheckLeadingKeyTypes(t *schema.Table) error {
	if t.Isolation != tenancy.LeadingKeys {
		return nil
	}
	if t.Hash.Type != attr.S {
		return apierr.Validationf("One or more parameter values were invalid: A leading-keys table needs a partition key of type S")
	}
	for _, ix := range t.Indexes {
		if !ix.Local && ix.Hash.Type != attr.S {
			return apierr.Validationf("One or more parameter values were invalid: On a leading-keys table the partition key of index %s must be of type S", ix.Name)
		}
	}
	return nil
}

// ApplyRestoredIsolation sets the isolation of t, a table restored from
// a backup or a point in time of src into a tenant's own namespace: a
// silo source stays silo (its own store); any other becomes a namespace
// table of the tenant (a leading-key pattern binds a shared table's
// tenants, not a table the tenant owns).
func ApplyRestoredIsolation(t, src *schema.Table) {
	t.Isolation, t.LeadingKeyPattern = tenancy.Namespace, ""
	if src.Isolation == tenancy.Silo {
		t.Isolation = tenancy.Silo
	}
}
