package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The fixtures of the engine's tests: one engine on an in-memory store
// with a settable clock, principals admitted by the guard, item and
// pointer literals, and the error assertion.

// testClock is a settable clock for TTL and token expiry.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// testEnv is an engine on an in-memory store with a fake clock.
type testEnv struct {
	t     testing.TB
	e     *Engine
	db    *storage.DB
	clock *testClock
	opts  Options
}

// openEnv opens an engine on a fresh in-memory store; it is closed when
// the test ends.
func openEnv(t testing.TB) *testEnv {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: log})
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	clock := &testClock{now: time.Unix(1_700_000_000, 0)}
	env := &testEnv{t: t, db: db, clock: clock, opts: Options{Logger: log, TTLInterval: -1, InMemory: true, Now: clock.Now, Keys: testKeys(t, "")}}
	env.e = env.open()
	t.Cleanup(func() {
		env.e.Close()
		db.Close()
	})
	return env
}

func (env *testEnv) open() *Engine {
	env.t.Helper()
	e, err := Open(env.db, env.opts)
	if err != nil {
		env.t.Fatalf("engine.Open: %v", err)
	}
	return e
}

// reopen closes the engine and opens a new one on the same store.
func (env *testEnv) reopen() {
	env.t.Helper()
	if err := env.e.Close(); err != nil {
		env.t.Fatalf("Close: %v", err)
	}
	env.e = env.open()
}

// testActor is a principal; scope admits it for one action.
type testActor struct {
	env *testEnv
	p   tenancy.Principal
}

func (env *testEnv) operator() testActor { return testActor{env, operatorPrincipal()} }

func (env *testEnv) tenant(role tenancy.Role) testActor {
	return testActor{env, appPrincipal(tenancy.NewTenantID())}.as(role)
}

// as returns the same tenant with another role.
func (a testActor) as(role tenancy.Role) testActor {
	a.p.Role = role
	return a
}

func (a testActor) scope(action string) tenancy.Scope {
	a.env.t.Helper()
	return admit(a.env.t, a.p, action)
}

// admit admits principal p for action, as the guard does.
func admit(t testing.TB, p tenancy.Principal, action string) tenancy.Scope {
	t.Helper()
	var g tenancy.Guard
	s, err := g.Admit(p, dynamo.ActionOf(action))
	if err != nil {
		t.Fatalf("Admit %s: %v", action, err)
	}
	return s
}

// operatorPrincipal is the operator's principal; appPrincipal is an app
// key of tenant in the live environment.
func operatorPrincipal() tenancy.Principal {
	return tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "AKIDOPERATOR"}
}

func appPrincipal(tenant tenancy.TenantID) tenancy.Principal {
	return tenancy.Principal{Tenant: tenant, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDTENANT"}
}

// tenantScope admits an app key of tenant for action.
func tenantScope(t testing.TB, tenant tenancy.TenantID, action string) tenancy.Scope {
	t.Helper()
	return admit(t, appPrincipal(tenant), action)
}

var testCtx = context.Background()

// itemOf parses a DynamoDB JSON item.
func itemOf(t testing.TB, s string) attr.Item {
	t.Helper()
	it, err := attr.ParseItemJSON([]byte(s))
	if err != nil {
		t.Fatalf("ParseItemJSON(%s): %v", s, err)
	}
	return it
}

// Pointers to literals, for the optional fields of the wire inputs.
func strPtr(s string) *string { return &s }
func boolPtr(b bool) *bool    { return &b }
func i64Ptr(n int64) *int64   { return &n }
func i32Ptr(n int32) *int32   { return &n }

// showItem renders an item as DynamoDB JSON with sorted names, for messages
// and comparisons.
func showItem(it attr.Item) string {
	if it == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range attr.SortedNames(it) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte(':')
		v := it[k]
		if v.Type == attr.M {
			b.WriteString(showItem(v.M))
		} else {
			b.Write(attr.AppendJSON(nil, v))
		}
	}
	b.WriteByte('}')
	return b.String()
}

func sameItem(t testing.TB, got, want attr.Item) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && !attr.EqualItems(got, want)) {
		t.Fatalf("item = %s, want %s", showItem(got), showItem(want))
	}
}

// wantErr fails unless err is an *apierr.Error (not wrapped) of kind k
// whose message contains msg ("": any message).
func wantErr(t testing.TB, err error, k apierr.Kind, msg string) *apierr.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %v containing %q", k, msg)
	}
	ae, ok := err.(*apierr.Error)
	if !ok || ae.Kind != k || !strings.Contains(ae.Message, msg) {
		t.Fatalf("err = %v, want %v containing %q", err, k, msg)
	}
	return ae
}

