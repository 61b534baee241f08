package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// streamsOpen is openEnv with Options.Streams on.
func streamsOpen(t *testing.T) *testEnv {
	t.Helper()
	env := openEnv(t)
	env.e.Close()
	env.opts.Streams = true
	env.e = env.open()
	return env
}

func streamTable(name, view string) *wire.CreateTableInput {
	in := tableInput(name, false)
	in.StreamSpecification = &wire.StreamSpecification{StreamEnabled: boolPtr(true), StreamViewType: view}
	return in
}

// records returns the change records of table name's latest stream that
// actor a's namespace sees, from every shard, formatted one per line as
// "EVENT pk [old] -> [new]".
func (a testActor) records(name string) []string {
	a.env.t.Helper()
	t := a.env.sharedTable(name)
	if t.LatestStream == 0 {
		a.env.t.Fatalf("table %s has no stream", name)
	}
	s, err := a.env.e.clog.Stream(t.ID, t.LatestStream)
	if err != nil {
		a.env.t.Fatal(err)
	}
	ns := keyspace.Namespace(a.p.Tenant, a.p.Env)
	shards, err := a.env.e.clog.Shards(a.env.db, ns, s)
	if err != nil {
		a.env.t.Fatal(err)
	}
	var out []string
	for _, sh := range shards {
		p, err := a.env.e.clog.TrimHorizon(a.env.db, ns, s, sh.Index)
		if err != nil {
			a.env.t.Fatal(err)
		}
		for {
			pg, err := a.env.e.clog.Read(a.env.db, ns, s, p, 1000, 1<<20)
			if err != nil {
				a.env.t.Fatal(err)
			}
			for _, r := range pg.Records {
				line := fmt.Sprintf("%s %s %s -> %s", r.Event, r.Keys["pk"].S, shortItem(r.Old), shortItem(r.New))
				if r.Expired {
					line += " (ttl)"
				}
				out = append(out, line)
			}
			if len(pg.Records) == 0 {
				break
			}
			p = pg.Next
		}
	}
	return out
}

// sharedTable returns the current definition of shared table name.
func (env *testEnv) sharedTable(name string) *schema.Table {
	env.t.Helper()
	for _, st := range env.e.res.Shared() {
		if st.Name == name {
			t, err := env.e.res.Current(st)
			if err != nil {
				env.t.Fatal(err)
			}
			return t
		}
	}
	env.t.Fatalf("no shared table %s", name)
	return nil
}

// shortItem renders an item's non-key attribute v ("-" if no item).
func shortItem(it attr.Item) string {
	if it == nil {
		return "-"
	}
	if v, ok := it["v"]; ok {
		return v.S
	}
	return "{}"
}

