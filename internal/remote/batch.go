package remote

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// split divides a multi-table operation's units between its tables in
// proportion to the items each had (the engine reports one total for its
// one table).
func split(total float64, items map[string]int, write bool) wire.Usage {
	u := wire.Usage{}
	if write {
		u.WriteUnits = total
	} else {
		u.ReadUnits = total
	}
	names := make([]string, 0, len(items))
	n := 0
	for t, c := range items {
		names = append(names, t)
		n += c
	}
	slices.Sort(names)
	if len(names) == 0 {
		return u
	}
	u.Table = names[0]
	if len(names) == 1 || n == 0 {
		return u
	}
	for _, t := range names {
		u.PerTable = append(u.PerTable, wire.TableUnits{Table: t, Units: total * float64(items[t]) / float64(n)})
	}
	return u
}

func physID(k map[string]types.AttributeValue) string {
	pk, _ := k[attrPK].(*types.AttributeValueMemberS)
	sk, _ := k[attrSK].(*types.AttributeValueMemberB)
	if pk == nil || sk == nil {
		return ""
	}
	return pk.Value + "\x00" + string(sk.Value)
}

// BatchGetItem is one engine BatchGetItem per logical table (their
// projections differ, and they share one engine table).
func (b *Backend) BatchGetItem(ctx context.Context, s tenancy.Scope, in *wire.BatchGetItemInput) (*wire.BatchGetItemOutput, error) {
	if len(in.RequestItems) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	n := 0
	for _, ka := range in.RequestItems {
		n += len(ka.Keys)
	}
	if n > 100 {
		return nil, apierr.Validationf("Too many items requested for the BatchGetItem call")
	}
	type req struct {
		p  place
		in *dynamodb.BatchGetItemInput
	}
	var reqs []req
	var moving []movingGet
	names := slices.Sorted(func(yield func(string) bool) {
		for t := range in.RequestItems {
			if !yield(t) {
				return
			}
		}
	})
	for _, table := range names {
		ka := in.RequestItems[table]
		p, err := b.open(ctx, s, table)
		if err != nil {
			return nil, err
		}
		if err := checkPlaceholders(ka.ExpressionAttributeNames, nil); err != nil {
			return nil, err
		}
		pe, exprNames, err := projection(ka.AttributesToGet, ka.ProjectionExpression, ka.ExpressionAttributeNames)
		if err != nil {
			return nil, err
		}
		kas := types.KeysAndAttributes{ConsistentRead: ka.ConsistentRead, ExpressionAttributeNames: exprNames}
		if pe != nil && *pe != "" {
			// The physical key comes back too, to match unprocessed keys.
			kas.ProjectionExpression = aws.String(*pe + ", #tenantdb_p, #tenantdb_s")
			kas.ExpressionAttributeNames = map[string]string{"#tenantdb_p": attrPK, "#tenantdb_s": attrSK}
			for k, v := range exprNames {
				kas.ExpressionAttributeNames[k] = v
			}
		}
		var mv []attr.Item
		for _, k := range ka.Keys {
			pk, err := p.key(k)
			if err != nil {
				return nil, err
			}
			if len(p.keyPKs(k[p.tg.Table.Hash.Name])) > 1 {
				mv = append(mv, k) // read where it is (move.go)
				continue
			}
			kas.Keys = append(kas.Keys, pk)
		}
		if len(mv) > 0 {
			moving = append(moving, movingGet{p: p, keys: mv, pe: pe, names: exprNames, consistent: aws.ToBool(ka.ConsistentRead)})
		}
		if len(kas.Keys) == 0 {
			continue
		}
		reqs = append(reqs, req{p, &dynamodb.BatchGetItemInput{
			RequestItems:           map[string]types.KeysAndAttributes{b.table: kas},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		}})
	}
	out := &wire.BatchGetItemOutput{Responses: map[string][]wire.Item{}, UnprocessedKeys: map[string]wire.KeysAndAttributes{}}
	var total float64
	counts := map[string]int{}
	for _, r := range reqs {
		table := r.p.tg.Table.Name
		res, err := b.db.BatchGetItem(ctx, r.in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		items := []wire.Item{}
		for _, it := range res.Responses[b.table] {
			items = append(items, strip(it))
		}
		out.Responses[table] = items
		counts[table] = len(r.in.RequestItems[b.table].Keys)
		for _, cc := range res.ConsumedCapacity {
			total += aws.ToFloat64(cc.CapacityUnits)
			if c := capacity(&cc, table, in.ReturnConsumedCapacity); c != nil {
				out.ConsumedCapacity = append(out.ConsumedCapacity, *c)
			}
		}
		if un, ok := res.UnprocessedKeys[b.table]; ok && len(un.Keys) > 0 {
			ka := in.RequestItems[table]
			ka.Keys = nil
			for _, k := range un.Keys {
				lk, err := r.p.logicalKey(k)
				if err != nil {
					return nil, err
				}
				ka.Keys = append(ka.Keys, lk)
			}
			out.UnprocessedKeys[table] = ka
		}
	}
	for _, m := range moving {
		table := m.p.tg.Table.Name
		if out.Responses[table] == nil {
			out.Responses[table] = []wire.Item{}
		}
		for _, k := range m.keys {
			_, raw, u, err := b.locate(ctx, m.p, k, m.p.keyPKs(k[m.p.tg.Table.Hash.Name]), m.consistent)
			if err != nil {
				return nil, err
			}
			total += u
			counts[table]++
			if raw == nil {
				continue
			}
			item := strip(raw)
			if m.pe != nil && *m.pe != "" {
				proj, err := expr.NewParams(m.names, nil).Projection(*m.pe)
				if err != nil {
					return nil, err
				}
				item = proj.Apply(item)
			}
			out.Responses[table] = append(out.Responses[table], item)
		}
	}
	out.U = split(total, counts, false)
	return out, nil
}

// movingGet is a BatchGetItem's keys of items whose shard is changing.
type movingGet struct {
	p          place
	keys       []attr.Item
	pe         *string
	names      map[string]string
	consistent bool
}

// BatchWriteItem is one engine BatchWriteItem: every logical table's
// writes go to the one engine table.
func (b *Backend) BatchWriteItem(ctx context.Context, s tenancy.Scope, in *wire.BatchWriteItemInput) (*wire.BatchWriteItemOutput, error) {
	if len(in.RequestItems) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	type origin struct {
		table string
		p     place
	}
	from := map[string]origin{}
	var reqs []types.WriteRequest
	type movingW struct {
		p   place
		pks []string
		m   mutation
	}
	var moving []movingW
	counts := map[string]int{}
	for table, ws := range in.RequestItems {
		p, err := b.openW(ctx, s, table)
		if err != nil {
			return nil, err
		}
		counts[table] = len(ws)
		for _, w := range ws {
			var r types.WriteRequest
			var id string
			switch {
			case w.PutRequest != nil && w.DeleteRequest == nil:
				it, err := p.item(w.PutRequest.Item)
				if err != nil {
					return nil, err
				}
				r.PutRequest = &types.PutRequest{Item: it}
				id = physID(it)
			case w.DeleteRequest != nil && w.PutRequest == nil:
				k, err := p.key(w.DeleteRequest.Key)
				if err != nil {
					return nil, err
				}
				r.DeleteRequest = &types.DeleteRequest{Key: k}
				id = physID(k)
			default:
				return nil, apierr.Validationf("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
			}
			if _, dup := from[id]; dup {
				return nil, apierr.Validationf("Provided list of item keys contains duplicates")
			}
			from[id] = origin{table, p}
			if w.PutRequest != nil {
				if pks := p.keyPKs(w.PutRequest.Item[p.tg.Table.Hash.Name]); len(pks) > 1 {
					it := w.PutRequest.Item
					moving = append(moving, movingW{p, pks, mutation{key: it, compute: func(attr.Item) (attr.Item, error) { return it, nil }}})
					continue
				}
			} else if pks := p.keyPKs(w.DeleteRequest.Key[p.tg.Table.Hash.Name]); len(pks) > 1 {
				moving = append(moving, movingW{p, pks, mutation{key: w.DeleteRequest.Key, compute: func(attr.Item) (attr.Item, error) { return nil, nil }}})
				continue
			}
			reqs = append(reqs, r)
		}
	}
	if len(reqs)+len(moving) > 25 {
		return nil, apierr.Validationf("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]")
	}
	var total float64
	for _, m := range moving { // items whose shard is changing (move.go)
		w, err := b.movingWrite(ctx, m.p, m.pks, m.m)
		if err != nil {
			return nil, err
		}
		total += w.units
	}
	res := &dynamodb.BatchWriteItemOutput{}
	if len(reqs) > 0 {
		var err error
		res, err = b.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems:           map[string][]types.WriteRequest{b.table: reqs},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, o := range from {
			b.meterDrift(o.p.tg) // no old items: recounted (storage.go)
		}
	}
	out := &wire.BatchWriteItemOutput{UnprocessedItems: map[string][]wire.WriteRequest{}}
	for _, r := range res.UnprocessedItems[b.table] {
		switch {
		case r.PutRequest != nil:
			o := from[physID(r.PutRequest.Item)]
			out.UnprocessedItems[o.table] = append(out.UnprocessedItems[o.table], wire.WriteRequest{PutRequest: &wire.PutRequest{Item: strip(r.PutRequest.Item)}})
		case r.DeleteRequest != nil:
			o := from[physID(r.DeleteRequest.Key)]
			k, err := o.p.logicalKey(r.DeleteRequest.Key)
			if err != nil {
				return nil, err
			}
			out.UnprocessedItems[o.table] = append(out.UnprocessedItems[o.table], wire.WriteRequest{DeleteRequest: &wire.DeleteRequest{Key: k}})
		}
	}
	for _, cc := range res.ConsumedCapacity {
		total += aws.ToFloat64(cc.CapacityUnits)
	}
	if in.ReturnConsumedCapacity == "TOTAL" || in.ReturnConsumedCapacity == "INDEXES" {
		u := split(total, counts, true)
		u.EachTable(func(table string, _, w float64) {
			cc := wire.ConsumedCapacity{TableName: table, CapacityUnits: w}
			if in.ReturnConsumedCapacity == "INDEXES" {
				cc.Table = &wire.Capacity{CapacityUnits: w}
			}
			out.ConsumedCapacity = append(out.ConsumedCapacity, cc)
		})
	}
	out.U = split(total, counts, true)
	return out, nil
}

// requestToken scopes a ClientRequestToken to the tenant environment and
// the tables the transaction writes: the engine's idempotency is per
// account, and tenants share the account (and a tenant created again
// with a deleted one's id has new tables).
func requestToken(ns, life []byte, tables []uint64, token *string) *string {
	if token == nil {
		return nil
	}
	slices.Sort(tables)
	h := sha256.New()
	h.Write(ns)
	h.Write([]byte{0})
	h.Write(life)
	for _, t := range slices.Compact(tables) {
		h.Write(binary.BigEndian.AppendUint64(nil, t))
	}
	h.Write([]byte(*token))
	return aws.String(hex.EncodeToString(h.Sum(nil))[:36])
}

// TransactWriteItems is the engine's TransactWriteItems: one engine
// transaction, serializable across gateways.
func (b *Backend) TransactWriteItems(ctx context.Context, s tenancy.Scope, in *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error) {
	if len(in.TransactItems) == 0 || len(in.TransactItems) > 100 {
		return nil, apierr.Validationf("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100, Member must have length greater than or equal to 1")
	}
	items := make([]types.TransactWriteItem, len(in.TransactItems))
	comp := make([]*computed, len(in.TransactItems)) // updates the gateway computed
	counts := map[string]int{}
	var ns []byte
	var tableIDs []uint64
	var moving []*movingTx // by item; their extra actions follow the items
	var extras []types.TransactWriteItem
	var owners []int
	var written []resolve.Target
	for i, ti := range in.TransactItems {
		var err error
		var table string
		mv, err := b.txMoving(ctx, s, ti)
		if err != nil {
			return nil, err
		}
		if mv != nil {
			if moving == nil {
				moving = make([]*movingTx, len(in.TransactItems))
			}
			moving[i] = mv
			items[i] = mv.plan.acts[0]
			for _, a := range mv.plan.acts[1:] {
				extras = append(extras, a)
				owners = append(owners, i)
			}
			table, ns = mv.table, mv.p.tg.Namespace
			written = append(written, mv.p.tg)
			counts[table]++
			tableIDs = append(tableIDs, mv.p.tg.Table.ID)
			continue
		}
		switch {
		case ti.Put != nil:
			table = ti.Put.TableName
			items[i], ns, err = b.txPut(ctx, s, ti.Put)
		case ti.Delete != nil:
			table = ti.Delete.TableName
			items[i], ns, err = b.txDelete(ctx, s, ti.Delete)
		case ti.Update != nil:
			table = ti.Update.TableName
			items[i], ns, comp[i], err = b.txUpdate(ctx, s, ti.Update)
		case ti.ConditionCheck != nil:
			table = ti.ConditionCheck.TableName
			items[i], ns, err = b.txCheck(ctx, s, ti.ConditionCheck)
		default:
			return nil, apierr.Validationf("TransactItems can only contain one of Check, Put, Update or Delete")
		}
		if err != nil {
			return nil, err
		}
		counts[table]++
		tg, err := b.res.Open(ctx, s, table)
		if err != nil {
			return nil, err
		}
		tableIDs = append(tableIDs, tg.Table.ID)
		if ti.ConditionCheck == nil {
			written = append(written, tg)
		}
	}
	var life []byte
	if in.ClientRequestToken != nil {
		var err error
		if life, err = b.incarnation(ctx, ns); err != nil {
			return nil, err
		}
	}
	if len(items)+len(extras) > 100 {
		return nil, apierr.New(apierr.ProvisionedThroughputExceeded, "The table's shard count is changing: this transaction's items that move need %d engine actions, more than 100; retry when the change ends", len(items)+len(extras))
	}
	res, err := b.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:          append(items, extras...),
		ClientRequestToken:     requestToken(ns, life, tableIDs, in.ClientRequestToken),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, engineErr(movingTxErr(txErr(err, in, comp), in, moving, owners), strip)
	}
	b.meterDrift(written...) // no old items: recounted (storage.go)
	var total float64
	for _, cc := range res.ConsumedCapacity {
		total += aws.ToFloat64(cc.CapacityUnits)
	}
	out := &wire.TransactWriteItemsOutput{}
	u := split(total, counts, true)
	if in.ReturnConsumedCapacity == "TOTAL" || in.ReturnConsumedCapacity == "INDEXES" {
		u.EachTable(func(table string, _, w float64) {
			out.ConsumedCapacity = append(out.ConsumedCapacity, wire.ConsumedCapacity{TableName: table, CapacityUnits: w})
		})
	}
	out.U = u
	return out, nil
}

func (b *Backend) txPut(ctx context.Context, s tenancy.Scope, in *wire.TransactPut) (types.TransactWriteItem, []byte, error) {
	p, err := b.openW(ctx, s, in.TableName)
	if err != nil {
		return types.TransactWriteItem{}, nil, err
	}
	it, err := p.item(in.Item)
	if err == nil {
		err = checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	}
	if err == nil {
		err = p.notMoving(in.Item)
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName: &b.table, Item: it, ConditionExpression: str(in.ConditionExpression),
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: toValues(in.ExpressionAttributeValues),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure),
	}}, p.tg.Namespace, err
}

