package schema

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// DynamoDB's key and item size limits.
const (
	MaxHashKeyBytes  = 2048
	MaxRangeKeyBytes = 1024
	MaxItemBytes     = 400 * 1024
)

// CheckKeyValue validates one key attribute of an item or key: present
// (ok), the declared type, non-empty, within the size limit of a
// partition key or (isRange) a sort key. Errors: ValidationException.
func CheckKeyValue(k KeyAttr, v attr.Value, ok bool, isRange bool) error {
	if !ok {
		return apierr.Validationf("One or more parameter values were invalid: Missing the key %s in the item", k.Name)
	}
	if v.Type != k.Type {
		return apierr.Validationf("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", k.Name, k.Type, v.Type)
	}
	size := attr.Size(v)
	if (v.Type == attr.S || v.Type == attr.B) && size == 0 {
		return apierr.Validationf("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: %s", k.Name)
	}
	if isRange && size > MaxRangeKeyBytes {
		return apierr.Validationf("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
	}
	if !isRange && size > MaxHashKeyBytes {
		return apierr.Validationf("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes")
	}
	return nil
}

// ValidateKey checks that key holds exactly the table's key attributes with
// the right types ("The provided key element does not match the schema").
func (t *Table) ValidateKey(key attr.Item) error {
	n := 1
	if t.Range.Name != "" {
		n = 2
	}
	if len(key) != n {
		return apierr.Validationf("The provided key element does not match the schema")
	}
	for i, k := range []KeyAttr{t.Hash, t.Range}[:n] {
		v, ok := key[k.Name]
		if !ok || v.Type != k.Type {
			return apierr.Validationf("The provided key element does not match the schema")
		}
		if err := CheckKeyValue(k, v, ok, i == 1); err != nil {
			return err
		}
	}
	return nil
}

// ValidateItemKeys checks the key attributes of a full item being written,
// and the types of any index key attributes it carries (an item whose index
// key attribute has the wrong type is rejected, as in DynamoDB).
func (t *Table) ValidateItemKeys(item attr.Item) error {
	for i, k := range []KeyAttr{t.Hash, t.Range} {
		if k.Name == "" {
			continue
		}
		v, ok := item[k.Name]
		if err := CheckKeyValue(k, v, ok, i == 1); err != nil {
			return err
		}
	}
	for _, ix := range t.Indexes {
		for i, k := range []KeyAttr{ix.Hash, ix.Range} {
			if k.Name == "" {
				continue
			}
			v, ok := item[k.Name]
			if !ok {
				continue // sparse index: no entry
			}
			if v.Type != k.Type {
				return apierr.Validationf("One or more parameter values were invalid: Type mismatch for Index Key %s Expected: %s Actual: %s IndexName: %s", k.Name, k.Type, v.Type, ix.Name)
			}
			if (v.Type == attr.S || v.Type == attr.B) && attr.Size(v) == 0 {
				return apierr.Validationf("One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s", map[attr.Type]string{attr.S: "string", attr.B: "binary"}[v.Type], ix.Name, k.Name)
			}
			if err := CheckKeyValue(k, v, ok, i == 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// KeyOf returns the key attributes of item.
func (t *Table) KeyOf(item attr.Item) attr.Item {
	k := attr.Item{t.Hash.Name: item[t.Hash.Name]}
	if t.Range.Name != "" {
		k[t.Range.Name] = item[t.Range.Name]
	}
	return k
}
