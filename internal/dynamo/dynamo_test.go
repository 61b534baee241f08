package dynamo

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestTableIsConsistent: every operation has a unique name and target
// under a known service, a class the guard decides on, a constructor of
// a new zero input, and decodes a minimal request.
func TestTableIsConsistent(t *testing.T) {
	names, targets := map[string]bool{}, map[string]bool{}
	for _, op := range table {
		if op.Name == "" || names[op.Name] {
			t.Errorf("operation name %q is empty or repeated", op.Name)
		}
		names[op.Name] = true
		if targets[op.Target] {
			t.Errorf("target %q is repeated", op.Target)
		}
		targets[op.Target] = true
		if service, name, _ := strings.Cut(op.Target, "."); name != op.Name || !strings.HasSuffix(service, "_20120810") {
			t.Errorf("%s: target %q, want <service>_20120810.%[1]s", op.Name, op.Target)
		}
		switch op.Class {
		case tenancy.ClassMeta, tenancy.ClassRead, tenancy.ClassWrite, tenancy.ClassDDL:
		default:
			t.Errorf("%s: class %v", op.Name, op.Class)
		}
		a := op.New()
		if v := reflect.ValueOf(a); v.Kind() != reflect.Pointer || v.IsNil() || !v.Elem().IsZero() {
			t.Errorf("%s: New() = %#v, want a pointer to a zero input", op.Name, a)
		}
		in, err := op.Decode([]byte(` {} `))
		if err != nil {
			t.Errorf("%s: decoding {}: %v", op.Name, err)
		} else if reflect.TypeOf(in) != reflect.TypeOf(a) {
			t.Errorf("%s: decoded a %T, want %T", op.Name, in, a)
		}
		if _, err := op.Decode([]byte(`[]`)); !apierr.Is(err, apierr.Serialization) {
			t.Errorf("%s: decoding []: %v, want a SerializationException", op.Name, err)
		}
	}
	if got := Names(); !slices.IsSorted(got) || len(got) != len(table) {
		t.Errorf("Names() = %v", got)
	}
}

// TestEveryBackendMethodIsAnOperation proves the binding of the table to
// Backend: each Backend method is the operation of its name, the one that
// decodes into the method's input type. (define binds each entry to a
// method taking exactly the input its New returns, and no two methods
// share an input type, so an entry can be bound to no other method.)
func TestEveryBackendMethodIsAnOperation(t *testing.T) {
	bt := reflect.TypeFor[Backend]()
	if bt.NumMethod() != len(table) {
		t.Errorf("Backend has %d methods, the table %d operations", bt.NumMethod(), len(table))
	}
	byInput := map[reflect.Type]string{}
	for i := range bt.NumMethod() {
		m := bt.Method(i)
		in := m.Type.In(2)
		if other, ok := byInput[in]; ok {
			t.Errorf("Backend.%s and Backend.%s both take %v", m.Name, other, in)
		}
		byInput[in] = m.Name
		op, ok := Lookup(m.Name)
		if !ok {
			t.Errorf("Backend.%s is no operation of the table", m.Name)
			continue
		}
		if got := reflect.TypeOf(op.New()); got != in {
			t.Errorf("%s decodes into %v, Backend.%s takes %v", op.Name, got, m.Name, in)
		}
	}
}

// fake serves two operations; the others are never called.
type fake struct {
	Backend
	got []string
}

func (f *fake) PutItem(_ context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error) {
	f.got = append(f.got, "PutItem "+in.TableName)
	return &wire.PutItemOutput{}, nil
}

func (f *fake) GetItem(_ context.Context, s tenancy.Scope, in *wire.GetItemInput) (*wire.GetItemOutput, error) {
	f.got = append(f.got, "GetItem "+in.TableName)
	return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found")
}

func TestBind(t *testing.T) {
	f := &fake{}
	h := Bind(f)
	ctx := context.Background()
	put, _ := Lookup("PutItem")
	get, _ := Lookup("GetItem")
	var s tenancy.Scope // the fake does not look at it
	out, err := h.Handle(ctx, s, put, &wire.PutItemInput{TableName: "a"})
	if _, ok := out.(*wire.PutItemOutput); !ok || err != nil {
		t.Errorf("PutItem = %#v, %v", out, err)
	}
	out, err = h.Handle(ctx, s, get, &wire.GetItemInput{TableName: "b"})
	if out != nil || !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("GetItem = %#v, %v; want a nil Output and the error", out, err)
	}
	if want := []string{"PutItem a", "GetItem b"}; !slices.Equal(f.got, want) {
		t.Errorf("the backend saw %v, want %v", f.got, want)
	}
}

