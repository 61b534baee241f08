package engine

import (
	"context"
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TransactGetItems reads up to 100 items as of one instant: all reads of a
// store use one storage snapshot, and transactions commit as single
// batches, so a TransactGetItems never sees part of a transaction.
// Capacity is charged double. Errors: ValidationException,
// ResourceNotFoundException, AccessDeniedException.
func (e *Engine) TransactGetItems(ctx context.Context, s tenancy.Scope, in *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := checkConsumedMode(in.ReturnConsumedCapacity); err != nil {
		return nil, err
	}
	n := len(in.TransactItems)
	if n == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must not be null")
	}
	if n > maxTransactItems {
		return nil, apierr.Validationf("1 validation error detected: Value '[...]' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", maxTransactItems)
	}
	type get struct {
		h    *handle
		pk   []byte
		proj expr.Projection
	}
	gets := make([]get, 0, n)
	handles := map[string]*handle{}
	defer func() {
		for _, h := range handles {
			h.close()
		}
	}()
	for i, ti := range in.TransactItems {
		g := ti.Get
		if g == nil {
			return nil, apierr.Validationf("1 validation error detected: Value null at 'transactItems.%d.member.get' failed to satisfy constraint: Member must not be null", i+1)
		}
		if err := checkExprMix([]param{{"ProjectionExpression", g.ProjectionExpression != nil}}, nil, g.ExpressionAttributeNames != nil, false); err != nil {
			return nil, err
		}
		p := expr.NewParams(g.ExpressionAttributeNames, nil)
		proj, err := compileProjection(p, g.ProjectionExpression, nil)
		if err != nil {
			return nil, err
		}
		if err := p.CheckUnused(); err != nil {
			return nil, err
		}
		h := handles[g.TableName]
		if h == nil {
			if h, err = e.open(ctx, s, g.TableName); err != nil {
				return nil, err
			}
			handles[g.TableName] = h
		}
		if err := h.Table.ValidateKey(g.Key); err != nil {
			return nil, err
		}
		if err := h.CheckKey(g.Key); err != nil {
			return nil, err
		}
		gets = append(gets, get{h: h, pk: itemKey(h.Table, h.Namespace, g.Key), proj: proj})
	}

	snaps := map[*storage.DB]*storage.Snapshot{}
	defer func() {
		for _, sn := range snaps {
			sn.Close()
		}
	}()
	for _, g := range gets {
		if snaps[g.h.db] == nil {
			snaps[g.h.db] = g.h.db.NewSnapshot()
		}
	}
	out := &wire.TransactGetItemsOutput{Responses: make([]wire.ItemResponse, len(gets))}
	var tally capTally
	for i, g := range gets {
		v, err := snaps[g.h.db].Get(g.pk)
		if errors.Is(err, storage.ErrNotFound) {
			tally.addRead(g.h.Table.Name, 2*readUnits(0, true))
			continue
		}
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading item")
		}
		item, err := g.h.vals.decode(g.pk, v)
		if err != nil {
			return nil, err
		}
		tally.addRead(g.h.Table.Name, 2*readUnits(attr.ItemSize(item), true))
		if g.proj != nil {
			item = g.proj.Apply(item)
		}
		out.Responses[i].Item = item
	}
	out.ConsumedCapacity = tally.report(in.ReturnConsumedCapacity)
	out.U = tally.usage(false)
	return out, nil
}
