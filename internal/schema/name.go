package schema

import "github.com/tenantdb/tenantdb/internal/apierr"

// ValidateTableName applies DynamoDB's rule: 3-255 chars of [a-zA-Z0-9_.-].
// Errors: ValidationException.
func ValidateTableName(name string) error {
	return validateName(name, "tableName")
}

// ValidateIndexName applies the same rule to an index name; field names
// the request member in the error message.
func ValidateIndexName(name, field string) error {
	return validateName(name, field)
}

func validateName(name, field string) error {
	if len(name) < 3 || len(name) > 255 {
		return apierr.Validationf("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length between 3 and 255", name, field)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return apierr.Validationf("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", name, field)
		}
	}
	return nil
}
