package schema

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

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

// DynamoDB's limits on attribute names, in bytes of UTF-8: the names in a
// key schema (a table's or an index's), in attribute definitions and in a
// projection's NonKeyAttributes are at most MaxKeyNameBytes; any other
// attribute name is at most MaxAttrNameBytes. No name may be empty.
const (
	MaxKeyNameBytes  = 255
	MaxAttrNameBytes = 65535
)

// CheckItemNames applies the attribute name limits to the top-level names
// of an item being written. Key attributes need no check of their own: a
// key schema's names are at most MaxKeyNameBytes already.
//
// NB: the messages are our wording. DynamoDB refuses both cases with a
// ValidationException but does not document the text; its answer to an
// over-long name is known only to name the limit.
func CheckItemNames(it attr.Item) error {
	for n := range it {
		if err := CheckAttrName(n); err != nil {
			return err
		}
	}
	return nil
}

// CheckAttrName applies the limits on a non-key attribute name.
func CheckAttrName(n string) error {
	if n == "" {
		return errEmptyAttrName
	}
	if len(n) > MaxAttrNameBytes {
		return errLongAttrName
	}
	return nil
}

var (
	errEmptyAttrName = apierr.Validationf("One or more parameter values were invalid: An attribute name cannot be empty")
	errLongAttrName  = apierr.Validationf("One or more parameter values were invalid: Attribute name has exceeded the maximum size limit of 65535 bytes")
)