// TestGuardClassifiesEveryOperation: the guard knows every operation of
// the table, and refuses anything else as an unknown operation.
func TestGuardClassifiesEveryOperation(t *testing.T) {
	var g tenancy.Guard
	admin := tenancy.Principal{Tenant: tenancy.NewTenantID(), Env: "live", Role: tenancy.RoleAdmin, KeyID: "k"}
	for _, op := range table {
		s, err := g.Admit(admin, ActionOf(op.Name))
		if err != nil || s.Action() != op.Name {
			t.Errorf("%s: admin refused: %v", op.Name, err)
		}
	}
	for _, name := range []string{"CreateGlobalTable", "ListShards", "", "getitem"} {
		if _, err := g.Admit(admin, ActionOf(name)); !apierr.Is(err, apierr.UnknownOperation) {
			t.Errorf("%q: %v, want UnknownOperationException", name, err)
		}
	}
}

// TestGuardRoles: which role may run which operation follows from the
// classes in the table.
func TestGuardRoles(t *testing.T) {
	tenant := tenancy.NewTenantID()
	var g tenancy.Guard
	for _, tc := range []struct {
		role   tenancy.Role
		action string
		ok     bool
	}{
		{tenancy.RoleRead, "GetItem", true}, {tenancy.RoleRead, "Query", true}, {tenancy.RoleRead, "PutItem", false},
		{tenancy.RoleRead, "TransactWriteItems", false}, {tenancy.RoleRead, "CreateTable", false}, {tenancy.RoleRead, "DescribeTable", true},
		{tenancy.RoleApp, "PutItem", true}, {tenancy.RoleApp, "BatchWriteItem", true}, {tenancy.RoleApp, "CreateTable", false},
		{tenancy.RoleApp, "DeleteTable", false}, {tenancy.RoleApp, "TagResource", false},
		{tenancy.RoleAdmin, "CreateTable", true}, {tenancy.RoleAdmin, "PutItem", true},
		{tenancy.RoleOperator, "CreateTable", true}, {tenancy.RoleOperator, "GetItem", false}, {tenancy.RoleOperator, "Scan", false},
		{tenancy.RoleOperator, "PutItem", false}, {tenancy.RoleOperator, "TransactGetItems", false}, {tenancy.RoleOperator, "ListTables", true},
	} {
		p := tenancy.Principal{Tenant: tenant, Env: "live", Role: tc.role, KeyID: "k"}
		if tc.role == tenancy.RoleOperator {
			p.Tenant = tenancy.TenantID{}
		}
		s, err := g.Admit(p, ActionOf(tc.action))
		if tc.ok != (err == nil) {
			t.Errorf("%s %s: err = %v, want ok=%v", tc.role, tc.action, err, tc.ok)
			continue
		}
		if err != nil && apierr.KindOf(err) != apierr.AccessDenied {
			t.Errorf("%s %s: kind %v, want AccessDenied", tc.role, tc.action, apierr.KindOf(err))
		}
		if err == nil && (!s.Valid() || s.Tenant() != p.Tenant || s.Action() != tc.action) {
			t.Errorf("%s %s: scope %+v does not carry the principal", tc.role, tc.action, s)
		}
	}
}