func wantRecords(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStreamRecordsEveryWrite: every write operation appends its record,
// with DynamoDB's events; writes that change nothing append none (a put
// of the item as it is included, as DynamoDB Streams).
func TestStreamRecordsEveryWrite(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	d := op.create(streamTable("Tbl", "NEW_AND_OLD_IMAGES"))
	if d.LatestStreamArn == "" || !strings.HasSuffix(d.LatestStreamArn, "/stream/"+d.LatestStreamLabel) {
		t.Fatalf("CreateTable: LatestStreamArn %q label %q", d.LatestStreamArn, d.LatestStreamLabel)
	}
	a, b := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	e := env.e
	a.put("Tbl", itemOf(t, `{"pk":{"S":"x"},"v":{"S":"1"}}`))
	a.put("Tbl", itemOf(t, `{"pk":{"S":"x"},"v":{"S":"1"}}`)) // identical: no record
	b.put("Tbl", itemOf(t, `{"pk":{"S":"other"},"v":{"S":"b"}}`))
	_, err := e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"x"}}`),
		UpdateExpression: strPtr("SET v = :v"), ExpressionAttributeValues: map[string]attr.Value{":v": attr.Str("2")}})
	noErr(t, err)
	_, err = e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Tbl", Item: itemOf(t, `{"pk":{"S":"x"},"v":{"S":"no"}}`),
		ConditionExpression: strPtr("attribute_not_exists(pk)")})
	wantErr(t, err, apierr.ConditionalCheckFailed, "")
	_, err = e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"x"}}`)})
	noErr(t, err)
	_, err = e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"missing"}}`)})
	noErr(t, err)
	_, err = e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{"Tbl": {
		{PutRequest: &wire.PutRequest{Item: itemOf(t, `{"pk":{"S":"b1"},"v":{"S":"1"}}`)}},
		{DeleteRequest: &wire.DeleteRequest{Key: itemOf(t, `{"pk":{"S":"missing"}}`)}},
	}}})
	noErr(t, err)
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
		{Put: &wire.TransactPut{TableName: "Tbl", Item: itemOf(t, `{"pk":{"S":"t1"},"v":{"S":"1"}}`)}},
		{Update: &wire.TransactUpdate{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"b1"}}`), UpdateExpression: "SET v = :v", ExpressionAttributeValues: map[string]attr.Value{":v": attr.Str("2")}}},
		{ConditionCheck: &wire.ConditionCheck{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"t1x"}}`), ConditionExpression: "attribute_not_exists(pk)"}},
	}})
	noErr(t, err)
	// A cancelled transaction writes nothing, records included.
	_, err = e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
		{Put: &wire.TransactPut{TableName: "Tbl", Item: itemOf(t, `{"pk":{"S":"t2"},"v":{"S":"1"}}`)}},
		{ConditionCheck: &wire.ConditionCheck{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"t1"}}`), ConditionExpression: "attribute_not_exists(pk)"}},
	}})
	if err == nil {
		t.Fatal("transaction with a failing condition succeeded")
	}
	wantRecords(t, a.records("Tbl"),
		"INSERT x - -> 1",
		"MODIFY x 1 -> 2",
		"REMOVE x 2 -> -",
		"INSERT b1 - -> 1",
		"INSERT t1 - -> 1",
		"MODIFY b1 1 -> 2",
	)
	wantRecords(t, b.records("Tbl"), "INSERT other - -> b")
}

// TestStreamViewTypes: records keep what the view type shows, including
// KEYS_ONLY writes that do not decode the old item.
func TestStreamViewTypes(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	a := env.tenant(tenancy.RoleApp)
	for _, view := range []string{"KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE"} {
		name := "T_" + view
		op.create(streamTable(name, view))
		a.put(name, itemOf(t, `{"pk":{"S":"x"},"v":{"S":"1"}}`))
		a.put(name, itemOf(t, `{"pk":{"S":"x"},"v":{"S":"2"}}`))
		_, err := env.e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: name, Key: itemOf(t, `{"pk":{"S":"x"}}`)})
		noErr(t, err)
	}
	wantRecords(t, a.records("T_KEYS_ONLY"), "INSERT x - -> -", "MODIFY x - -> -", "REMOVE x - -> -")
	wantRecords(t, a.records("T_NEW_IMAGE"), "INSERT x - -> 1", "MODIFY x - -> 2", "REMOVE x - -> -")
	wantRecords(t, a.records("T_OLD_IMAGE"), "INSERT x - -> -", "MODIFY x 1 -> -", "REMOVE x 2 -> -")
}

// TestStreamUnchangedWrites: a PutItem, UpdateItem, BatchWriteItem or
// transaction that leaves the item as it was appends no record, in every
// view type (KEYS_ONLY and NEW_IMAGE writes do not read the old item
// otherwise); the same attributes in another order, or a set in another
// order, are the same item. A change of one byte is recorded.
func TestStreamUnchangedWrites(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	a := env.tenant(tenancy.RoleApp)
	for _, view := range []string{"KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"} {
		name := "U_" + view
		op.create(streamTable(name, view))
		a.put(name, itemOf(t, `{"pk":{"S":"x"},"v":{"S":"1"},"n":{"N":"5"},"ss":{"SS":["a","b"]}}`))
		a.put(name, itemOf(t, `{"ss":{"SS":["b","a"]},"n":{"N":"5"},"v":{"S":"1"},"pk":{"S":"x"}}`))
		_, err := env.e.UpdateItem(testCtx, a.scope("UpdateItem"), &wire.UpdateItemInput{TableName: name, Key: itemOf(t, `{"pk":{"S":"x"}}`),
			UpdateExpression: strPtr("SET v = :v ADD n :z"), ExpressionAttributeValues: map[string]attr.Value{":v": attr.Str("1"), ":z": attr.Num(attr.MustNumber("0"))}})
		noErr(t, err)
		_, err = env.e.BatchWriteItem(testCtx, a.scope("BatchWriteItem"), &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{name: {
			{PutRequest: &wire.PutRequest{Item: itemOf(t, `{"pk":{"S":"x"},"v":{"S":"1"},"n":{"N":"5"},"ss":{"SS":["a","b"]}}`)}},
		}}})
		noErr(t, err)
		_, err = env.e.TransactWriteItems(testCtx, a.scope("TransactWriteItems"), &wire.TransactWriteItemsInput{TransactItems: []wire.TransactWriteItem{
			{Update: &wire.TransactUpdate{TableName: name, Key: itemOf(t, `{"pk":{"S":"x"}}`), UpdateExpression: "SET v = :v", ExpressionAttributeValues: map[string]attr.Value{":v": attr.Str("1")}}},
		}})
		noErr(t, err)
		a.put(name, itemOf(t, `{"pk":{"S":"x"},"v":{"S":"2"},"n":{"N":"5"},"ss":{"SS":["a","b"]}}`))
		got := a.records(name)
		if len(got) != 2 || !strings.HasPrefix(got[0], "INSERT x") || !strings.HasPrefix(got[1], "MODIFY x") {
			t.Errorf("%s: records %q, want one INSERT and one MODIFY", view, got)
		}
	}
}

