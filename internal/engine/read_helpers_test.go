package engine

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Helpers of the Query/Scan tests (prefix qt, to stay out of the way of the
// write-side tests in this package).

func qtOpen(t testing.TB) *Engine {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: log})
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	e, err := Open(db, Options{Logger: log, TTLInterval: -1, InMemory: true})
	if err != nil {
		t.Fatalf("engine.Open: %v", err)
	}
	t.Cleanup(func() {
		e.Close()
		db.Close()
	})
	return e
}

func qtTenant(t testing.TB) tenancy.TenantID {
	t.Helper()
	return tenancy.NewTenantID()
}

// qtScope admits tenant for action with an app key of the live environment.
func qtScope(t testing.TB, tenant tenancy.TenantID, action string) tenancy.Scope {
	t.Helper()
	var g tenancy.Guard
	s, err := g.Admit(tenancy.Principal{Tenant: tenant, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDQT"}, dynamo.ActionOf(action))
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return s
}

// qtIndexSpec describes a secondary index for qtCreate; keys are
// "name:TYPE".
type qtIndexSpec struct {
	name, hash, rng, proj string
	nonKey                []string
	local                 bool
}

// qtCreate creates a shared table as the operator; hash and rng are
// "name:TYPE" ("" for no sort key).
func qtCreate(t testing.TB, e *Engine, name, hash, rng string, indexes []qtIndexSpec, tags ...wire.Tag) *schema.Table {
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
	var g tenancy.Guard
	op, err := g.Admit(tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "AKIDQTOP"}, dynamo.ActionOf("CreateTable"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTable(context.Background(), op, in); err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
	tg, err := e.res.Lookup(context.Background(), op, name)
	if err != nil {
		t.Fatal(err)
	}
	return tg.Table
}

// qtAddCreatingIndex publishes (in memory only) a copy of table name with
// one more GSI that stays CREATING: the state a backfill is in.
func qtAddCreatingIndex(t testing.TB, e *Engine, name string, ix *schema.Index) {
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

// qtPut writes items with BatchWriteItem (25 at a time).
func qtPut(t testing.TB, e *Engine, s tenancy.Scope, table string, items ...attr.Item) {
	t.Helper()
	var g tenancy.Guard
	s, err := g.Admit(tenancy.Principal{Tenant: s.Tenant(), Env: s.Env(), Role: tenancy.RoleApp, KeyID: s.KeyID()}, dynamo.ActionOf("BatchWriteItem"))
	if err != nil {
		t.Fatal(err)
	}
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

func qtS(s string) attr.Value { return attr.Str(s) }
func qtN(s string) attr.Value { return attr.Num(attr.MustNumber(s)) }
func qtB(b string) attr.Value { return attr.Bin([]byte(b)) }
func qtStr(s string) *string  { return &s }
func qtI32(n int32) *int32    { return &n }
func qtBool(b bool) *bool     { return &b }
func qtVals(kv ...any) map[string]attr.Value {
	m := map[string]attr.Value{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(attr.Value)
	}
	return m
}

// qtQuery runs a Query.
func qtQuery(t testing.TB, e *Engine, s tenancy.Scope, in *wire.QueryInput) (*wire.QueryOutput, error) {
	t.Helper()
	return e.Query(context.Background(), s, in)
}

// qtScan runs a Scan.
func qtScan(t testing.TB, e *Engine, s tenancy.Scope, in *wire.ScanInput) (*wire.QueryOutput, error) {
	t.Helper()
	return e.Scan(context.Background(), s, in)
}

// qtFilterNamesKnown reports whether compiled filters list the attributes
// they read (an optional interface of package expr's conditions).
func qtFilterNamesKnown(t testing.TB) bool {
	t.Helper()
	c, err := expr.NewParams(nil, map[string]attr.Value{":v": qtS("x")}).Filter("a = :v")
	if err != nil {
		t.Fatal(err)
	}
	_, ok := c.(topNamer)
	return ok
}

// qtCond is a filter "name op v" that lists the attribute it reads, for
// tests of the rules that depend on that.
type qtCond struct {
	name, op string
	v        attr.Value
}

var _ topNamer = (*qtCond)(nil)

func (c *qtCond) Eval(it attr.Item) (bool, error) {
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

func (c *qtCond) TopNames() []string { return []string{c.name} }

// qtKeys returns the values of attribute name of items, formatted, in order.
func qtKeys(items []attr.Item, names ...string) []string {
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

func qtSorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// qtQueryAll pages through a Query until LastEvaluatedKey is empty and
// returns all items and the number of pages.
func qtQueryAll(t testing.TB, e *Engine, s tenancy.Scope, in wire.QueryInput) ([]attr.Item, int) {
	t.Helper()
	var all []attr.Item
	pages := 0
	for {
		out, err := qtQuery(t, e, s, &in)
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

// qtScanAll is qtQueryAll for Scan.
func qtScanAll(t testing.TB, e *Engine, s tenancy.Scope, in wire.ScanInput) ([]attr.Item, int) {
	t.Helper()
	var all []attr.Item
	pages := 0
	for {
		out, err := qtScan(t, e, s, &in)
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
