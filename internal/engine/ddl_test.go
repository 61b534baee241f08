package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestCreateTableValidation(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	gsi := func(name, hash string) wire.GlobalSecondaryIndex {
		return wire.GlobalSecondaryIndex{IndexName: name, KeySchema: []wire.KeySchemaElement{{AttributeName: hash, KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "ALL"}}
	}
	lsi := func(name, rng string) wire.LocalSecondaryIndex {
		return wire.LocalSecondaryIndex{IndexName: name, KeySchema: []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: rng, KeyType: "RANGE"}}, Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"}}
	}
	defs := func(in *wire.CreateTableInput, names ...string) {
		for _, n := range names {
			in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: n, AttributeType: "S"})
		}
	}
	cases := []struct {
		name string
		edit func(in *wire.CreateTableInput)
		kind apierr.Kind
		msg  string
	}{
		{"short name", func(in *wire.CreateTableInput) { in.TableName = "ab" }, apierr.Validation, "Member must have length between 3 and 255"},
		{"bad name", func(in *wire.CreateTableInput) { in.TableName = "a b c" }, apierr.Validation, "regular expression pattern"},
		{"unused definition", func(in *wire.CreateTableInput) {
			defs(in, "x")
			in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{gsi("gsi1", "sk")}
		}, apierr.Validation, "Some AttributeDefinitions are not used. AttributeDefinitions: [pk, sk, x], keys used: [pk, sk]"},
		{"unused definition no index", func(in *wire.CreateTableInput) { defs(in, "x") }, apierr.Validation, "Number of attributes in KeySchema does not exactly match"},
		{"undefined key", func(in *wire.CreateTableInput) { in.AttributeDefinitions = in.AttributeDefinitions[:1] }, apierr.Validation, "Some index key attributes are not defined in AttributeDefinitions"},
		{"bad type", func(in *wire.CreateTableInput) { in.AttributeDefinitions[1].AttributeType = "BOOL" }, apierr.Validation, "Member must satisfy enum value set: [B, N, S]"},
		{"range first", func(in *wire.CreateTableInput) {
			in.KeySchema[0].KeyType, in.KeySchema[1].KeyType = "RANGE", "HASH"
		}, apierr.Validation, "The first KeySchemaElement is not a HASH key type"},
		{"same key twice", func(in *wire.CreateTableInput) { in.KeySchema[1].AttributeName = "pk" }, apierr.Validation, "have the same name"},
		{"provisioned without throughput", func(in *wire.CreateTableInput) { in.BillingMode = "" }, apierr.Validation, "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"},
		{"on demand with throughput", func(in *wire.CreateTableInput) {
			in.ProvisionedThroughput = &wire.ProvisionedThroughput{ReadCapacityUnits: i64Ptr(1), WriteCapacityUnits: i64Ptr(1)}
		}, apierr.Validation, "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified"},
		{"zero throughput", func(in *wire.CreateTableInput) {
			in.BillingMode = "PROVISIONED"
			in.ProvisionedThroughput = &wire.ProvisionedThroughput{ReadCapacityUnits: i64Ptr(0), WriteCapacityUnits: i64Ptr(1)}
		}, apierr.Validation, "greater than or equal to 1"},
		{"lsi without table range", func(in *wire.CreateTableInput) {
			in.KeySchema = in.KeySchema[:1]
			in.AttributeDefinitions = in.AttributeDefinitions[:1]
			defs(in, "a")
			in.LocalSecondaryIndexes = []wire.LocalSecondaryIndex{lsi("lsi1", "a")}
		}, apierr.Validation, "Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex"},
		{"lsi other hash", func(in *wire.CreateTableInput) {
			defs(in, "a")
			l := lsi("lsi1", "a")
			l.KeySchema[0].AttributeName = "sk"
			in.LocalSecondaryIndexes = []wire.LocalSecondaryIndex{l}
		}, apierr.Validation, "Index KeySchema does not have the same leading hash key as table KeySchema for index: lsi1"},
		{"lsi without range", func(in *wire.CreateTableInput) {
			l := lsi("lsi1", "a")
			l.KeySchema = l.KeySchema[:1]
			in.LocalSecondaryIndexes = []wire.LocalSecondaryIndex{l}
		}, apierr.Validation, "Index KeySchema does not have a range key for index: lsi1"},
		{"six lsis", func(in *wire.CreateTableInput) {
			for i := 0; i < 6; i++ {
				defs(in, fmt.Sprintf("a%d", i))
				in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, lsi(fmt.Sprintf("lsi%d", i), fmt.Sprintf("a%d", i)))
			}
		}, apierr.Validation, "Number of LocalSecondaryIndexes exceeds per-table limit of 5"},
		{"21 gsis", func(in *wire.CreateTableInput) {
			for i := 0; i < 21; i++ {
				defs(in, fmt.Sprintf("g%d", i))
				in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, gsi(fmt.Sprintf("gsi%d", i), fmt.Sprintf("g%d", i)))
			}
		}, apierr.Validation, "GlobalSecondaryIndex count exceeds the per-table limit of 20"},
		{"short index name", func(in *wire.CreateTableInput) {
			in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{gsi("ix", "sk")}
		}, apierr.Validation, "Member must have length between 3 and 255"},
		{"duplicate index", func(in *wire.CreateTableInput) {
			in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{gsi("gsi1", "sk"), gsi("gsi1", "sk")}
		}, apierr.Validation, "Duplicate index name: gsi1"},
		{"non-key attrs with ALL", func(in *wire.CreateTableInput) {
			g := gsi("gsi1", "sk")
			g.Projection.NonKeyAttributes = []string{"x"}
			in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{g}
		}, apierr.Validation, "ProjectionType is ALL, but NonKeyAttributes is specified"},
		{"gsi throughput on demand", func(in *wire.CreateTableInput) {
			g := gsi("gsi1", "sk")
			g.ProvisionedThroughput = &wire.ProvisionedThroughput{ReadCapacityUnits: i64Ptr(1), WriteCapacityUnits: i64Ptr(1)}
			in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{g}
		}, apierr.Validation, "ProvisionedThroughput should not be specified for index: gsi1"},
		{"gsi provisioned without throughput", func(in *wire.CreateTableInput) {
			in.BillingMode = "PROVISIONED"
			in.ProvisionedThroughput = &wire.ProvisionedThroughput{ReadCapacityUnits: i64Ptr(1), WriteCapacityUnits: i64Ptr(1)}
			in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{gsi("gsi1", "sk")}
		}, apierr.Validation, "ProvisionedThroughput must be specified for index: gsi1"},
		{"bad isolation", func(in *wire.CreateTableInput) {
			in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "pool"}}
		}, apierr.Validation, "must be one of namespace, leading-keys, silo"},
		{"leading-keys without pattern", func(in *wire.CreateTableInput) {
			in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "leading-keys"}}
		}, apierr.Validation, "containing {tenant}"},
		{"pattern without tenant", func(in *wire.CreateTableInput) {
			in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "leading-keys"}, {Key: tenancy.TagLeadingKeyPattern, Value: "TENANT#*"}}
		}, apierr.Validation, "containing {tenant}"},
		{"pattern without leading-keys", func(in *wire.CreateTableInput) {
			in.Tags = []wire.Tag{{Key: tenancy.TagLeadingKeyPattern, Value: "T#{tenant}*"}}
		}, apierr.Validation, "requires tenantdb:isolation=leading-keys"},
		{"stream without view type", func(in *wire.CreateTableInput) {
			in.StreamSpecification = &wire.StreamSpecification{StreamEnabled: boolPtr(true)}
		}, apierr.Validation, "StreamViewType"},
		{"stream enabled", func(in *wire.CreateTableInput) {
			in.StreamSpecification = &wire.StreamSpecification{StreamEnabled: boolPtr(true), StreamViewType: "KEYS_ONLY"}
		}, apierr.Validation, "tenantdb has no change streams yet"},
		{"encryption under a KMS key", func(in *wire.CreateTableInput) {
			in.SSESpecification = json.RawMessage(`{"Enabled":true,"SSEType":"KMS"}`)
		}, apierr.Validation, "tenantdb has no KMS keys"},
		{"encryption with a KMS key only", func(in *wire.CreateTableInput) {
			in.SSESpecification = json.RawMessage(`{"KMSMasterKeyId":"alias/x"}`)
		}, apierr.Validation, "tenantdb has no KMS keys"},
		{"encryption of an unknown type", func(in *wire.CreateTableInput) {
			in.SSESpecification = json.RawMessage(`{"Enabled":true,"SSEType":"ROT13"}`)
		}, apierr.Validation, "Member must satisfy enum value set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := tableInput("Valid", true)
			c.edit(in)
			_, err := env.e.CreateTable(testCtx, op.scope("CreateTable"), in)
			wantErr(t, err, c.kind, c.msg)
		})
	}

	// A leading-keys table with a number GSI partition key is refused.
	in := tableInput("LKTable", true)
	in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "leading-keys"}, {Key: tenancy.TagLeadingKeyPattern, Value: "T#{tenant}#*"}}
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "n", AttributeType: "N"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{gsi("byN", "n")}
	_, err := env.e.CreateTable(testCtx, op.scope("CreateTable"), in)
	wantErr(t, err, apierr.Validation, "must be of type S")
}