// TestStreamTTLDeletion: an expiry deletion is a REMOVE by the service.
func TestStreamTTLDeletion(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	op.create(streamTable("Ses", "NEW_AND_OLD_IMAGES"))
	_, err := env.e.UpdateTimeToLive(testCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Ses", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	noErr(t, err)
	a := env.tenant(tenancy.RoleApp)
	a.put("Ses", itemOf(t, fmt.Sprintf(`{"pk":{"S":"old"},"v":{"S":"1"},"exp":{"N":"%d"}}`, env.clock.Now().Unix()-10)))
	noErr(t, env.e.sweep())
	wantRecords(t, a.records("Ses"), "INSERT old - -> 1", "REMOVE old 1 -> - (ttl)")
}

// TestStreamDisableAndReenable: a disabled stream takes no records and
// keeps its ARN in DescribeTable; re-enabling makes a new stream.
func TestStreamDisableAndReenable(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	first := op.create(streamTable("Dis", "KEYS_ONLY")).LatestStreamArn
	a := env.tenant(tenancy.RoleApp)
	a.put("Dis", itemOf(t, `{"pk":{"S":"1"}}`))
	_, err := env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Dis", StreamSpecification: &wire.StreamSpecification{StreamEnabled: boolPtr(false)}})
	noErr(t, err)
	a.put("Dis", itemOf(t, `{"pk":{"S":"2"}}`))
	d := op.describe("Dis")
	if d.StreamSpecification != nil || d.LatestStreamArn != first {
		t.Errorf("after disabling: spec %+v, LatestStreamArn %q (want %q)", d.StreamSpecification, d.LatestStreamArn, first)
	}
	wantRecords(t, a.records("Dis"), "INSERT 1 - -> -")
	env.clock.Set(env.clock.Now().Add(1000))
	_, err = env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Dis", StreamSpecification: &wire.StreamSpecification{StreamEnabled: boolPtr(true), StreamViewType: "NEW_IMAGE"}})
	noErr(t, err)
	a.put("Dis", itemOf(t, `{"pk":{"S":"3"},"v":{"S":"x"}}`))
	d = op.describe("Dis")
	if d.LatestStreamArn == first || d.StreamSpecification == nil {
		t.Errorf("re-enabled: LatestStreamArn %q (the old one is %q), spec %+v", d.LatestStreamArn, first, d.StreamSpecification)
	}
	wantRecords(t, a.records("Dis"), "INSERT 3 - -> x")
	tb := env.sharedTable("Dis")
	streams, err := env.e.clog.Streams(tb.ID)
	if err != nil || len(streams) != 2 || streams[0].Enabled() || !streams[1].Enabled() {
		t.Errorf("streams %+v %v", streams, err)
	}
}

// TestStreamsOffRefusesStreams: without Options.Streams an enabled
// stream is refused, so no client can enable one it cannot read.
func TestStreamsOffRefusesStreams(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	_, err := env.e.CreateTable(testCtx, op.scope("CreateTable"), streamTable("Non", "KEYS_ONLY"))
	wantErr(t, err, apierr.Validation, "StreamEnabled is not supported")
	op.create(tableInput("Non", false))
	_, err = env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Non", StreamSpecification: &wire.StreamSpecification{StreamEnabled: boolPtr(true), StreamViewType: "KEYS_ONLY"}})
	wantErr(t, err, apierr.Validation, "StreamEnabled is not supported")
	if tb := env.sharedTable("Non"); tb.LatestStream != 0 || tb.Stream != nil {
		t.Fatalf("stream settings %d %+v with streams off", tb.LatestStream, tb.Stream)
	}
}

// TestBuildTableRefusesStreams: other backends build definitions without
// an engine, and have no change log: an enabled stream is refused there.
func TestBuildTableRefusesStreams(t *testing.T) {
	_, err := BuildTable(streamTable("Other", "KEYS_ONLY"))
	wantErr(t, err, apierr.Validation, "StreamEnabled is not supported")
}

// streamAPIRecords reads every record of the stream at arn through the
// Streams operations, as actor a.
func (a testActor) streamAPIRecords(arn string) ([]string, error) {
	e := a.env.e
	d, err := e.DescribeStream(testCtx, a.scope("DescribeStream"), &wire.DescribeStreamInput{StreamArn: arn})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sh := range d.StreamDescription.Shards {
		it, err := e.GetShardIterator(testCtx, a.scope("GetShardIterator"), &wire.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: "TRIM_HORIZON"})
		if err != nil {
			return nil, err
		}
		iter := &it.ShardIterator
		for iter != nil {
			r, err := e.GetRecords(testCtx, a.scope("GetRecords"), &wire.GetRecordsInput{ShardIterator: *iter})
			if err != nil {
				return nil, err
			}
			if r.U.ReadUnits != 1 {
				a.env.t.Errorf("GetRecords consumed %v read units, want 1 (a streams read request unit)", r.U.ReadUnits)
			}
			for _, rec := range r.Records {
				out = append(out, rec.EventName+" "+rec.Dynamodb.Keys["pk"].S)
			}
			if len(r.Records) == 0 {
				break
			}
			iter = r.NextShardIterator
		}
	}
	return out, nil
}