func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// tableInput is a CreateTable input for a table with hash key pk (S) and,
// if rangeKey, range key sk (S), on demand.
func tableInput(name string, rangeKey bool) *wire.CreateTableInput {
	in := &wire.CreateTableInput{
		TableName:            name,
		BillingMode:          "PAY_PER_REQUEST",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		KeySchema:            []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
	}
	if rangeKey {
		in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "sk", AttributeType: "S"})
		in.KeySchema = append(in.KeySchema, wire.KeySchemaElement{AttributeName: "sk", KeyType: "RANGE"})
	}
	return in
}

func (a testActor) create(in *wire.CreateTableInput) *wire.TableDescription {
	a.env.t.Helper()
	out, err := a.env.e.CreateTable(testCtx, a.scope("CreateTable"), in)
	if err != nil {
		a.env.t.Fatalf("CreateTable %s: %v", in.TableName, err)
	}
	return out.TableDescription
}

func (a testActor) describe(name string) *wire.TableDescription {
	a.env.t.Helper()
	out, err := a.env.e.DescribeTable(testCtx, a.scope("DescribeTable"), &wire.DescribeTableInput{TableName: name})
	if err != nil {
		a.env.t.Fatalf("DescribeTable %s: %v", name, err)
	}
	return out.Table
}

func (a testActor) put(table string, item attr.Item) {
	a.env.t.Helper()
	_, err := a.env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: table, Item: item})
	if err != nil {
		a.env.t.Fatalf("PutItem %s: %v", showItem(item), err)
	}
}

func (a testActor) get(table string, key attr.Item) attr.Item {
	a.env.t.Helper()
	out, err := a.env.e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: table, Key: key, ConsistentRead: boolPtr(true)})
	if err != nil {
		a.env.t.Fatalf("GetItem %s: %v", showItem(key), err)
	}
	return out.Item
}

// indexEntries returns the entries of index no of table name in the
// actor's namespace, read straight from storage.
func (a testActor) indexEntries(name string, no uint16) []attr.Item {
	a.env.t.Helper()
	s := a.scope("GetItem")
	h, err := a.env.e.open(context.Background(), s, name)
	if err != nil {
		a.env.t.Fatalf("open: %v", err)
	}
	p := keyspace.Index(h.Namespace, h.Table.ID, no)
	it := h.db.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	var out []attr.Item
	for ok := it.First(); ok; ok = it.Next() {
		item, err := h.vals.decode(it.Key(), it.Value())
		if err != nil {
			a.env.t.Fatalf("decode index entry: %v", err)
		}
		out = append(out, item)
	}
	return out
}

// counters returns the (items, bytes) counters of index no (0: table).
func (a testActor) counters(name string, no uint16) (int64, int64) {
	a.env.t.Helper()
	h, err := a.env.e.open(context.Background(), a.scope("GetItem"), name)
	if err != nil {
		a.env.t.Fatalf("open: %v", err)
	}
	n, err := h.db.Counter(keyspace.Counter(h.Namespace, h.Table.ID, no, counterItems))
	noErr(a.env.t, err)
	b, err := h.db.Counter(keyspace.Counter(h.Namespace, h.Table.ID, no, counterBytes))
	noErr(a.env.t, err)
	return n, b
}

// keyspaceNS returns the key range of the actor's namespace.
func keyspaceNS(a testActor) ([]byte, []byte) { return keyspace.NamespaceRange(a.p.Tenant, a.p.Env) }

// indexSpec describes a secondary index for createShared; keys are
// "name:TYPE".
type indexSpec struct {
	name, hash, rng, proj string
	nonKey                []string
	local                 bool
}

