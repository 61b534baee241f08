package engine

import (
	"context"
	"sort"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// maxBatchGetBytes is BatchGetItem's response size limit.
const maxBatchGetBytes = 16 << 20

// BatchGetItem reads up to 100 items from one or more tables. Keys that
// would take the response past 16 MB are returned in UnprocessedKeys.
// Errors: ValidationException (also for duplicate keys),
// ResourceNotFoundException, AccessDeniedException.
func (e *Engine) BatchGetItem(ctx context.Context, s tenancy.Scope, in *wire.BatchGetItemInput) (*wire.BatchGetItemOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := checkConsumedMode(in.ReturnConsumedCapacity); err != nil {
		return nil, err
	}
	if len(in.RequestItems) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value '{}' at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	names := make([]string, 0, len(in.RequestItems))
	total := 0
	for name, ka := range in.RequestItems {
		names = append(names, name)
		if len(ka.Keys) == 0 || len(ka.Keys) > maxBatchGet {
			return nil, apierr.Validationf("1 validation error detected: Value at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must have length less than or equal to 100, Member must have length greater than or equal to 1", name)
		}
		total += len(ka.Keys)
	}
	if total > maxBatchGet {
		return nil, apierr.Validationf("Too many items requested for the BatchGetItem call")
	}
	sort.Strings(names)

	type tableReq struct {
		h          *handle
		proj       expr.Projection
		consistent bool
	}
	reqs := make(map[string]tableReq, len(names))
	for _, name := range names {
		ka := in.RequestItems[name]
		if err := checkExprMix(
			[]param{{"ProjectionExpression", ka.ProjectionExpression != nil}},
			[]param{{"AttributesToGet", ka.AttributesToGet != nil}},
			ka.ExpressionAttributeNames != nil, false); err != nil {
			return nil, err
		}
		p := expr.NewParams(ka.ExpressionAttributeNames, nil)
		proj, err := compileProjection(p, ka.ProjectionExpression, ka.AttributesToGet)
		if err != nil {
			return nil, err
		}
		if err := p.CheckUnused(); err != nil {
			return nil, err
		}
		h, err := e.open(ctx, s, name)
		defer h.close()
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, k := range ka.Keys {
			if err := h.Table.ValidateKey(k); err != nil {
				return nil, err
			}
			if err := h.CheckKey(k); err != nil {
				return nil, err
			}
			pk := string(itemKey(h.Table, h.Namespace, k))
			if seen[pk] {
				return nil, apierr.Validationf("Provided list of item keys contains duplicates")
			}
			seen[pk] = true
		}
		reqs[name] = tableReq{h: h, proj: proj, consistent: ka.ConsistentRead != nil && *ka.ConsistentRead}
	}

	out := &wire.BatchGetItemOutput{
		Responses:       make(map[string][]wire.Item, len(names)),
		UnprocessedKeys: map[string]wire.KeysAndAttributes{},
	}
	var tally capTally
	size := 0
	full := false
	for _, name := range names {
		r := reqs[name]
		ka := in.RequestItems[name]
		out.Responses[name] = []wire.Item{}
		for i, k := range ka.Keys {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if full {
				rest := ka
				rest.Keys = append([]wire.Item(nil), ka.Keys[i:]...)
				out.UnprocessedKeys[name] = rest
				break
			}
			item, err := r.h.getItem(k)
			if err != nil {
				return nil, err
			}
			n := 0
			if item != nil {
				n = attr.ItemSize(item)
			}
			if size+n > maxBatchGetBytes {
				full = true
				rest := ka
				rest.Keys = append([]wire.Item(nil), ka.Keys[i:]...)
				out.UnprocessedKeys[name] = rest
				break
			}
			size += n
			tally.addRead(name, readUnits(n, r.consistent))
			if item == nil {
				continue
			}
			if r.proj != nil {
				item = r.proj.Apply(item)
			}
			out.Responses[name] = append(out.Responses[name], item)
		}
	}
	out.ConsumedCapacity = tally.report(in.ReturnConsumedCapacity)
	out.U = tally.usage(false)
	return out, nil
}
