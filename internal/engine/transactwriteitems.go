package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// maxTransactItems is the limit of actions in one transaction.
const maxTransactItems = 100

// maxTransactBytes is DynamoDB's limit on the aggregate size of the items
// of one transaction.
//
// NB: counted on what the request carries (each Put's item, each other
// action's key), before any item is read; DynamoDB does not document
// whether an Update's result counts, and an update's result is held to
// the 400 KB item limit on its own.
const maxTransactBytes = 4 << 20

// txAction is one prepared action of a TransactWriteItems request.
type txAction struct {
	w        *itemWrite
	kind     string // "check", "put", "delete", "update"
	cond     expr.Condition
	upd      expr.Update
	item     attr.Item // put
	rvOnFail string
}

// TransactWriteItems applies up to 100 puts, updates, deletes and
// condition checks, on distinct items of one or more tables, all or
// nothing: every condition is evaluated with the locks of all items held
// and the writes are one storage batch. A ClientRequestToken makes the
// request idempotent for 10 minutes after it committed. Capacity is
// charged double. Errors: ValidationException,
// ResourceNotFoundException, TransactionCanceledException (Detail:
// *wire.TransactionCanceledDetail with one reason per action),
// IdempotentParameterMismatchException, AccessDeniedException.
func (e *Engine) TransactWriteItems(ctx context.Context, s tenancy.Scope, in *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := checkWriteOptions(in.ReturnConsumedCapacity, in.ReturnItemCollectionMetrics, ""); err != nil {
		return nil, err
	}
	n := len(in.TransactItems)
	if n == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must not be null")
	}
	if n > maxTransactItems {
		return nil, apierr.Validationf("1 validation error detected: Value '[...]' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", maxTransactItems)
	}
	var token string
	if in.ClientRequestToken != nil {
		token = *in.ClientRequestToken
		if len(token) < 1 || len(token) > 36 {
			return nil, apierr.Validationf("1 validation error detected: Value '%s' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36, Member must have length greater than or equal to 1", token)
		}
	}

	acts := make([]*txAction, 0, n)
	handles := map[string]*handle{}
	defer func() {
		for _, h := range handles {
			h.close()
		}
	}()
	seen := map[string]bool{}
	total := 0
	for _, ti := range in.TransactItems {
		a, err := e.prepareTx(ctx, s, ti, handles)
		if err != nil {
			return nil, err
		}
		if a.item != nil {
			total += attr.ItemSize(a.item)
		} else {
			total += attr.ItemSize(a.w.key)
		}
		if total > maxTransactBytes {
			return nil, apierr.Validationf("Transaction request cannot be larger than 4 MB")
		}
		if seen[string(a.w.pk)] {
			return nil, apierr.Validationf("Transaction request cannot include multiple operations on one item")
		}
		seen[string(a.w.pk)] = true
		acts = append(acts, a)
	}
	ws := make([]*itemWrite, len(acts))
	for i, a := range acts {
		ws[i] = a.w
	}

	ns := resolve.Namespace(s)
	var extra [][]byte
	var hash []byte
	if token != "" {
		extra = append(extra, tokenKey(ns, token))
		hash = txHash(in.TransactItems)
	}
	var tally capTally
	replayed, staged := false, false
	err := e.locked(ws, extra, func() error {
		if token != "" {
			rec, err := e.readToken(ns, token)
			if err != nil {
				return err
			}
			if rec != nil {
				if !bytes.Equal(rec.Hash, hash) {
					return apierr.New(apierr.IdempotentParameterMismatch, "The request uses the same client token as a previous, but non-identical request. Do not reuse a client token with different requests, unless the requests are identical.")
				}
				replayed = true
				return nil
			}
		}
		if err := e.decideTx(acts); err != nil {
			return err
		}
		var addToken func(b *storage.Batch) error
		if token != "" {
			addToken = func(b *storage.Batch) error {
				v, err := json.Marshal(tokenRecord{Hash: hash, Expires: e.opts.Now().Add(tokenTTL).UnixNano()})
				if err != nil {
					return apierr.Wrap(apierr.Internal, err, "encoding client request token")
				}
				b.Set(tokenKey(ns, token), v)
				return nil
			}
		}
		// NB: a condition check writes nothing and costs as a write of
		// the item it read; set before commit, which meters the costs.
		for _, a := range acts {
			if a.kind == "check" {
				size := 0
				if a.w.old != nil {
					size = attr.ItemSize(a.w.old)
				}
				a.w.cost = writeCost{table: writeUnits(size)}
			}
		}
		return e.commit(ws, e.metered(s, "TransactWriteItems", ws, 2, &staged, addToken))
	})
	if err != nil {
		return nil, err
	}
	for _, a := range acts {
		if replayed {
			// NB: a replay consumes read capacity in DynamoDB; charge one
			// read unit per item without re-reading anything.
			tally.addRead(a.w.h.Table.Name, 1)
			continue
		}
		tally.addWrite(a.w.h.Table.Name, a.w.cost, 2)
	}
	out := &wire.TransactWriteItemsOutput{ConsumedCapacity: tally.report(in.ReturnConsumedCapacity)}
	out.U = tally.usage(!replayed)
	out.U.Committed = staged
	if in.ReturnItemCollectionMetrics == "SIZE" {
		for _, a := range acts {
			if m := itemCollectionMetrics(a.w.h, "SIZE", a.w.key); m != nil {
				if out.ItemCollectionMetrics == nil {
					out.ItemCollectionMetrics = map[string][]wire.ItemCollectionMetrics{}
				}
				out.ItemCollectionMetrics[a.w.h.Table.Name] = append(out.ItemCollectionMetrics[a.w.h.Table.Name], *m)
			}
		}
	}
	return out, nil
}