func TestCreateDescribeDelete(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	in := tableInput("Orders", true)
	in.AttributeDefinitions = append(in.AttributeDefinitions,
		wire.AttributeDefinition{AttributeName: "status", AttributeType: "S"},
		wire.AttributeDefinition{AttributeName: "date", AttributeType: "N"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{
		IndexName: "byStatus", KeySchema: []wire.KeySchemaElement{{AttributeName: "status", KeyType: "HASH"}, {AttributeName: "date", KeyType: "RANGE"}},
		Projection: &wire.Projection{ProjectionType: "INCLUDE", NonKeyAttributes: []string{"total"}},
	}}
	in.LocalSecondaryIndexes = []wire.LocalSecondaryIndex{{
		IndexName: "byDate", KeySchema: []wire.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "date", KeyType: "RANGE"}},
		Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"},
	}}
	in.Tags = []wire.Tag{{Key: "team", Value: "a"}}
	d := op.create(in)
	if d.TableStatus != "ACTIVE" || d.TableArn != "arn:aws:dynamodb:us-east-1:000000000000:table/Orders" || d.TableId == "" {
		t.Fatalf("description = %+v", d)
	}
	if len(d.GlobalSecondaryIndexes) != 1 || d.GlobalSecondaryIndexes[0].IndexStatus != "ACTIVE" || d.GlobalSecondaryIndexes[0].Projection.NonKeyAttributes[0] != "total" {
		t.Fatalf("GSIs = %+v", d.GlobalSecondaryIndexes)
	}
	if len(d.LocalSecondaryIndexes) != 1 || d.BillingModeSummary.BillingMode != "PAY_PER_REQUEST" {
		t.Fatalf("LSIs = %+v, billing %+v", d.LocalSecondaryIndexes, d.BillingModeSummary)
	}

	_, err := env.e.CreateTable(testCtx, op.scope("CreateTable"), in)
	wantErr(t, err, apierr.ResourceInUse, "Table already exists: Orders")

	// Definitions survive a restart, ids keep growing.
	env.reopen()
	d2 := op.describe("Orders")
	if d2.TableId != d.TableId || len(d2.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("after reopen: %+v", d2)
	}
	ten := env.tenant(tenancy.RoleApp)
	ten.put("Orders", itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"},"status":{"S":"open"},"date":{"N":"5"},"total":{"N":"10"}}`))

	_, err = env.e.DeleteTable(testCtx, ten.as(tenancy.RoleAdmin).scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Orders"})
	wantErr(t, err, apierr.AccessDenied, "not authorized")

	out, err := env.e.DeleteTable(testCtx, op.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Orders"})
	noErr(t, err)
	if out.TableDescription.TableStatus != "DELETING" {
		t.Fatalf("status = %s", out.TableDescription.TableStatus)
	}
	_, err = env.e.DescribeTable(testCtx, op.scope("DescribeTable"), &wire.DescribeTableInput{TableName: "Orders"})
	wantErr(t, err, apierr.ResourceNotFound, "Orders not found")

	// A recreated table never sees the old items, and the old data is gone.
	op.create(tableInput("Orders", true))
	if got := ten.get("Orders", itemOf(t, `{"pk":{"S":"a"},"sk":{"S":"1"}}`)); got != nil {
		t.Fatalf("recreated table shows old item %s", showItem(got))
	}
	lo, hi := keyspace.NamespaceRange(ten.p.Tenant, ten.p.Env)
	it := env.db.NewIter(lo, hi)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	if n != 0 {
		t.Fatalf("%d keys of the dropped table remain in the tenant's range", n)
	}
}

func TestDeletionProtection(t *testing.T) {
	env := openEnv(t)
	admin := env.tenant(tenancy.RoleAdmin)
	in := tableInput("Keep", false)
	in.DeletionProtectionEnabled = boolPtr(true)
	admin.create(in)
	_, err := env.e.DeleteTable(testCtx, admin.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Keep"})
	wantErr(t, err, apierr.Validation, "protected against deletion")
	_, err = env.e.UpdateTable(testCtx, admin.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Keep", DeletionProtectionEnabled: boolPtr(false)})
	noErr(t, err)
	_, err = env.e.DeleteTable(testCtx, admin.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Keep"})
	noErr(t, err)
}

func TestTenantTablesAndListTables(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	a := env.tenant(tenancy.RoleAdmin)
	b := env.tenant(tenancy.RoleAdmin)
	op.create(tableInput("Shared1", false))
	op.create(tableInput("Shared2", false))
	a.create(tableInput("AOwn", false))
	b.create(tableInput("BOwn", false))

	// A tenant table may not clash with a shared one; another tenant's
	// names are free.
	_, err := env.e.CreateTable(testCtx, a.scope("CreateTable"), tableInput("Shared1", false))
	wantErr(t, err, apierr.ResourceInUse, "Table already exists: Shared1")
	a.create(tableInput("BOwn", false))

	// An app key may not create tables.
	_, err = env.e.CreateTable(testCtx, a.as(tenancy.RoleApp).scope("PutItem"), tableInput("Nope", false))
	wantErr(t, err, apierr.AccessDenied, "not authorized")

	list := func(act testActor, start string, limit int) *wire.ListTablesOutput {
		t.Helper()
		in := &wire.ListTablesInput{ExclusiveStartTableName: start}
		if limit > 0 {
			in.Limit = &limit
		}
		out, err := env.e.ListTables(testCtx, act.scope("ListTables"), in)
		noErr(t, err)
		return out
	}
	if got := strings.Join(list(op, "", 0).TableNames, ","); got != "Shared1,Shared2" {
		t.Fatalf("operator sees %s", got)
	}
	if got := strings.Join(list(a, "", 0).TableNames, ","); got != "AOwn,BOwn,Shared1,Shared2" {
		t.Fatalf("tenant a sees %s", got)
	}
	if got := strings.Join(list(b, "", 0).TableNames, ","); got != "BOwn,Shared1,Shared2" {
		t.Fatalf("tenant b sees %s", got)
	}
	p1 := list(a, "", 3)
	if strings.Join(p1.TableNames, ",") != "AOwn,BOwn,Shared1" || p1.LastEvaluatedTableName != "Shared1" {
		t.Fatalf("page 1 = %+v", p1)
	}
	p2 := list(a, p1.LastEvaluatedTableName, 3)
	if strings.Join(p2.TableNames, ",") != "Shared2" || p2.LastEvaluatedTableName != "" {
		t.Fatalf("page 2 = %+v", p2)
	}
	limit := 101
	_, err = env.e.ListTables(testCtx, a.scope("ListTables"), &wire.ListTablesInput{Limit: &limit})
	wantErr(t, err, apierr.Validation, "less than or equal to 100")

	// Another tenant's table is not found, whatever the caller.
	_, err = env.e.DescribeTable(testCtx, b.scope("DescribeTable"), &wire.DescribeTableInput{TableName: "AOwn"})
	wantErr(t, err, apierr.ResourceNotFound, "AOwn not found")
	_, err = env.e.DescribeTable(testCtx, op.scope("DescribeTable"), &wire.DescribeTableInput{TableName: "AOwn"})
	wantErr(t, err, apierr.ResourceNotFound, "AOwn not found")
	_, err = env.e.DeleteTable(testCtx, b.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "AOwn"})
	wantErr(t, err, apierr.ResourceNotFound, "AOwn not found")

	// Tenant tables survive a restart.
	env.reopen()
	if got := strings.Join(list(a, "", 0).TableNames, ","); got != "AOwn,BOwn,Shared1,Shared2" {
		t.Fatalf("after reopen tenant a sees %s", got)
	}
	// Data in a's own BOwn is a's.
	a.as(tenancy.RoleApp).put("BOwn", itemOf(t, `{"pk":{"S":"x"}}`))
	if got := b.as(tenancy.RoleApp).get("BOwn", itemOf(t, `{"pk":{"S":"x"}}`)); got != nil {
		t.Fatalf("tenant b reads tenant a's item %s", showItem(got))
	}
}

func TestDescribeTableCountsPerTenant(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	in := tableInput("Pool", false)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "g", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"}}}
	op.create(in)
	a := env.tenant(tenancy.RoleApp)
	b := env.tenant(tenancy.RoleApp)
	for i := 0; i < 3; i++ {
		a.put("Pool", itemOf(t, fmt.Sprintf(`{"pk":{"S":"a%d"},"g":{"S":"x"},"pad":{"S":"0123456789"}}`, i)))
	}
	b.put("Pool", itemOf(t, `{"pk":{"S":"b0"}}`))

	da := a.describe("Pool")
	if da.ItemCount != 3 || da.TableSizeBytes != 3*(2+2+1+1+3+10) {
		t.Fatalf("tenant a: count %d size %d", da.ItemCount, da.TableSizeBytes)
	}
	if g := da.GlobalSecondaryIndexes[0]; g.ItemCount != 3 {
		t.Fatalf("tenant a index count %d", g.ItemCount)
	}
	db := b.describe("Pool")
	if db.ItemCount != 1 || db.GlobalSecondaryIndexes[0].ItemCount != 0 {
		t.Fatalf("tenant b: count %d, index %d", db.ItemCount, db.GlobalSecondaryIndexes[0].ItemCount)
	}
	do := op.describe("Pool")
	if do.ItemCount != 0 || do.TableSizeBytes != 0 {
		t.Fatalf("operator sees count %d size %d", do.ItemCount, do.TableSizeBytes)
	}
	_, err := env.e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Pool", Key: itemOf(t, `{"pk":{"S":"a0"}}`)})
	noErr(t, err)
	if n := a.describe("Pool").ItemCount; n != 2 {
		t.Fatalf("after delete count %d", n)
	}
}

func TestUpdateTableGSIBackfill(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	op.create(tableInput("Tbl", true))
	a := env.tenant(tenancy.RoleApp)
	b := env.tenant(tenancy.RoleApp)
	for i := 0; i < 300; i++ { // more than one backfill chunk
		g := ""
		if i%3 != 0 { // every third item has no g: sparse
			g = fmt.Sprintf(`,"g":{"S":"v%d"}`, i%7)
		}
		a.put("Tbl", itemOf(t, fmt.Sprintf(`{"pk":{"S":"p%d"},"sk":{"S":"s"}%s}`, i, g)))
	}
	b.put("Tbl", itemOf(t, `{"pk":{"S":"b"},"sk":{"S":"s"},"g":{"S":"v1"}}`))
	b.put("Tbl", itemOf(t, `{"pk":{"S":"c"},"sk":{"S":"s"},"g":{"N":"1"}}`)) // wrong type: no entry

	out, err := env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{
		TableName:            "Tbl",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "g", AttributeType: "S"}},
		GlobalSecondaryIndexUpdates: []wire.GlobalSecondaryIndexUpdate{{Create: &wire.CreateGlobalSecondaryIndexAction{
			IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "ALL"},
		}}},
	})
	noErr(t, err)
	if out.TableDescription.TableStatus != "UPDATING" || len(out.TableDescription.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("UpdateTable = %+v", out.TableDescription)
	}
	// A write during the backfill maintains the index itself.
	a.put("Tbl", itemOf(t, `{"pk":{"S":"p1"},"sk":{"S":"s"},"g":{"S":"changed"}}`))

	deadline := time.Now().Add(20 * time.Second)
	for {
		d := op.describe("Tbl")
		if d.GlobalSecondaryIndexes[0].IndexStatus == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("index still %s", d.GlobalSecondaryIndexes[0].IndexStatus)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := len(a.indexEntries("Tbl", 1)); got != 200 {
		t.Fatalf("tenant a has %d index entries, want 200", got)
	}
	if n, _ := a.counters("Tbl", 1); n != 200 {
		t.Fatalf("tenant a index counter %d, want 200", n)
	}
	if got := len(b.indexEntries("Tbl", 1)); got != 1 {
		t.Fatalf("tenant b has %d index entries, want 1", got)
	}
	// DescribeTable shows the definition, and writes now reject a g of the
	// wrong type.
	if d := op.describe("Tbl"); len(d.AttributeDefinitions) != 3 {
		t.Fatalf("attribute definitions %+v", d.AttributeDefinitions)
	}
	_, err = env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Tbl", Item: itemOf(t, `{"pk":{"S":"z"},"sk":{"S":"s"},"g":{"N":"1"}}`)})
	wantErr(t, err, apierr.Validation, "Type mismatch for Index Key g")

	// Delete the index: entries and counters go, the definition drops g.
	_, err = env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{
		TableName:                   "Tbl",
		GlobalSecondaryIndexUpdates: []wire.GlobalSecondaryIndexUpdate{{Delete: &wire.DeleteGlobalSecondaryIndexAction{IndexName: "byG"}}},
	})
	noErr(t, err)
	if got := len(a.indexEntries("Tbl", 1)); got != 0 {
		t.Fatalf("%d entries remain after index deletion", got)
	}
	if n, _ := a.counters("Tbl", 1); n != 0 {
		t.Fatalf("index counter %d after deletion", n)
	}
	if d := op.describe("Tbl"); len(d.GlobalSecondaryIndexes) != 0 || len(d.AttributeDefinitions) != 2 {
		t.Fatalf("after delete: %+v", d)
	}
}