// TestStreamOfDeletedTable: a deleted table's stream stays readable (by
// whoever could read it) until retention, also after a table of the same
// name is created again; then it is gone.
func TestStreamOfDeletedTable(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	shared := op.create(streamTable("Gone", "KEYS_ONLY")).LatestStreamArn
	own := a.create(streamTable("Mine", "KEYS_ONLY")).LatestStreamArn
	a.put("Gone", itemOf(t, `{"pk":{"S":"a1"}}`))
	b.put("Gone", itemOf(t, `{"pk":{"S":"b1"}}`))
	a.put("Mine", itemOf(t, `{"pk":{"S":"m1"}}`))
	_, err := env.e.DeleteTable(testCtx, op.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Gone"})
	noErr(t, err)
	_, err = env.e.DeleteTable(testCtx, a.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Mine"})
	noErr(t, err)
	env.clock.Set(env.clock.Now().Add(time.Second))
	op.create(streamTable("Gone", "KEYS_ONLY"))
	a.put("Gone", itemOf(t, `{"pk":{"S":"a2"}}`))

	got, err := a.streamAPIRecords(shared)
	if err != nil || strings.Join(got, ",") != "INSERT a1" {
		t.Errorf("A reads the deleted shared table's stream: %v %v", got, err)
	}
	got, err = b.streamAPIRecords(shared)
	if err != nil || strings.Join(got, ",") != "INSERT b1" {
		t.Errorf("B reads the deleted shared table's stream: %v %v", got, err)
	}
	got, err = a.streamAPIRecords(own)
	if err != nil || strings.Join(got, ",") != "INSERT m1" {
		t.Errorf("A reads its deleted table's stream: %v %v", got, err)
	}
	if _, err := b.streamAPIRecords(own); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("B reads A's deleted table's stream: %v", err)
	}
	// After retention the stream is gone.
	env.clock.Set(env.clock.Now().Add(25 * time.Hour))
	env.e.trimChangeLog()
	if _, err := a.streamAPIRecords(shared); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("a deleted table's stream after retention: %v", err)
	}
}