func (b *Backend) txDelete(ctx context.Context, s tenancy.Scope, in *wire.TransactDelete) (types.TransactWriteItem, []byte, error) {
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return types.TransactWriteItem{}, nil, err
	}
	k, err := p.key(in.Key)
	if err == nil {
		err = checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	}
	if err == nil {
		err = p.notMoving(in.Key)
	}
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: &b.table, Key: k, ConditionExpression: str(in.ConditionExpression),
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: toValues(in.ExpressionAttributeValues),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure),
	}}, p.tg.Namespace, err
}

func (b *Backend) txUpdate(ctx context.Context, s tenancy.Scope, in *wire.TransactUpdate) (types.TransactWriteItem, []byte, *computed, error) {
	p, err := b.openW(ctx, s, in.TableName)
	if err != nil {
		return types.TransactWriteItem{}, nil, nil, err
	}
	k, err := p.key(in.Key)
	if err != nil {
		return types.TransactWriteItem{}, nil, nil, err
	}
	if err := checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil {
		return types.TransactWriteItem{}, nil, nil, err
	}
	if err := p.notMoving(in.Key); err != nil {
		return types.TransactWriteItem{}, nil, nil, err
	}
	upd, names, values, err := p.update(in.Key, in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err == errIndexKey {
		// Computed by the gateway: a put over the version read (update.go).
		c, err := b.compute(ctx, p, k, in.Key, in.UpdateExpression, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
		if err != nil {
			return types.TransactWriteItem{}, nil, nil, err
		}
		return types.TransactWriteItem{Put: &types.Put{
			TableName: &b.table, Item: c.put, ConditionExpression: &c.cond,
			ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}, p.tg.Namespace, c, nil
	}
	if err != nil {
		return types.TransactWriteItem{}, nil, nil, err
	}
	if deletesOnlyUpdate(in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues) {
		return b.txDeletesOnly(ctx, k, upd, names, values, in, p.tg.Namespace)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &b.table, Key: k, UpdateExpression: &upd, ConditionExpression: str(in.ConditionExpression),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure),
	}}, p.tg.Namespace, nil, nil
}

// txDeletesOnly serves a transaction's update that only removes
// attributes or deletes from sets. DynamoDB applies it to a missing item
// by creating nothing, which the gateway's SET of the key attributes
// would not: it reads the item, and if it is missing the action becomes
// a check of the client's condition on the missing item (which must stay
// missing), else the update requires the item to exist. An item created
// or deleted in between cancels the transaction with TransactionConflict
// (txErr, as for the updates the gateway computes), which clients retry.
func (b *Backend) txDeletesOnly(ctx context.Context, k map[string]types.AttributeValue, upd string, names map[string]string, values map[string]types.AttributeValue,
	in *wire.TransactUpdate, ns []byte) (types.TransactWriteItem, []byte, *computed, error) {
	got, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return types.TransactWriteItem{}, nil, nil, engineErr(err, strip)
	}
	c := &computed{exists: got.Item != nil}
	if v, ok := got.Item[attrVersion].(*types.AttributeValueMemberB); ok {
		c.ver = v.Value
	}
	ph := phPrefixName + "e"
	if c.exists {
		cond := "attribute_exists(" + ph + ")"
		if in.ConditionExpression != nil {
			cond = "(" + *in.ConditionExpression + ") AND " + cond
		}
		names[ph] = attrPK
		return types.TransactWriteItem{Update: &types.Update{
			TableName: &b.table, Key: k, UpdateExpression: &upd, ConditionExpression: &cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}, ns, c, nil
	}
	// An invalid path is refused as on an existing item (the embedded
	// engine applies the update to the empty item).
	u, err := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues).Update(in.UpdateExpression)
	if err != nil {
		return types.TransactWriteItem{}, nil, nil, err
	}
	if _, _, err := u.Apply(attr.Item{}); err != nil {
		return types.TransactWriteItem{}, nil, nil, err
	}
	cond := "attribute_not_exists(" + ph + ")"
	if in.ConditionExpression != nil {
		cond = "(" + *in.ConditionExpression + ") AND " + cond
	}
	cn, cv := keep(in.ExpressionAttributeNames, in.ExpressionAttributeValues, &cond)
	cn[ph] = attrPK
	if len(cv) == 0 {
		cv = nil
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &b.table, Key: k, ConditionExpression: &cond,
		ExpressionAttributeNames: cn, ExpressionAttributeValues: cv,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, ns, c, nil
}

// txErr corrects the cancellation reasons of updates the gateway
// computed, before they are converted: a version that moved under one is
// a conflict with a concurrent write (TransactionConflict, which clients
// retry), not the client's condition failing; and the old item the
// gateway asked for is the client's only if it asked for it too.
func txErr(err error, in *wire.TransactWriteItemsInput, comp []*computed) error {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return err
	}
	for i, c := range comp {
		if c == nil || i >= len(tce.CancellationReasons) {
			continue
		}
		r := &tce.CancellationReasons[i]
		if aws.ToString(r.Code) != "ConditionalCheckFailed" {
			continue
		}
		if c.moved(r.Item) {
			*r = types.CancellationReason{Code: aws.String("TransactionConflict"), Message: aws.String("Transaction is ongoing for the item")}
			continue
		}
		if in.TransactItems[i].Update.ReturnValuesOnConditionCheckFailure != "ALL_OLD" {
			r.Item = nil
		}
	}
	return err
}