// createShared creates a shared table as the operator; hash and rng are
// "name:TYPE" ("" for no sort key).
func createShared(t testing.TB, e *Engine, name, hash, rng string, indexes []indexSpec, tags ...wire.Tag) *schema.Table {
	t.Helper()
	in := &wire.CreateTableInput{TableName: name, BillingMode: "PAY_PER_REQUEST", Tags: tags}
	defs := map[string]bool{}
	key := func(spec, kind string) []wire.KeySchemaElement {
		if spec == "" {
			return nil
		}
		n, typ, _ := strings.Cut(spec, ":")
		if !defs[n] {
			defs[n] = true
			in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: n, AttributeType: typ})
		}
		return []wire.KeySchemaElement{{AttributeName: n, KeyType: kind}}
	}
	in.KeySchema = append(key(hash, "HASH"), key(rng, "RANGE")...)
	for _, ix := range indexes {
		ks := append(key(ix.hash, "HASH"), key(ix.rng, "RANGE")...)
		proj := &wire.Projection{ProjectionType: ix.proj, NonKeyAttributes: ix.nonKey}
		if ix.local {
			in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, wire.LocalSecondaryIndex{IndexName: ix.name, KeySchema: ks, Projection: proj})
		} else {
			in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, wire.GlobalSecondaryIndex{IndexName: ix.name, KeySchema: ks, Projection: proj})
		}
	}
	op := admit(t, operatorPrincipal(), "CreateTable")
	if _, err := e.CreateTable(context.Background(), op, in); err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
	tg, err := e.res.Lookup(context.Background(), op, name)
	if err != nil {
		t.Fatal(err)
	}
	return tg.Table
}

// addCreatingIndex publishes (in memory only) a copy of table name with
// one more GSI that stays CREATING: the state a backfill is in.
func addCreatingIndex(t testing.TB, e *Engine, name string, ix *schema.Index) {
	t.Helper()
	e.ddl.Lock()
	defer e.ddl.Unlock()
	var tb *schema.Table
	for _, sh := range e.res.Shared() {
		if sh.Name == name {
			tb = sh.Clone()
		}
	}
	ix.No = tb.NextIndexNo
	tb.NextIndexNo++
	ix.Status, ix.Backfilling = "CREATING", true
	tb.Indexes = append(tb.Indexes, ix)
	e.res.Publish(tb)
}

// putItems writes items with BatchWriteItem (25 at a time).
func putItems(t testing.TB, e *Engine, s tenancy.Scope, table string, items ...attr.Item) {
	t.Helper()
	s = admit(t, tenancy.Principal{Tenant: s.Tenant(), Env: s.Env(), Role: tenancy.RoleApp, KeyID: s.KeyID()}, "BatchWriteItem")
	for len(items) > 0 {
		n := min(len(items), 25)
		var reqs []wire.WriteRequest
		for _, it := range items[:n] {
			reqs = append(reqs, wire.WriteRequest{PutRequest: &wire.PutRequest{Item: it}})
		}
		out, err := e.BatchWriteItem(context.Background(), s, &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{table: reqs}})
		if err != nil {
			t.Fatalf("BatchWriteItem: %v", err)
		}
		if len(out.UnprocessedItems) > 0 {
			t.Fatalf("BatchWriteItem left %d tables unprocessed", len(out.UnprocessedItems))
		}
		items = items[n:]
	}
}

func sval(s string) attr.Value { return attr.Str(s) }
func nval(s string) attr.Value { return attr.Num(attr.MustNumber(s)) }
func bval(b string) attr.Value { return attr.Bin([]byte(b)) }
func exprVals(kv ...any) map[string]attr.Value {
	m := map[string]attr.Value{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(attr.Value)
	}
	return m
}

// runQuery runs a Query.
func runQuery(t testing.TB, e *Engine, s tenancy.Scope, in *wire.QueryInput) (*wire.QueryOutput, error) {
	t.Helper()
	return e.Query(context.Background(), s, in)
}

// runScan runs a Scan.
func runScan(t testing.TB, e *Engine, s tenancy.Scope, in *wire.ScanInput) (*wire.QueryOutput, error) {
	t.Helper()
	return e.Scan(context.Background(), s, in)
}

// filterNamesKnown reports whether compiled filters list the attributes
// they read (an optional interface of package expr's conditions).
func filterNamesKnown(t testing.TB) bool {
	t.Helper()
	c, err := expr.NewParams(nil, map[string]attr.Value{":v": sval("x")}).Filter("a = :v")
	if err != nil {
		t.Fatal(err)
	}
	_, ok := c.(interface{ TopNames() []string })
	return ok
}

// testCond is a filter "name op v" that lists the attribute it reads, for
// tests of the rules that depend on that.
type testCond struct {
	name, op string
	v        attr.Value
}

var _ interface{ TopNames() []string } = (*testCond)(nil)

func (c *testCond) Eval(it attr.Item) (bool, error) {
	v, ok := it[c.name]
	if c.op == "exists" {
		return ok, nil
	}
	if !ok {
		return false, nil
	}
	if c.op == "<>" {
		return !attr.Equal(v, c.v), nil
	}
	n, ok := attr.Compare(v, c.v)
	if !ok {
		return false, nil
	}
	switch c.op {
	case "=":
		return n == 0, nil
	case "<":
		return n < 0, nil
	case "<=":
		return n <= 0, nil
	case ">":
		return n > 0, nil
	case ">=":
		return n >= 0, nil
	}
	return false, nil
}