func TestUpdateTableValidation(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	op.create(tableInput("Tbl", false))
	_, err := env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Tbl"})
	wantErr(t, err, apierr.Validation, "At least one of")
	_, err = env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Tbl",
		ProvisionedThroughput: &wire.ProvisionedThroughput{ReadCapacityUnits: i64Ptr(5), WriteCapacityUnits: i64Ptr(5)}})
	wantErr(t, err, apierr.Validation, "PAY_PER_REQUEST")
	out, err := env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Tbl", BillingMode: "PROVISIONED",
		ProvisionedThroughput: &wire.ProvisionedThroughput{ReadCapacityUnits: i64Ptr(5), WriteCapacityUnits: i64Ptr(7)}})
	noErr(t, err)
	if pt := out.TableDescription.ProvisionedThroughput; pt.ReadCapacityUnits != 5 || pt.WriteCapacityUnits != 7 || out.TableDescription.BillingModeSummary.BillingMode != "PROVISIONED" {
		t.Fatalf("throughput %+v", pt)
	}
	_, err = env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Tbl",
		GlobalSecondaryIndexUpdates: []wire.GlobalSecondaryIndexUpdate{{Delete: &wire.DeleteGlobalSecondaryIndexAction{IndexName: "nope"}}}})
	wantErr(t, err, apierr.ResourceNotFound, "Index: nope not found")
	_, err = env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Tbl",
		GlobalSecondaryIndexUpdates: []wire.GlobalSecondaryIndexUpdate{{Create: &wire.CreateGlobalSecondaryIndexAction{
			IndexName: "byX", KeySchema: []wire.KeySchemaElement{{AttributeName: "x", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "ALL"},
			ProvisionedThroughput: &wire.ProvisionedThroughput{ReadCapacityUnits: i64Ptr(1), WriteCapacityUnits: i64Ptr(1)}}}}})
	wantErr(t, err, apierr.Validation, "Some index key attributes are not defined")
	ten := env.tenant(tenancy.RoleAdmin)
	_, err = env.e.UpdateTable(testCtx, ten.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Tbl", DeletionProtectionEnabled: boolPtr(true)})
	wantErr(t, err, apierr.AccessDenied, "not authorized")
}