// prepareTx validates and compiles one action.
func (e *Engine) prepareTx(ctx context.Context, s tenancy.Scope, ti wire.TransactWriteItem, handles map[string]*handle) (*txAction, error) {
	count := 0
	for _, set := range []bool{ti.ConditionCheck != nil, ti.Put != nil, ti.Delete != nil, ti.Update != nil} {
		if set {
			count++
		}
	}
	if count != 1 {
		return nil, apierr.Validationf("TransactItems can only contain one of Check, Put, Update or Delete")
	}
	var (
		table    string
		key      attr.Item
		names    map[string]string
		values   map[string]attr.Value
		ce       *string
		rvOnFail string
		a        = &txAction{}
	)
	switch {
	case ti.ConditionCheck != nil:
		c := ti.ConditionCheck
		a.kind, table, key, names, values, rvOnFail = "check", c.TableName, c.Key, c.ExpressionAttributeNames, c.ExpressionAttributeValues, c.ReturnValuesOnConditionCheckFailure
		ce = &c.ConditionExpression
	case ti.Put != nil:
		c := ti.Put
		a.kind, table, names, values, ce, rvOnFail = "put", c.TableName, c.ExpressionAttributeNames, c.ExpressionAttributeValues, c.ConditionExpression, c.ReturnValuesOnConditionCheckFailure
		a.item = c.Item
	case ti.Delete != nil:
		c := ti.Delete
		a.kind, table, key, names, values, ce, rvOnFail = "delete", c.TableName, c.Key, c.ExpressionAttributeNames, c.ExpressionAttributeValues, c.ConditionExpression, c.ReturnValuesOnConditionCheckFailure
	case ti.Update != nil:
		c := ti.Update
		a.kind, table, key, names, values, ce, rvOnFail = "update", c.TableName, c.Key, c.ExpressionAttributeNames, c.ExpressionAttributeValues, c.ConditionExpression, c.ReturnValuesOnConditionCheckFailure
	}
	if err := checkRVOnFailure(rvOnFail, "transactItems.member.returnValuesOnConditionCheckFailure"); err != nil {
		return nil, err
	}
	a.rvOnFail = rvOnFail
	exprs := []param{{"ConditionExpression", ce != nil}}
	if a.kind == "update" {
		exprs = append(exprs, param{"UpdateExpression", true})
	}
	if err := checkExprMix(exprs, nil, names != nil, values != nil); err != nil {
		return nil, err
	}
	p := expr.NewParams(names, values)
	var err error
	if a.kind == "update" {
		if a.upd, err = p.Update(ti.Update.UpdateExpression); err != nil {
			return nil, err
		}
	}
	if ce != nil {
		if a.cond, err = p.Condition(*ce); err != nil {
			return nil, err
		}
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	h := handles[table]
	if h == nil {
		if h, err = e.open(ctx, s, table); err != nil {
			return nil, err
		}
		handles[table] = h
	}
	if a.kind == "put" {
		if err := h.Table.ValidateItemKeys(a.item); err != nil {
			return nil, err
		}
		if err := checkItemSize(a.item, false); err != nil {
			return nil, err
		}
		if err := h.CheckItem(a.item); err != nil {
			return nil, err
		}
		key = h.Table.KeyOf(a.item)
	} else {
		if err := h.Table.ValidateKey(key); err != nil {
			return nil, err
		}
		if err := h.CheckKey(key); err != nil {
			return nil, err
		}
		if err := checkUpdateKeys(h.Table, a.upd); err != nil {
			return nil, err
		}
	}
	a.w = newWrite(h, key)
	return a, nil
}

// decideTx evaluates every action's condition and update on the locked
// items and sets the writes, or returns the TransactionCanceledException
// listing why each action failed (or "None").
func (e *Engine) decideTx(acts []*txAction) error {
	reasons := make([]wire.CancellationReason, len(acts))
	failed := false
	for i, a := range acts {
		reasons[i] = wire.CancellationReason{Code: "None"}
		ok, err := evalCondition(a.cond, a.w.old)
		if err != nil {
			reasons[i] = validationReason(err)
			failed = true
			continue
		}
		if !ok {
			reasons[i] = wire.CancellationReason{Code: "ConditionalCheckFailed", Message: "The conditional request failed"}
			if a.rvOnFail == rvAllOld && a.w.old != nil {
				reasons[i].Item = a.w.old
			}
			failed = true
			continue
		}
		switch a.kind {
		case "put":
			a.w.put, a.w.new = true, a.item
		case "delete":
			a.w.del = true
		case "update":
			nu, _, err := applyUpdate(a.w.h, a.upd, a.w.old, a.w.key)
			if err != nil {
				if apierr.KindOf(err) != apierr.Validation {
					return err
				}
				reasons[i] = validationReason(err)
				failed = true
				continue
			}
			if a.w.old == nil && deletesOnly(a.upd) {
				continue // creates nothing, as UpdateItem
			}
			a.w.put, a.w.new = true, nu
		}
	}
	if !failed {
		return nil
	}
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r.Code
	}
	err := apierr.New(apierr.TransactionCanceled, "Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", strings.Join(codes, ", "))
	err.Detail = &wire.TransactionCanceledDetail{CancellationReasons: reasons}
	return err
}

func validationReason(err error) wire.CancellationReason {
	msg := err.Error()
	if ae, ok := err.(*apierr.Error); ok {
		msg = ae.Message
	}
	return wire.CancellationReason{Code: "ValidationError", Message: msg}
}