func (b *Backend) txCheck(ctx context.Context, s tenancy.Scope, in *wire.ConditionCheck) (types.TransactWriteItem, []byte, error) {
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		return types.TransactWriteItem{}, nil, err
	}
	k, err := p.key(in.Key)
	if err == nil {
		err = checkPlaceholders(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	}
	if err == nil {
		err = p.notMoving(in.Key)
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &b.table, Key: k, ConditionExpression: aws.String(in.ConditionExpression),
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: toValues(in.ExpressionAttributeValues),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure),
	}}, p.tg.Namespace, err
}

// movingTx is a transaction's item whose shard is changing (move.go).
type movingTx struct {
	p       place
	table   string
	plan    *movingPlan
	wantOld bool // ReturnValuesOnConditionCheckFailure ALL_OLD
}

// txMoving plans transaction item ti if its shard is changing (nil if
// not), after the validation the item gets otherwise.
func (b *Backend) txMoving(ctx context.Context, s tenancy.Scope, ti wire.TransactWriteItem) (*movingTx, error) {
	var (
		p     place
		err   error
		key   attr.Item
		m     mutation
		check bool
		table string
		old   string
	)
	switch {
	case ti.Put != nil:
		in := ti.Put
		if p, err = b.openW(ctx, s, in.TableName); err != nil {
			return nil, err
		}
		if _, err = p.item(in.Item); err != nil {
			return nil, err
		}
		key, table, old = in.Item, in.TableName, in.ReturnValuesOnConditionCheckFailure
		m = mutation{key: in.Item, compute: func(attr.Item) (attr.Item, error) { return in.Item, nil },
			cond: str(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	case ti.Delete != nil:
		in := ti.Delete
		if p, err = b.open(ctx, s, in.TableName); err != nil {
			return nil, err
		}
		if _, err = p.key(in.Key); err != nil {
			return nil, err
		}
		key, table, old = in.Key, in.TableName, in.ReturnValuesOnConditionCheckFailure
		m = mutation{key: in.Key, compute: func(attr.Item) (attr.Item, error) { return nil, nil },
			cond: str(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	case ti.Update != nil:
		in := ti.Update
		if p, err = b.openW(ctx, s, in.TableName); err != nil {
			return nil, err
		}
		if _, err = p.key(in.Key); err != nil {
			return nil, err
		}
		if _, _, _, err := p.update(in.Key, in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues); err != nil && err != errIndexKey {
			return nil, err
		}
		key, table, old = in.Key, in.TableName, in.ReturnValuesOnConditionCheckFailure
		var paths []expr.Path
		if m, err = updateMutation(&wire.UpdateItemInput{Key: in.Key, UpdateExpression: &in.UpdateExpression, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}, &paths); err != nil {
			return nil, err
		}
	case ti.ConditionCheck != nil:
		in := ti.ConditionCheck
		if p, err = b.open(ctx, s, in.TableName); err != nil {
			return nil, err
		}
		if _, err = p.key(in.Key); err != nil {
			return nil, err
		}
		key, table, old, check = in.Key, in.TableName, in.ReturnValuesOnConditionCheckFailure, true
		m = mutation{key: in.Key, cond: aws.String(in.ConditionExpression), names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	default:
		return nil, nil // refused by the caller
	}
	if err := checkPlaceholders(m.names, m.values); err != nil {
		return nil, err
	}
	pks := p.keyPKs(key[p.tg.Table.Hash.Name])
	if len(pks) < 2 {
		return nil, nil
	}
	plan, err := b.planMoving(ctx, p, pks, m, check)
	if err != nil {
		return nil, err
	}
	return &movingTx{p: p, table: table, plan: plan, wantOld: old == "ALL_OLD"}, nil
}

// movingTxErr maps the cancellation reasons of a transaction with items
// whose shard is changing back onto the client's items: a guard that
// failed (the item was written or moved since it was read) or an extra
// action that failed is a TransactionConflict, which clients retry; the
// client's own condition failing keeps its reason, with the old item
// only if the client asked for it.
func movingTxErr(err error, in *wire.TransactWriteItemsInput, moving []*movingTx, owners []int) error {
	var tce *types.TransactionCanceledException
	if moving == nil || !errors.As(err, &tce) {
		return err
	}
	n := len(in.TransactItems)
	conflict := types.CancellationReason{Code: aws.String("TransactionConflict"), Message: aws.String("Transaction is ongoing for the item")}
	rs := tce.CancellationReasons
	for i, mv := range moving {
		if mv == nil || i >= len(rs) || aws.ToString(rs[i].Code) != "ConditionalCheckFailed" {
			continue
		}
		if changed(mv.plan.raw, rs[i].Item) {
			rs[i] = conflict
			continue
		}
		rs[i].Item = nil
		if mv.wantOld && mv.plan.raw != nil {
			rs[i].Item = cloneRaw(mv.plan.raw)
		}
	}
	for j, owner := range owners {
		if n+j < len(rs) && owner < len(rs) {
			if c := aws.ToString(rs[n+j].Code); c != "" && c != "None" && (rs[owner].Code == nil || aws.ToString(rs[owner].Code) == "None") {
				rs[owner] = conflict
			}
		}
	}
	if len(rs) > n {
		rs = rs[:n]
		tce.CancellationReasons = rs
	}
	// The engine's message lists its own reasons: say the client's.
	codes := make([]string, len(rs))
	for i, r := range rs {
		if codes[i] = aws.ToString(r.Code); codes[i] == "" {
			codes[i] = "None"
		}
	}
	tce.Message = aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]")
	return err
}

// TransactGetItems is the engine's TransactGetItems.
func (b *Backend) TransactGetItems(ctx context.Context, s tenancy.Scope, in *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error) {
	if len(in.TransactItems) == 0 || len(in.TransactItems) > 100 {
		return nil, apierr.Validationf("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100, Member must have length greater than or equal to 1")
	}
	items := make([]types.TransactGetItem, len(in.TransactItems))
	var extras []types.TransactGetItem // the new partitions of items that move
	var owners []int
	counts := map[string]int{}
	for i, ti := range in.TransactItems {
		if ti.Get == nil {
			return nil, apierr.Validationf("1 validation error detected: Value null at 'transactItems.%d.member.get' failed to satisfy constraint: Member must not be null", i+1)
		}
		p, err := b.open(ctx, s, ti.Get.TableName)
		if err != nil {
			return nil, err
		}
		k, err := p.key(ti.Get.Key)
		if err != nil {
			return nil, err
		}
		if err := checkPlaceholders(ti.Get.ExpressionAttributeNames, nil); err != nil {
			return nil, err
		}
		counts[ti.Get.TableName]++
		items[i] = types.TransactGetItem{Get: &types.Get{TableName: &b.table, Key: k,
			ProjectionExpression: str(ti.Get.ProjectionExpression), ExpressionAttributeNames: ti.Get.ExpressionAttributeNames}}
		if pks := p.keyPKs(ti.Get.Key[p.tg.Table.Hash.Name]); len(pks) > 1 {
			// The item's shard is changing: it is in one of its two
			// partitions, and the transaction reads both atomically.
			k[attrPK] = &types.AttributeValueMemberS{Value: pks[0]}
			k2 := map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: pks[1]}, attrSK: k[attrSK]}
			extras = append(extras, types.TransactGetItem{Get: &types.Get{TableName: &b.table, Key: k2,
				ProjectionExpression: str(ti.Get.ProjectionExpression), ExpressionAttributeNames: ti.Get.ExpressionAttributeNames}})
			owners = append(owners, i)
		}
	}
	if len(items)+len(extras) > 100 {
		return nil, apierr.New(apierr.ProvisionedThroughputExceeded, "The table's shard count is changing: this transaction's items that move need %d engine reads, more than 100; retry when the change ends", len(items)+len(extras))
	}
	res, err := b.db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: append(items, extras...), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	out := &wire.TransactGetItemsOutput{Responses: make([]wire.ItemResponse, len(items))}
	for i, r := range res.Responses {
		if i < len(items) {
			out.Responses[i] = wire.ItemResponse{Item: strip(r.Item)}
		} else if o := owners[i-len(items)]; r.Item != nil {
			out.Responses[o] = wire.ItemResponse{Item: strip(r.Item)}
		}
	}
	var total float64
	for _, cc := range res.ConsumedCapacity {
		total += aws.ToFloat64(cc.CapacityUnits)
	}
	u := split(total, counts, false)
	if in.ReturnConsumedCapacity == "TOTAL" || in.ReturnConsumedCapacity == "INDEXES" {
		u.EachTable(func(table string, r, _ float64) {
			out.ConsumedCapacity = append(out.ConsumedCapacity, wire.ConsumedCapacity{TableName: table, CapacityUnits: r})
		})
	}
	out.U = u
	return out, nil
}
