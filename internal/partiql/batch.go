package partiql

import (
	"context"
	"errors"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DynamoDB's limits on the statements of one request.
const (
	maxBatch       = 25
	maxTransaction = 100
)

func errCount(member string, n, limit int) error {
	if n < 1 {
		return invalid("1 validation error detected: Value at '%s' failed to satisfy constraint: Member must have length greater than or equal to 1", member)
	}
	return invalid("1 validation error detected: Value at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", member, limit)
}

func checkConsumed(m string) error {
	switch m {
	case "", "NONE", "TOTAL", "INDEXES":
		return nil
	}
	return invalid("1 validation error detected: Value '%s' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]", apierr.Clip(m))
}

// errMixed refuses a batch or transaction of reads and writes together.
func errMixed(what string) error {
	return invalid("%s must consist of either read statements or write statements, not both", what)
}

// BatchExecuteStatement runs up to 25 statements, all reads (SELECTs
// naming an item's full key) or all writes, each on its own: a failing
// statement fails alone, with its error in its response. Request-level
// errors are ValidationExceptions.
func BatchExecuteStatement(ctx context.Context, s tenancy.Scope, b Items, in *wire.BatchExecuteStatementInput) (*wire.BatchExecuteStatementOutput, error) {
	n := len(in.Statements)
	if n < 1 || n > maxBatch {
		return nil, errCount("statements", n, maxBatch)
	}
	if err := checkConsumed(in.ReturnConsumedCapacity); err != nil {
		return nil, err
	}
	out := &wire.BatchExecuteStatementOutput{Responses: make([]wire.BatchStatementResponse, n)}
	plans := make([]*Plan, n)
	var reads, writes bool
	for i, r := range in.Statements {
		st, plan, _, err := prepare(ctx, s, b, r.Statement, r.Parameters)
		if err == nil {
			switch {
			case plan.Check != nil:
				err = invalid("EXISTS is supported only in ExecuteTransaction")
			case plan.IsRead() && plan.Get == nil:
				err = invalid("Batch read statements must specify an equality condition on all key attributes")
			}
		}
		if err != nil {
			out.Responses[i].Error = batchError(err)
			if apierr.Is(err, apierr.AccessDenied) {
				out.Denied = append(out.Denied, message(err))
			}
			if st != nil {
				out.Responses[i].TableName = TableOf(st)
			}
			continue
		}
		plans[i] = plan
		out.Responses[i].TableName = plan.Table()
		reads = reads || plan.IsRead()
		writes = writes || !plan.IsRead()
	}
	if reads && writes {
		return nil, errMixed("A batch")
	}
	fail := func(i int, err error) {
		out.Responses[i].Error = batchError(err)
		if apierr.Is(err, apierr.AccessDenied) {
			out.Denied = append(out.Denied, message(err))
		}
	}
	var acc capacity
	for i, r := range in.Statements {
		plan := plans[i]
		if plan == nil {
			continue
		}
		one := &wire.ExecuteStatementInput{Statement: r.Statement, ConsistentRead: r.ConsistentRead,
			ReturnConsumedCapacity: in.ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure: r.ReturnValuesOnConditionCheckFailure}
		res, err := run(ctx, s, b, plan, one)
		if err != nil {
			fail(i, err)
			continue
		}
		if len(res.Items) > 0 && plan.Get != nil {
			out.Responses[i].Item = res.Items[0]
		}
		acc.add(plan.Table(), res.U, res.ConsumedCapacity)
	}
	out.U, out.ConsumedCapacity = acc.usage(writes), acc.report
	return out, nil
}

// batchError is the response error of a failed statement.
func batchError(err error) *wire.BatchStatementError {
	be := &wire.BatchStatementError{Code: batchCode(err), Message: message(err)}
	var e *apierr.Error
	if errors.As(err, &e) {
		switch d := e.Detail.(type) {
		case *wire.ConditionalCheckFailedDetail:
			if d != nil {
				be.Item = d.Item
			}
		case wire.ConditionalCheckFailedDetail:
			be.Item = d.Item
		}
	}
	return be
}

// capacity sums the units of a batch's statements per table, in the
// order tables were first charged.
type capacity struct {
	units     float64
	tables    []wire.TableUnits
	report    []wire.ConsumedCapacity
	n         int // statements added
	committed int // of which the backend wrote the usage with the items
}

func (c *capacity) add(table string, u wire.Usage, cc *wire.ConsumedCapacity) {
	units := u.ReadUnits + u.WriteUnits
	c.units += units
	c.n++
	if u.Committed {
		c.committed++
	}
	i := 0
	for i < len(c.tables) && c.tables[i].Table != table {
		i++
	}
	if i == len(c.tables) {
		c.tables = append(c.tables, wire.TableUnits{Table: table})
	}
	c.tables[i].Units += units
	if cc == nil {
		return
	}
	for j := range c.report {
		if c.report[j].TableName == cc.TableName {
			mergeCapacity(&c.report[j], cc)
			return
		}
	}
	c.report = append(c.report, *cc)
}

func mergeCapacity(dst, src *wire.ConsumedCapacity) {
	dst.CapacityUnits += src.CapacityUnits
	dst.ReadCapacityUnits = addPtr(dst.ReadCapacityUnits, src.ReadCapacityUnits)
	dst.WriteCapacityUnits = addPtr(dst.WriteCapacityUnits, src.WriteCapacityUnits)
	if src.Table != nil {
		if dst.Table == nil {
			dst.Table = &wire.Capacity{}
		}
		dst.Table.CapacityUnits += src.Table.CapacityUnits
		dst.Table.ReadCapacityUnits = addPtr(dst.Table.ReadCapacityUnits, src.Table.ReadCapacityUnits)
		dst.Table.WriteCapacityUnits = addPtr(dst.Table.WriteCapacityUnits, src.Table.WriteCapacityUnits)
	}
	dst.GlobalSecondaryIndexes = mergeIndexes(dst.GlobalSecondaryIndexes, src.GlobalSecondaryIndexes)
	dst.LocalSecondaryIndexes = mergeIndexes(dst.LocalSecondaryIndexes, src.LocalSecondaryIndexes)
}

func mergeIndexes(dst, src map[string]wire.Capacity) map[string]wire.Capacity {
	for name, c := range src {
		if dst == nil {
			dst = map[string]wire.Capacity{}
		}
		d := dst[name]
		d.CapacityUnits += c.CapacityUnits
		d.ReadCapacityUnits = addPtr(d.ReadCapacityUnits, c.ReadCapacityUnits)
		d.WriteCapacityUnits = addPtr(d.WriteCapacityUnits, c.WriteCapacityUnits)
		dst[name] = d
	}
	return dst
}

func addPtr(a, b *float64) *float64 {
	if b == nil {
		return a
	}
	v := *b
	if a != nil {
		v += *a
	}
	return &v
}

// usage is the batch's Usage: its units, split per table when more than
// one was charged. NB: it is Committed when the backend wrote the usage
// of every statement with its items (as the item writes do), so that
// metering does not charge it a second time; the metering report then
// counts those writes under the item operations that made them.
func (c *capacity) usage(writes bool) wire.Usage {
	u := wire.Usage{Committed: c.n > 0 && c.committed == c.n}
	if writes {
		u.WriteUnits = c.units
	} else {
		u.ReadUnits = c.units
	}
	if len(c.tables) > 0 {
		u.Table = c.tables[0].Table
	}
	if len(c.tables) > 1 {
		u.PerTable = c.tables
	}
	return u
}

// ExecuteTransaction runs up to 100 statements as one transaction: all
// SELECTs naming an item's full key (TransactGetItems), or INSERT,
// UPDATE, DELETE and EXISTS (TransactWriteItems, idempotent under
// ClientRequestToken). Errors are those of the statements and of the
// transaction; an INSERT of an existing key is cancelled with the reason
// DuplicateItem.
func ExecuteTransaction(ctx context.Context, s tenancy.Scope, b Items, in *wire.ExecuteTransactionInput) (*wire.ExecuteTransactionOutput, error) {
	n := len(in.TransactStatements)
	if n < 1 || n > maxTransaction {
		return nil, errCount("transactStatements", n, maxTransaction)
	}
	if err := checkConsumed(in.ReturnConsumedCapacity); err != nil {
		return nil, err
	}
	plans := make([]*Plan, n)
	var reads, writes bool
	for i, r := range in.TransactStatements {
		_, plan, _, err := prepare(ctx, s, b, r.Statement, r.Parameters)
		if err != nil {
			return nil, err
		}
		if plan.IsRead() && plan.Get == nil {
			return nil, invalid("Transaction read statements must specify an equality condition on all key attributes")
		}
		plans[i] = plan
		reads = reads || plan.IsRead()
		writes = writes || !plan.IsRead()
	}
	if reads && writes {
		return nil, errMixed("A transaction")
	}
	if reads {
		tin := &wire.TransactGetItemsInput{TransactItems: make([]wire.TransactGetItem, n), ReturnConsumedCapacity: in.ReturnConsumedCapacity}
		for i, p := range plans {
			g := p.Get
			tin.TransactItems[i].Get = &wire.Get{TableName: g.TableName, Key: g.Key, ProjectionExpression: g.ProjectionExpression, ExpressionAttributeNames: g.ExpressionAttributeNames}
		}
		r, err := b.TransactGetItems(ctx, s, tin)
		if err != nil {
			return nil, err
		}
		return &wire.ExecuteTransactionOutput{Metered: r.Metered, Responses: r.Responses, ConsumedCapacity: r.ConsumedCapacity}, nil
	}
	tin := &wire.TransactWriteItemsInput{TransactItems: make([]wire.TransactWriteItem, n),
		ReturnConsumedCapacity: in.ReturnConsumedCapacity, ClientRequestToken: in.ClientRequestToken}
	for i, p := range plans {
		rv := in.TransactStatements[i].ReturnValuesOnConditionCheckFailure
		it := &tin.TransactItems[i]
		switch {
		case p.Put != nil:
			it.Put = &wire.TransactPut{TableName: p.Put.TableName, Item: p.Put.Item, ConditionExpression: p.Put.ConditionExpression,
				ExpressionAttributeNames: p.Put.ExpressionAttributeNames, ReturnValuesOnConditionCheckFailure: rv}
		case p.Update != nil:
			u := p.Update
			it.Update = &wire.TransactUpdate{TableName: u.TableName, Key: u.Key, UpdateExpression: *u.UpdateExpression, ConditionExpression: u.ConditionExpression,
				ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues, ReturnValuesOnConditionCheckFailure: rv}
		case p.Delete != nil:
			d := p.Delete
			it.Delete = &wire.TransactDelete{TableName: d.TableName, Key: d.Key, ConditionExpression: d.ConditionExpression,
				ExpressionAttributeNames: d.ExpressionAttributeNames, ExpressionAttributeValues: d.ExpressionAttributeValues, ReturnValuesOnConditionCheckFailure: rv}
		case p.Check != nil:
			c := *p.Check
			c.ReturnValuesOnConditionCheckFailure = rv
			it.ConditionCheck = &c
		}
	}
	r, err := b.TransactWriteItems(ctx, s, tin)
	if err != nil {
		return nil, duplicateReasons(err, plans)
	}
	return &wire.ExecuteTransactionOutput{Metered: r.Metered, ConsumedCapacity: r.ConsumedCapacity}, nil
}

// duplicateReasons rewrites the cancellation reason of each INSERT whose
// key existed as DuplicateItem, as DynamoDB reports it.
func duplicateReasons(err error, plans []*Plan) error {
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind != apierr.TransactionCanceled {
		return err
	}
	d, ok := e.Detail.(*wire.TransactionCanceledDetail)
	if !ok || d == nil || len(d.CancellationReasons) != len(plans) {
		return err
	}
	reasons := make([]wire.CancellationReason, len(plans))
	codes := make([]string, len(plans))
	for i, r := range d.CancellationReasons {
		if plans[i].Put != nil && r.Code == "ConditionalCheckFailed" {
			r = wire.CancellationReason{Code: "DuplicateItem", Message: "Duplicate primary key exists in table", Item: r.Item}
		}
		reasons[i], codes[i] = r, r.Code
		if codes[i] == "" {
			codes[i] = "None"
		}
	}
	ne := apierr.New(apierr.TransactionCanceled, "Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", strings.Join(codes, ", "))
	ne.Cause, ne.Detail = err, &wire.TransactionCanceledDetail{CancellationReasons: reasons}
	return ne
}