// TestTables: the operations on items name the tables they touch (for
// per-table quotas); the others touch no items.
func TestTables(t *testing.T) {
	cases := map[string]struct {
		body string
		want []string
	}{
		"PutItem":    {`{"TableName":"a"}`, []string{"a"}},
		"GetItem":    {`{"TableName":"a"}`, []string{"a"}},
		"UpdateItem": {`{"TableName":"a"}`, []string{"a"}},
		"DeleteItem": {`{"TableName":"a"}`, []string{"a"}},
		"Query":      {`{"TableName":"a"}`, []string{"a"}},
		"Scan":       {`{"TableName":"a"}`, []string{"a"}},
		"BatchGetItem": {`{"RequestItems":{"a":{"Keys":[{"pk":{"S":"x"}}]},"b":{"Keys":[{"pk":{"S":"x"}}]}}}`,
			[]string{"a", "b"}},
		"BatchWriteItem": {`{"RequestItems":{"a":[{"DeleteRequest":{"Key":{"pk":{"S":"x"}}}}],"b":[]}}`,
			[]string{"a", "b"}},
		"TransactGetItems": {`{"TransactItems":[{"Get":{"TableName":"a","Key":{"pk":{"S":"x"}}}},{"Get":{"TableName":"b","Key":{"pk":{"S":"x"}}}}]}`,
			[]string{"a", "b"}},
		"ExecuteStatement":      {`{"Statement":"SELECT * FROM \"a\" WHERE pk = 'x'"}`, []string{"a"}},
		"BatchExecuteStatement": {`{"Statements":[{"Statement":"SELECT * FROM a WHERE pk = 'x'"},{"Statement":"DELETE FROM \"b\" WHERE pk = 'x'"}]}`, []string{"a", "b"}},
		"ExecuteTransaction":    {`{"TransactStatements":[{"Statement":"INSERT INTO a VALUE {'pk': 'x'}"},{"Statement":"EXISTS(SELECT * FROM b WHERE pk = 'x')"}]}`, []string{"a", "b"}},
		"TransactWriteItems": {`{"TransactItems":[{"Put":{"TableName":"a","Item":{"pk":{"S":"x"}}}},{"Update":{"TableName":"b","Key":{"pk":{"S":"x"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{"N":"1"}}}},{"Delete":{"TableName":"c","Key":{"pk":{"S":"x"}}}},{"ConditionCheck":{"TableName":"d","Key":{"pk":{"S":"x"}},"ConditionExpression":"attribute_exists(pk)"}}]}`,
			[]string{"a", "b", "c", "d"}},
		"GetShardIterator":         {`{"StreamArn":"arn:aws:dynamodb:r:1:table/a/stream/2026-01-01T00:00:00.000","ShardId":"s","ShardIteratorType":"LATEST"}`, []string{"a"}},
		"GetRecords":               {`{"ShardIterator":"x"}`, nil}, // the table is inside the sealed iterator
		"ExportTableToPointInTime": {`{"TableArn":"arn:aws:dynamodb:r:1:table/a","S3Bucket":"b"}`, []string{"a"}},
	}
	for _, op := range table {
		c, ok := cases[op.Name]
		onItems := op.Class == tenancy.ClassRead || op.Class == tenancy.ClassWrite
		if onItems != ok {
			t.Errorf("%s (class %v): no case here; an operation on items must name its tables", op.Name, op.Class)
			continue
		}
		if !ok {
			if got := op.Tables(op.New()); got != nil {
				t.Errorf("%s: tables %v, want none", op.Name, got)
			}
			continue
		}
		in, err := op.Decode([]byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		got := op.Tables(in)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: tables %v, want %v", op.Name, got, c.want)
		}
	}
}

func TestFromTarget(t *testing.T) {
	for _, c := range []struct {
		target, op string
		ok         bool
	}{
		{"DynamoDB_20120810.PutItem", "PutItem", true},
		{"DynamoDB_20120810.ExecuteStatement", "ExecuteStatement", true},
		{"DynamoDB_20120810.CreateGlobalTable", "", false},
		{"DynamoDB_20120810.", "", false},
		{"DynamoDBStreams_20120810.GetRecords", "GetRecords", true},
		{"DynamoDB_20120810.GetRecords", "", false},
		{"DynamoDBStreams_20120810.PutItem", "", false},
		{"", "", false},
		{"PutItem", "", false},
	} {
		op, ok := FromTarget(c.target)
		name := ""
		if ok {
			name = op.Name
		}
		if name != c.op || ok != c.ok {
			t.Errorf("FromTarget(%q) = %q, %v; want %q, %v", c.target, name, ok, c.op, c.ok)
		}
	}
}

// TestClassOf: the PartiQL operations are writes, for quotas, when one of
// their statements writes; every other operation has its table class.
func TestClassOf(t *testing.T) {
	for _, c := range []struct {
		op, body string
		want     tenancy.ActionClass
	}{
		{"ExecuteStatement", `{"Statement":"SELECT * FROM a"}`, tenancy.ClassRead},
		{"ExecuteStatement", `{"Statement":"INSERT INTO a VALUE {'pk': 1}"}`, tenancy.ClassWrite},
		{"ExecuteStatement", `{"Statement":"not a statement"}`, tenancy.ClassRead},
		{"BatchExecuteStatement", `{"Statements":[{"Statement":"SELECT * FROM a WHERE pk = 1"},{"Statement":"DELETE FROM a WHERE pk = 1"}]}`, tenancy.ClassWrite},
		{"ExecuteTransaction", `{"TransactStatements":[{"Statement":"EXISTS(SELECT * FROM a WHERE pk = 1)"}]}`, tenancy.ClassWrite},
		{"ExecuteTransaction", `{"TransactStatements":[{"Statement":"UPDATE a SET x = 1 WHERE pk = 1"}]}`, tenancy.ClassWrite},
		{"PutItem", `{}`, tenancy.ClassWrite},
		{"GetItem", `{}`, tenancy.ClassRead},
	} {
		op, _ := Lookup(c.op)
		in, err := op.Decode([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := op.ClassOf(in); got != c.want {
			t.Errorf("%s %s: class %v, want %v", c.op, c.body, got, c.want)
		}
	}
}
