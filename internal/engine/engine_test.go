package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Helpers of the write-side and DDL tests (prefix wt, to stay out of the
// way of the Query/Scan tests in this package).

// wtClock is a settable clock for TTL and token expiry.
type wtClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *wtClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *wtClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// wtEnv is an engine on an in-memory store with a fake clock.
type wtEnv struct {
	t     testing.TB
	e     *Engine
	db    *storage.DB
	clock *wtClock
	opts  Options
}

func wtOpen(t *testing.T) *wtEnv { return wtOpenTB(t) }

func wtOpenTB(t testing.TB) *wtEnv {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: log})
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	clock := &wtClock{now: time.Unix(1_700_000_000, 0)}
	env := &wtEnv{t: t, db: db, clock: clock, opts: Options{Logger: log, TTLInterval: -1, InMemory: true, Now: clock.Now}}
	env.e = env.open()
	t.Cleanup(func() {
		env.e.Close()
		db.Close()
	})
	return env
}

func (env *wtEnv) open() *Engine {
	env.t.Helper()
	e, err := Open(env.db, env.opts)
	if err != nil {
		env.t.Fatalf("engine.Open: %v", err)
	}
	return e
}

// reopen closes the engine and opens a new one on the same store.
func (env *wtEnv) reopen() {
	env.t.Helper()
	if err := env.e.Close(); err != nil {
		env.t.Fatalf("Close: %v", err)
	}
	env.e = env.open()
}

// wtActor is a principal; scope admits it for one action.
type wtActor struct {
	env *wtEnv
	p   tenancy.Principal
}

func (env *wtEnv) operator() wtActor {
	return wtActor{env, tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "AKIDOPERATOR"}}
}

func (env *wtEnv) tenant(role tenancy.Role) wtActor {
	return wtActor{env, tenancy.Principal{Tenant: tenancy.NewTenantID(), Env: "live", Role: role, KeyID: "AKIDTENANT"}}
}

// as returns the same tenant with another role.
func (a wtActor) as(role tenancy.Role) wtActor {
	a.p.Role = role
	return a
}

func (a wtActor) scope(action string) tenancy.Scope {
	a.env.t.Helper()
	var g tenancy.Guard
	s, err := g.Admit(a.p, dynamo.ActionOf(action))
	if err != nil {
		a.env.t.Fatalf("Admit %s: %v", action, err)
	}
	return s
}

var wtCtx = context.Background()

// wtJ parses a DynamoDB JSON item.
func wtJ(t testing.TB, s string) attr.Item {
	t.Helper()
	it, err := attr.ParseItemJSON([]byte(s))
	if err != nil {
		t.Fatalf("ParseItemJSON(%s): %v", s, err)
	}
	return it
}

func wtStr(s string) *string { return &s }
func wtBool(b bool) *bool    { return &b }
func wtI64(n int64) *int64   { return &n }

// wtJSON renders an item as DynamoDB JSON with sorted names, for messages
// and comparisons.
func wtJSON(it attr.Item) string {
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
			b.WriteString(wtJSON(v.M))
		} else {
			b.Write(attr.AppendJSON(nil, v))
		}
	}
	b.WriteByte('}')
	return b.String()
}

func wtSameItem(t testing.TB, got, want attr.Item) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && !attr.EqualItems(got, want)) {
		t.Fatalf("item = %s, want %s", wtJSON(got), wtJSON(want))
	}
}

// wtWantErr fails unless err has kind k and a message containing msg.
func wtWantErr(t testing.TB, err error, k apierr.Kind, msg string) *apierr.Error {
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

func wtNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wtTable is a CreateTable input for a table with hash key pk (S) and,
// if rangeKey, range key sk (S), on demand.
func wtTable(name string, rangeKey bool) *wire.CreateTableInput {
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

func (a wtActor) create(in *wire.CreateTableInput) *wire.TableDescription {
	a.env.t.Helper()
	out, err := a.env.e.CreateTable(wtCtx, a.scope("CreateTable"), in)
	if err != nil {
		a.env.t.Fatalf("CreateTable %s: %v", in.TableName, err)
	}
	return out.TableDescription
}

func (a wtActor) describe(name string) *wire.TableDescription {
	a.env.t.Helper()
	out, err := a.env.e.DescribeTable(wtCtx, a.scope("DescribeTable"), &wire.DescribeTableInput{TableName: name})
	if err != nil {
		a.env.t.Fatalf("DescribeTable %s: %v", name, err)
	}
	return out.Table
}

func (a wtActor) put(table string, item attr.Item) {
	a.env.t.Helper()
	_, err := a.env.e.PutItem(wtCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: table, Item: item})
	if err != nil {
		a.env.t.Fatalf("PutItem %s: %v", wtJSON(item), err)
	}
}

func (a wtActor) get(table string, key attr.Item) attr.Item {
	a.env.t.Helper()
	out, err := a.env.e.GetItem(wtCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: table, Key: key, ConsistentRead: wtBool(true)})
	if err != nil {
		a.env.t.Fatalf("GetItem %s: %v", wtJSON(key), err)
	}
	return out.Item
}

// wtIndexEntries returns the entries of index no of table name in the
// actor's namespace, read straight from storage.
func (a wtActor) indexEntries(name string, no uint16) []attr.Item {
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
		item, err := attr.DecodeItem(it.Value())
		if err != nil {
			a.env.t.Fatalf("decode index entry: %v", err)
		}
		out = append(out, item)
	}
	return out
}

// wtCounters returns the (items, bytes) counters of index no (0: table).
func (a wtActor) counters(name string, no uint16) (int64, int64) {
	a.env.t.Helper()
	h, err := a.env.e.open(context.Background(), a.scope("GetItem"), name)
	if err != nil {
		a.env.t.Fatalf("open: %v", err)
	}
	n, err := h.db.Counter(keyspace.Counter(h.Namespace, h.Table.ID, no, counterItems))
	wtNoErr(a.env.t, err)
	b, err := h.db.Counter(keyspace.Counter(h.Namespace, h.Table.ID, no, counterBytes))
	wtNoErr(a.env.t, err)
	return n, b
}

// keyspaceNS returns the key range of the actor's namespace.
func keyspaceNS(a wtActor) ([]byte, []byte) { return keyspace.NamespaceRange(a.p.Tenant, a.p.Env) }
