package engine

import (
	"context"
	"sort"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Batch limits.
const (
	maxBatchWrite = 25
	maxBatchGet   = 100
)

// BatchWriteItem puts and deletes up to 25 items in one or more tables.
// Every request is validated before anything is written; all writes are
// then applied in one storage batch (per store), so UnprocessedItems is
// always empty. Errors: ValidationException (also for duplicate keys),
// ResourceNotFoundException, AccessDeniedException.
func (e *Engine) BatchWriteItem(ctx context.Context, s tenancy.Scope, in *wire.BatchWriteItemInput) (*wire.BatchWriteItemOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := checkWriteOptions(in.ReturnConsumedCapacity, in.ReturnItemCollectionMetrics, ""); err != nil {
		return nil, err
	}
	if len(in.RequestItems) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value '{}' at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	names := make([]string, 0, len(in.RequestItems))
	total := 0
	for name, reqs := range in.RequestItems {
		names = append(names, name)
		if len(reqs) == 0 || len(reqs) > maxBatchWrite {
			return nil, apierr.Validationf("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]")
		}
		total += len(reqs)
	}
	if total > maxBatchWrite {
		return nil, apierr.Validationf("Too many items requested for the BatchWriteItem call")
	}
	sort.Strings(names)

	var ws []*itemWrite
	seen := map[string]bool{}
	for _, name := range names {
		h, err := e.open(ctx, s, name)
		defer h.close()
		if err != nil {
			return nil, err
		}
		for _, r := range in.RequestItems[name] {
			var w *itemWrite
			switch {
			case r.PutRequest != nil && r.DeleteRequest == nil:
				item := r.PutRequest.Item
				if err := h.Table.ValidateItemKeys(item); err != nil {
					return nil, err
				}
				if err := checkItemSize(item, false); err != nil {
					return nil, err
				}
				if err := h.CheckItem(item); err != nil {
					return nil, err
				}
				w = newWrite(h, h.Table.KeyOf(item))
				w.put, w.new = true, item
			case r.DeleteRequest != nil && r.PutRequest == nil:
				if err := h.Table.ValidateKey(r.DeleteRequest.Key); err != nil {
					return nil, err
				}
				if err := h.CheckKey(r.DeleteRequest.Key); err != nil {
					return nil, err
				}
				w = newWrite(h, r.DeleteRequest.Key)
				w.del = true
			default:
				return nil, apierr.Validationf("Supplied WriteRequest must contain exactly one of PutRequest or DeleteRequest")
			}
			w.sizeOnly = true // no conditions, no ReturnValues
			if seen[string(w.pk)] {
				return nil, apierr.Validationf("Provided list of item keys contains duplicates")
			}
			seen[string(w.pk)] = true
			ws = append(ws, w)
		}
	}
	var staged bool
	err := e.locked(ws, nil, func() error { return e.commit(ws, e.metered(s, "BatchWriteItem", ws, 1, &staged, nil)) })
	if err != nil {
		return nil, err
	}
	var tally capTally
	for _, w := range ws {
		tally.addWrite(w.h.Table.Name, w.cost, 1)
	}
	out := &wire.BatchWriteItemOutput{
		UnprocessedItems: map[string][]wire.WriteRequest{},
		ConsumedCapacity: tally.report(in.ReturnConsumedCapacity),
	}
	out.U = tally.usage(true)
	out.U.Committed = staged
	if in.ReturnItemCollectionMetrics == "SIZE" {
		for _, w := range ws {
			if m := itemCollectionMetrics(w.h, "SIZE", w.key); m != nil {
				if out.ItemCollectionMetrics == nil {
					out.ItemCollectionMetrics = map[string][]wire.ItemCollectionMetrics{}
				}
				out.ItemCollectionMetrics[w.h.Table.Name] = append(out.ItemCollectionMetrics[w.h.Table.Name], *m)
			}
		}
	}
	return out, nil
}