// TestBackfillUnderConcurrentWrites checks the invariant "index entries and
// counters match the items" after a GSI is backfilled while writers change
// the items it covers.
func TestBackfillUnderConcurrentWrites(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	op.create(tableInput("Busy", false))
	a := env.tenant(tenancy.RoleApp)
	const keys = 400
	for i := 0; i < keys; i++ {
		a.put("Busy", itemOf(t, fmt.Sprintf(`{"pk":{"S":"k%d"},"g":{"S":"v%d"}}`, i, i%5)))
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < 150; i++ {
				k := fmt.Sprintf("k%d", r.Intn(keys))
				var err error
				switch r.Intn(3) {
				case 0:
					_, err = env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Busy", Item: itemOf(t, fmt.Sprintf(`{"pk":{"S":"%s"},"g":{"S":"w%d"}}`, k, r.Intn(5)))})
				case 1:
					_, err = env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Busy", Item: itemOf(t, fmt.Sprintf(`{"pk":{"S":"%s"}}`, k))})
				case 2:
					_, err = env.e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Busy", Key: itemOf(t, fmt.Sprintf(`{"pk":{"S":"%s"}}`, k))})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	// Create the index while the writers run.
	_, err := env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{
		TableName:            "Busy",
		AttributeDefinitions: []wire.AttributeDefinition{{AttributeName: "g", AttributeType: "S"}},
		GlobalSecondaryIndexUpdates: []wire.GlobalSecondaryIndexUpdate{{Create: &wire.CreateGlobalSecondaryIndexAction{
			IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"},
		}}},
	})
	noErr(t, err)
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for op.describe("Busy").GlobalSecondaryIndexes[0].IndexStatus != "ACTIVE" {
		if time.Now().After(deadline) {
			t.Fatal("backfill did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Count the items that carry g, straight from storage.
	h, err := env.e.open(context.Background(), a.scope("GetItem"), "Busy")
	noErr(t, err)
	p := keyspace.Items(h.Namespace, h.Table.ID)
	it := env.db.NewIter(p, keyspace.PrefixEnd(p))
	withG := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		item, err := h.vals.decode(it.Key(), it.Value())
		noErr(t, err)
		if g, ok := item["g"]; ok {
			withG[item["pk"].S] = g.S
		}
	}
	it.Close()
	entries := a.indexEntries("Busy", 1)
	if len(entries) != len(withG) {
		t.Fatalf("%d index entries for %d items with g", len(entries), len(withG))
	}
	for _, e := range entries {
		if withG[e["pk"].S] != e["g"].S {
			t.Fatalf("entry %s does not match item g=%q", showItem(e), withG[e["pk"].S])
		}
	}
	if n, _ := a.counters("Busy", 1); n != int64(len(withG)) {
		t.Fatalf("index counter %d, want %d", n, len(withG))
	}
}
