package engine

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// fakeMeter records what the engine meters and writes a marker key into
// the batch, so a test can see that the usage went into the committed
// batch.
type fakeMeter struct {
	mu    sync.Mutex
	calls []meterCall
}

type meterCall struct {
	tenant tenancy.TenantID
	op     string
	u      wire.Usage
	marker []byte
}

func (m *fakeMeter) StageUsage(b *storage.Batch, s tenancy.Scope, op string, u wire.Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	marker := fmt.Appendf(nil, "\xffmeter/%d", len(m.calls))
	b.Set(marker, []byte(op))
	m.calls = append(m.calls, meterCall{tenant: s.Tenant(), op: op, u: u, marker: marker})
}

// take returns the calls since the last take.
func (m *fakeMeter) take() []meterCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls
	m.calls = nil
	return c
}

// TestWritesMeterInTheirBatch: every item write request that commits to
// the main store hands its usage, exactly as its output reports it, to the
// Meter inside the batch that commits its items, and marks the usage
// Committed; requests that commit nothing (a failed condition, a
// cancelled transaction) and writes to a silo store do not, and leave
// their metering to the caller.
func TestWritesMeterInTheirBatch(t *testing.T) {
	env, a := itemTable(t)
	m := &fakeMeter{}
	env.opts.Meter = m
	env.reopen()
	e := env.e
	env.operator().create(tableInput("Other", false))
	silo := tableInput("Silo", false)
	silo.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
	a.as(tenancy.RoleAdmin).create(silo)

	// metered checks that out's usage was staged once, for op, in a batch
	// that was committed.
	metered := func(op string, err error, out wire.Output) {
		t.Helper()
		noErr(t, err)
		calls := m.take()
		u := out.Consumed()
		if !u.Committed {
			t.Errorf("%s: usage %+v not marked Committed", op, u)
		}
		if len(calls) != 1 {
			t.Fatalf("%s: %d calls of the Meter, want 1", op, len(calls))
		}
		c := calls[0]
		u.Committed = false
		if c.op != op || c.tenant != a.p.Tenant || !reflect.DeepEqual(c.u, u) {
			t.Errorf("%s: metered %s of %v with %+v, want %s of %v with %+v", op, c.op, c.tenant, c.u, op, a.p.Tenant, u)
		}
		if v, err := env.db.Get(c.marker); err != nil || string(v) != op {
			t.Errorf("%s: the metering is not in the store: %q, %v", op, v, err)
		}
	}
	// unmetered checks that nothing was staged.
	unmetered := func(what string, u wire.Usage) {
		t.Helper()
		if calls := m.take(); len(calls) != 0 {
			t.Errorf("%s: %d calls of the Meter, want none", what, len(calls))
		}
		if u.Committed {
			t.Errorf("%s: usage %+v marked Committed", what, u)
		}
	}

	item := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"v":{"S":"x"}}`)
	key := itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`)
	put, err := e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: item})
	metered("PutItem", err, put)
	upd, err := e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Items", Key: key,
		UpdateExpression: strPtr("SET v = :v"), ExpressionAttributeValues: map[string]attr.Value{":v": itemOf(t, `{"v":{"S":"y"}}`)["v"]}})
	metered("UpdateItem", err, upd)
	del, err := e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Items", Key: key})
	metered("DeleteItem", err, del)
	// Deleting an absent item writes nothing but costs a unit.
	del, err = e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Items", Key: key})
	metered("DeleteItem", err, del)
	bw, err := e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{
		"Items": {{PutRequest: &wire.PutRequest{Item: item}}},
		"Other": {{PutRequest: &wire.PutRequest{Item: itemOf(t, `{"pk":{"S":"o"}}`)}}},
	}})
	metered("BatchWriteItem", err, bw)
	if len(bw.U.PerTable) != 2 {
		t.Errorf("BatchWriteItem on two tables: usage %+v, want a split by table", bw.U)
	}
	tx, err := e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
		{ConditionCheck: &wire.ConditionCheck{TableName: "Items", Key: key, ConditionExpression: "attribute_exists(pk)"}},
		{Put: &wire.TransactPut{TableName: "Other", Item: itemOf(t, `{"pk":{"S":"p"}}`)}},
	}, ClientRequestToken: strPtr("tok")})
	metered("TransactWriteItems", err, tx)
	if tx.U.WriteUnits != 4 {
		t.Errorf("TransactWriteItems usage %+v, want 4 write units (a check and a put, doubled)", tx.U)
	}

	// A replayed transaction commits nothing.
	tx, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
		{ConditionCheck: &wire.ConditionCheck{TableName: "Items", Key: key, ConditionExpression: "attribute_exists(pk)"}},
		{Put: &wire.TransactPut{TableName: "Other", Item: itemOf(t, `{"pk":{"S":"p"}}`)}},
	}, ClientRequestToken: strPtr("tok")})
	noErr(t, err)
	unmetered("replayed TransactWriteItems", tx.U)
	// Failed conditions commit nothing.
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Items", Item: item, ConditionExpression: strPtr("attribute_not_exists(pk)")})
	wantErr(t, err, apierr.ConditionalCheckFailed, "")
	unmetered("failed PutItem", wire.Usage{})
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
		{ConditionCheck: &wire.ConditionCheck{TableName: "Items", Key: itemOf(t, `{"pk":{"S":"none"},"sk":{"S":"1"}}`), ConditionExpression: "attribute_exists(pk)"}},
		{Put: &wire.TransactPut{TableName: "Other", Item: itemOf(t, `{"pk":{"S":"q"}}`)}},
	}})
	wantErr(t, err, apierr.TransactionCanceled, "")
	unmetered("cancelled TransactWriteItems", wire.Usage{})
	// A silo table's items commit in another store.
	sp, err := e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Silo", Item: itemOf(t, `{"pk":{"S":"s"}}`)})
	noErr(t, err)
	unmetered("PutItem on a silo table", sp.U)
	sb, err := e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{
		"Items": {{PutRequest: &wire.PutRequest{Item: item}}},
		"Silo":  {{PutRequest: &wire.PutRequest{Item: itemOf(t, `{"pk":{"S":"t"}}`)}}},
	}})
	noErr(t, err)
	unmetered("BatchWriteItem on a shared and a silo table", sb.U)
}
