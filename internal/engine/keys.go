package engine

import (
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
)

// itemKey returns the physical key of the item of table t with key
// attributes key in namespace ns.
func itemKey(t *schema.Table, ns []byte, key attr.Item) []byte {
	var pk [64]byte // NB: AppendPartition copies it; longer keys spill to the heap
	b := keyspace.Items(ns, t.ID)
	b = keyspace.AppendPartition(b, attr.AppendKey(pk[:0], key[t.Hash.Name]))
	if t.Range.Name != "" {
		b = attr.AppendKey(b, key[t.Range.Name])
	}
	return b
}

// indexKey returns the physical key of item's entry in index ix of table
// t, or nil if the item lacks an index key attribute (sparse index).
func indexKey(t *schema.Table, ns []byte, ix *schema.Index, item attr.Item) []byte {
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

// indexEntry returns the projected copy of item stored in index ix of
// table t.
func indexEntry(t *schema.Table, ix *schema.Index, item attr.Item) attr.Item {
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
