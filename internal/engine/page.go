package engine

import (
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
)

// Page tokens.
//
// A LastEvaluatedKey is the key attributes of the last item a page
// evaluated, taken from that item (Table.pageKey). An ExclusiveStartKey comes
// from the client and may be forged: it is validated against the schema and
// then only turned into a seek position — the physical key it would have in
// the handle's own namespace — which narrows the page's span by clamping
// (keySpan.after/before). It can therefore never make a read leave the
// scope's range, whatever bytes it holds.

// startKey validates an ExclusiveStartKey for reads of ix (nil: the table)
// and returns its physical key in the handle's namespace. The token must
// hold exactly the table's key attributes plus, for index reads, the
// index's, with the schema's types.
func (h *handle) startKey(ix *schema.Index, esk attr.Item) ([]byte, error) {
	t := h.Table
	want := pageKeyAttrs(t, ix)
	if len(esk) != len(want) {
		return nil, errStartKey("The provided key element does not match the schema")
	}
	for _, k := range want {
		v, ok := esk[k.Name]
		if !ok || v.Type != k.Type {
			return nil, errStartKey("The provided key element does not match the schema")
		}
		isRange := k.Name == t.Range.Name || (ix != nil && k.Name == ix.Range.Name)
		if err := schema.CheckKeyValue(k, v, true, isRange); err != nil {
			var ae *apierr.Error
			if errors.As(err, &ae) {
				return nil, errStartKey("%s", ae.Message)
			}
			return nil, err
		}
	}
	// NB: leading-keys tables check every partition key a request names,
	// page tokens included, like IAM's dynamodb:LeadingKeys.
	if err := h.CheckStartKey(ix, esk); err != nil {
		return nil, err
	}
	if ix != nil {
		return indexKey(t, h.Namespace, ix, esk), nil
	}
	return itemKey(t, h.Namespace, esk), nil
}

// startSegment reports whether the partition of an ExclusiveStartKey (of
// the table, or of index ix) falls into parallel Scan segment seg of total.
func startSegment(t *schema.Table, ix *schema.Index, esk attr.Item, seg, total int) bool {
	pk := t.Hash.Name
	if ix != nil {
		pk = ix.Hash.Name
	}
	h := uint64(keyspace.Hash(attr.AppendKey(nil, esk[pk])))
	lo, hi := keyspace.SegmentRange(seg, total)
	return h >= lo && h < hi
}
