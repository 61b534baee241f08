package engine

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
)

// DynamoDB's key size limits.
const (
	maxHashKeyBytes  = 2048
	maxRangeKeyBytes = 1024
	maxItemBytes     = 400 * 1024
)

// checkKeyValue validates one key attribute of an item or key: present,
// the declared type, non-empty, within the size limit.
func checkKeyValue(k KeyAttr, v attr.Value, ok bool, isRange bool) error {
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
	if isRange && size > maxRangeKeyBytes {
		return apierr.Validationf("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
	}
	if !isRange && size > maxHashKeyBytes {
		return apierr.Validationf("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes")
	}
	return nil
}

// validateKey checks that key holds exactly the table's key attributes with
// the right types ("The provided key element does not match the schema").
func (t *Table) validateKey(key attr.Item) error {
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
		if err := checkKeyValue(k, v, ok, i == 1); err != nil {
			return err
		}
	}
	return nil
}

// validateItemKeys checks the key attributes of a full item being written,
// and the types of any index key attributes it carries (an item whose index
// key attribute has the wrong type is rejected, as in DynamoDB).
func (t *Table) validateItemKeys(item attr.Item) error {
	for i, k := range []KeyAttr{t.Hash, t.Range} {
		if k.Name == "" {
			continue
		}
		v, ok := item[k.Name]
		if err := checkKeyValue(k, v, ok, i == 1); err != nil {
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
			if err := checkKeyValue(k, v, ok, i == 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyOf returns the key attributes of item.
func (t *Table) keyOf(item attr.Item) attr.Item {
	k := attr.Item{t.Hash.Name: item[t.Hash.Name]}
	if t.Range.Name != "" {
		k[t.Range.Name] = item[t.Range.Name]
	}
	return k
}

// itemKey returns the physical key of the item with key attributes key in
// namespace ns.
func (t *Table) itemKey(ns []byte, key attr.Item) []byte {
	var pk [64]byte // NB: AppendPartition copies it; longer keys spill to the heap
	b := keyspace.Items(ns, t.ID)
	b = keyspace.AppendPartition(b, attr.AppendKey(pk[:0], key[t.Hash.Name]))
	if t.Range.Name != "" {
		b = attr.AppendKey(b, key[t.Range.Name])
	}
	return b
}

// indexKey returns the physical key of item's entry in index ix, or nil if
// the item lacks an index key attribute (sparse index).
func (t *Table) indexKey(ns []byte, ix *Index, item attr.Item) []byte {
	hv, ok := item[ix.Hash.Name]
	if !ok || hv.Type != ix.Hash.Type {
		return nil
	}
	b := keyspace.Index(ns, t.ID, ix.No)
	b = keyspace.AppendPartition(b, attr.AppendKey(nil, hv))
	if ix.Range.Name != "" {
		rv, ok := item[ix.Range.Name]
		if !ok || rv.Type != ix.Range.Type {
			return nil
		}
		b = attr.AppendKey(b, rv)
	}
	b = attr.AppendKey(b, item[t.Hash.Name])
	if t.Range.Name != "" {
		b = attr.AppendKey(b, item[t.Range.Name])
	}
	return b
}

// indexEntry returns the projected copy of item stored in index ix.
func (t *Table) indexEntry(ix *Index, item attr.Item) attr.Item {
	if ix.ProjectionType == "ALL" {
		return item
	}
	out := attr.Item{}
	for name, v := range item {
		if t.Projects(ix, name) {
			out[name] = v
		}
	}
	return out
}