func (c *testCond) TopNames() []string { return []string{c.name} }

// keysOf returns the values of attribute name of items, formatted, in order.
func keysOf(items []attr.Item, names ...string) []string {
	var out []string
	for _, it := range items {
		var parts []string
		for _, n := range names {
			v := it[n]
			switch v.Type {
			case attr.S:
				parts = append(parts, v.S)
			case attr.N:
				parts = append(parts, v.N.String())
			case attr.B:
				parts = append(parts, string(v.B))
			default:
				parts = append(parts, "<"+v.Type.String()+">")
			}
		}
		out = append(out, strings.Join(parts, "/"))
	}
	return out
}

func sortedCopy(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// queryAll pages through a Query until LastEvaluatedKey is empty and
// returns all items and the number of pages.
func queryAll(t testing.TB, e *Engine, s tenancy.Scope, in wire.QueryInput) ([]attr.Item, int) {
	t.Helper()
	var all []attr.Item
	pages := 0
	for {
		out, err := runQuery(t, e, s, &in)
		if err != nil {
			t.Fatalf("Query page %d: %v", pages, err)
		}
		pages++
		all = append(all, out.Items...)
		if out.LastEvaluatedKey == nil {
			return all, pages
		}
		if pages > 10000 {
			t.Fatalf("Query does not terminate")
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// scanAll is queryAll for Scan.
func scanAll(t testing.TB, e *Engine, s tenancy.Scope, in wire.ScanInput) ([]attr.Item, int) {
	t.Helper()
	var all []attr.Item
	pages := 0
	for {
		out, err := runScan(t, e, s, &in)
		if err != nil {
			t.Fatalf("Scan page %d: %v", pages, err)
		}
		pages++
		all = append(all, out.Items...)
		if out.LastEvaluatedKey == nil {
			return all, pages
		}
		if pages > 100000 {
			t.Fatalf("Scan does not terminate")
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// itemTable creates table Items (pk S, sk S) and returns a tenant app.
func itemTable(t *testing.T) (*testEnv, testActor) {
	t.Helper()
	env := openEnv(t)
	env.operator().create(tableInput("Items", true))
	return env, env.tenant(tenancy.RoleApp)
}

// openOrders is the fixture most tests use: a table with a KEYS_ONLY GSI, an
// ALL GSI without sort key, an INCLUDE LSI, and a CREATING GSI.
func openOrders(t testing.TB) (*Engine, tenancy.Scope) {
	t.Helper()
	e := openEnv(t).e
	createShared(t, e, "Orders", "pk:S", "sk:S", []indexSpec{
		{name: "byStatus", hash: "status:S", rng: "amount:N", proj: "KEYS_ONLY"},
		{name: "byCust", hash: "cust:S", proj: "ALL"},
		{name: "byDate", local: true, hash: "pk:S", rng: "date:S", proj: "INCLUDE", nonKey: []string{"note"}},
	})
	addCreatingIndex(t, e, "Orders", &schema.Index{Name: "building", Hash: schema.KeyAttr{Name: "cust", Type: attr.S}, ProjectionType: "ALL"})
	return e, tenantScope(t, tenancy.NewTenantID(), "Query")
}

func orderItem(pk, sk, status string, amount int, cust, date string) attr.Item {
	it := attr.Item{"pk": sval(pk), "sk": sval(sk), "note": sval("note " + sk), "secret": sval("secret " + sk)}
	if status != "" {
		it["status"] = sval(status)
		it["amount"] = nval(fmt.Sprint(amount))
	}
	if cust != "" {
		it["cust"] = sval(cust)
	}
	if date != "" {
		it["date"] = sval(date)
	}
	return it
}

// testKEK is the key-encryption key of the tests' keyrings, fixed so that
// a crash test's child and parent open the same keys.
var testKEK = bytes.Repeat([]byte{0x42}, 32)

// testKeys returns a keyring in dir ("" in memory) under testKEK.
func testKeys(t testing.TB, dir string) *tenantkey.Keyring {
	t.Helper()
	kr, err := tenantkey.Open(tenantkey.Options{Dir: dir, KEK: testKEK})
	if err != nil {
		t.Fatalf("tenantkey.Open: %v", err)
	}
	return kr
}
