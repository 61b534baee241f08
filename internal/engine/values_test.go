package engine

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// rawItem returns the physical key and stored value of a's item key in
// table name.
func (a testActor) rawItem(name, key string) (pk, v []byte) {
	a.env.t.Helper()
	h, err := a.env.e.open(context.Background(), a.scope("GetItem"), name)
	if err != nil {
		a.env.t.Fatal(err)
	}
	pk = itemKey(h.Table, h.Namespace, itemOf(a.env.t, key))
	v, err = h.db.Get(pk)
	if err != nil {
		a.env.t.Fatalf("raw get: %v", err)
	}
	return pk, v
}

func (env *testEnv) setRaw(k, v []byte) {
	env.t.Helper()
	b := env.db.NewBatch()
	defer b.Close()
	b.Set(k, v)
	if err := env.db.Apply(b); err != nil {
		env.t.Fatal(err)
	}
}

// TestValuesSealed: a stored item and its index entry hold none of the
// item's non-key values in plaintext.
func TestValuesSealed(t *testing.T) {
	env := openEnv(t)
	in := tableInput("Tbl", true)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "g", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
		Projection: &wire.Projection{ProjectionType: "ALL"}}}
	env.operator().create(in)
	a := env.tenant(tenancy.RoleApp)
	a.put("Tbl", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"s"},"g":{"S":"gee"},"secret":{"S":"marker-9d2f"}}`))
	_, v := a.rawItem("Tbl", `{"pk":{"S":"p"},"sk":{"S":"s"}}`)
	if bytes.Contains(v, []byte("marker-9d2f")) {
		t.Fatalf("item stored in plaintext: %q", v)
	}
	h, _ := env.e.open(context.Background(), a.scope("GetItem"), "Tbl")
	p := keyspace.Index(h.Namespace, h.Table.ID, 1)
	it := env.db.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
		if bytes.Contains(it.Value(), []byte("marker-9d2f")) {
			t.Fatalf("index entry stored in plaintext: %q", it.Value())
		}
	}
	if n != 1 {
		t.Fatalf("%d index entries, want 1", n)
	}
}

// TestSwappedValuesRefused: a stored value copied under another key — of
// another tenant, or another item of the same tenant — is refused, never
// decrypted: the key is the ciphertext's associated data.
func TestSwappedValuesRefused(t *testing.T) {
	env := openEnv(t)
	env.operator().create(tableInput("Tbl", true))
	a, b := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	a.put("Tbl", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"},"secret":{"S":"A's secret"}}`))
	a.put("Tbl", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"2"},"secret":{"S":"A's other"}}`))
	b.put("Tbl", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"},"secret":{"S":"B's own"}}`))
	_, av := a.rawItem("Tbl", `{"pk":{"S":"p"},"sk":{"S":"1"}}`)
	bk, _ := b.rawItem("Tbl", `{"pk":{"S":"p"},"sk":{"S":"1"}}`)
	a2k, _ := a.rawItem("Tbl", `{"pk":{"S":"p"},"sk":{"S":"2"}}`)

	env.setRaw(bk, av) // A's ciphertext under B's key
	_, err := env.e.GetItem(testCtx, b.scope("GetItem"), &wire.GetItemInput{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"}}`)})
	if !apierr.Is(err, apierr.Internal) || !errors.Is(err, tenantkey.ErrUnreadable) {
		t.Fatalf("B reading A's ciphertext: err %v; want it refused as unreadable", err)
	}
	q, err := env.e.Query(testCtx, b.scope("Query"), &wire.QueryInput{TableName: "Tbl", KeyConditionExpression: strPtr("pk = :p"),
		ExpressionAttributeValues: exprVals(":p", sval("p"))})
	if err == nil {
		t.Fatalf("B's query over A's ciphertext answered %v", q.Items)
	}

	env.setRaw(a2k, av) // A's item 1 under A's item 2
	_, err = env.e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Tbl", Key: itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"2"}}`)})
	if !errors.Is(err, tenantkey.ErrUnreadable) {
		t.Fatalf("A reading its item moved to another key: err %v; want unreadable", err)
	}
	if got := a.get("Tbl", itemOf(t, `{"pk":{"S":"p"},"sk":{"S":"1"}}`)); got["secret"].S != "A's secret" {
		t.Fatalf("A's own item: %v", got)
	}
}

// TestResealTenant: after a rotation's new key version is current,
// ResealTenant re-encrypts every item, index entry and change record of
// the tenant, and only of it; once the old version is destroyed
// everything still reads.
func TestResealTenant(t *testing.T) {
	env := openEnv(t)
	env.opts.Streams = true
	env.reopen()
	in := streamTable("Streamed", "NEW_AND_OLD_IMAGES")
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "g", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
		Projection: &wire.Projection{ProjectionType: "ALL"}}}
	env.operator().create(in)
	a, b := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	for i := range 300 {
		item := itemOf(t, `{"pk":{"S":"k`+string(rune('a'+i%26))+`"},"g":{"S":"g"},"v":{"N":"`+itoa(i)+`"}}`)
		a.put("Streamed", item)
		b.put("Streamed", item)
	}
	keys := env.opts.Keys
	before := a.records("Streamed")
	if _, err := keys.StartRotation(a.p.Tenant, env.clock.Now()); err != nil {
		t.Fatal(err)
	}
	var last int64
	err := env.e.ResealTenant(testCtx, a.scope("GetItem"), "", func(done int64, _ string) error { last = done; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 26 items, 26 index entries, 300 change records.
	if want := int64(26 + 26 + 300); last != want {
		t.Errorf("re-encrypted %d values, want %d", last, want)
	}
	if err := keys.FinishRotation(a.p.Tenant); err != nil {
		t.Fatal(err)
	}
	if got := a.records("Streamed"); len(got) != len(before) || got[len(got)-1] != before[len(before)-1] {
		t.Errorf("change records after rotation: %d, last %q; before %d, last %q", len(got), got[len(got)-1], len(before), before[len(before)-1])
	}
	if got := a.get("Streamed", itemOf(t, `{"pk":{"S":"kz"}}`)); got["v"].N.String() != "285" {
		t.Errorf("item after rotation: %v", got)
	}
	q, err := env.e.Query(testCtx, a.scope("Query"), &wire.QueryInput{TableName: "Streamed", IndexName: strPtr("byG"),
		KeyConditionExpression: strPtr("g = :g"), ExpressionAttributeValues: exprVals(":g", sval("g"))})
	if err != nil || len(q.Items) != 26 {
		t.Fatalf("index query after rotation: %v items, %v", len(q.Items), err)
	}
	// Running it again finds nothing to do; B was never touched.
	if _, err := keys.StartRotation(a.p.Tenant, env.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := keys.FinishRotation(a.p.Tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := env.e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Streamed", Key: itemOf(t, `{"pk":{"S":"kz"}}`)}); !errors.Is(err, tenantkey.ErrUnreadable) {
		t.Errorf("after a rotation finished without re-encryption: err %v, want unreadable (the old version is destroyed)", err)
	}
	if got := b.get("Streamed", itemOf(t, `{"pk":{"S":"kz"}}`)); got["v"].N.String() != "285" {
		t.Errorf("B's item: %v", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestLegacyPlaintextReencrypted: a store from before encryption (values
// in plaintext, keys created lazily as legacy) reads as before, and a
// rotation re-encrypts its values and ends the legacy state, after which
// a plaintext value is refused.
func TestLegacyPlaintextReencrypted(t *testing.T) {
	env := openEnv(t)
	kr, err := tenantkey.Open(tenantkey.Options{KEK: testKEK, Upgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	env.opts.Keys = kr
	env.reopen()
	env.operator().create(tableInput("Legacy", false))
	a := env.tenant(tenancy.RoleApp)
	item := itemOf(t, `{"pk":{"S":"p"},"v":{"S":"old plaintext"}}`)
	a.put("Legacy", item)
	pk, _ := a.rawItem("Legacy", `{"pk":{"S":"p"}}`)
	plain := attr.EncodeItem(item)
	env.setRaw(pk, plain) // as written before encryption
	if got := a.get("Legacy", itemOf(t, `{"pk":{"S":"p"}}`)); got["v"].S != "old plaintext" {
		t.Fatalf("legacy plaintext item: %v", got)
	}
	if _, err := kr.StartRotation(a.p.Tenant, env.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := env.e.ResealTenant(testCtx, a.scope("GetItem"), "", func(int64, string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := kr.FinishRotation(a.p.Tenant); err != nil {
		t.Fatal(err)
	}
	k, _ := kr.Key(a.p.Tenant)
	if k.Status().Legacy {
		t.Fatal("still legacy after the rotation")
	}
	_, v := a.rawItem("Legacy", `{"pk":{"S":"p"}}`)
	if bytes.Contains(v, []byte("old plaintext")) {
		t.Fatal("the legacy value is still plaintext after the rotation")
	}
	if got := a.get("Legacy", itemOf(t, `{"pk":{"S":"p"}}`)); got["v"].S != "old plaintext" {
		t.Fatalf("re-encrypted item: %v", got)
	}
	env.setRaw(pk, plain)
	if _, err := env.e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Legacy", Key: itemOf(t, `{"pk":{"S":"p"}}`)}); !errors.Is(err, tenantkey.ErrUnreadable) {
		t.Fatalf("plaintext value after the legacy state ended: err %v, want unreadable", err)
	}
}
