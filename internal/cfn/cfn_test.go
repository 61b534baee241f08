package cfn

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tenantdb/tenantdb/internal/wire"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSeed002Verbatim: testdata/seed002_app_data.yaml is the CloudFormation
// template of seed 002, byte for byte: the same file as tests/seeds'
// copy, which that package checks against the seed document itself.
func TestSeed002Verbatim(t *testing.T) {
	seeds, err := os.ReadFile("../../tests/seeds/testdata/seed002_app_data.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readTestdata(t, "seed002_app_data.yaml"), seeds) {
		t.Fatal("testdata/seed002_app_data.yaml differs from tests/seeds/testdata/seed002_app_data.yaml, the seed's template")
	}
}

func TestSeed002(t *testing.T) {
	tmpl, err := Parse(readTestdata(t, "seed002_app_data.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.Tables) != 1 || len(tmpl.Warnings) != 0 {
		t.Fatalf("got %d tables and warnings %q, want 1 table and none", len(tmpl.Tables), tmpl.Warnings)
	}
	tb := tmpl.Tables[0]
	if tb.LogicalID != "AppDataTable" || tb.TimeToLive != nil {
		t.Errorf("logical id %q, TTL %v; want AppDataTable, none", tb.LogicalID, tb.TimeToLive)
	}
	key := func(h, r string) []wire.KeySchemaElement {
		return []wire.KeySchemaElement{{AttributeName: h, KeyType: "HASH"}, {AttributeName: r, KeyType: "RANGE"}}
	}
	var defs []wire.AttributeDefinition
	for _, n := range []string{"PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK"} {
		defs = append(defs, wire.AttributeDefinition{AttributeName: n, AttributeType: "S"})
	}
	var gsis []wire.GlobalSecondaryIndex
	for _, g := range []string{"GSI1", "GSI2", "GSI3"} {
		gsis = append(gsis, wire.GlobalSecondaryIndex{IndexName: g, KeySchema: key(g+"PK", g+"SK"), Projection: &wire.Projection{ProjectionType: "ALL"}})
	}
	want := wire.CreateTableInput{
		TableName:              "app_data",
		BillingMode:            "PAY_PER_REQUEST",
		AttributeDefinitions:   defs,
		KeySchema:              key("PK", "SK"),
		GlobalSecondaryIndexes: gsis,
		Tags:                   []wire.Tag{{Key: "Environment", Value: "production"}, {Key: "Application", Value: "multi-tenant-platform"}},
	}
	if !reflect.DeepEqual(tb.CreateTable, want) {
		got, _ := json.MarshalIndent(tb.CreateTable, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("CreateTable:\n%s\nwant:\n%s", got, exp)
	}
}

// TestGolden parses the templates named in testdata/parse and compares
// what Parse read with the expected JSON there (go test -rewrite updates
// it; review the diff).
func TestGolden(t *testing.T) {
	datadriven.RunTest(t, "testdata/parse", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "parse" {
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
		var template string
		var params map[string]string
		for _, a := range d.CmdArgs {
			if a.Key == "template" {
				template = strings.Join(a.Vals, ",")
				continue
			}
			if params == nil {
				params = map[string]string{}
			}
			params[a.Key] = strings.Join(a.Vals, ",")
		}
		tmpl, err := Parse(readTestdata(t, template), Options{Parameters: params, StackName: "stack"})
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		got, err := json.MarshalIndent(tmpl, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	})
}

func TestMalformed(t *testing.T) {
	table := func(props string) string {
		return "Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties:\n" + props
	}
	keys := "      KeySchema: [{AttributeName: id, KeyType: HASH}]\n      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]\n"
	for _, c := range []struct {
		name, src string
		params    map[string]string
		want      string // substring of the error
	}{
		{"not yaml", "Resources: [unclosed", nil, "not a YAML or JSON template"},
		{"bad json", `{"Resources": {"T": }`, nil, "not a YAML or JSON template"},
		{"empty", "", nil, "not a YAML or JSON template"},
		{"scalar", "just text", nil, "a mapping with a Resources section"},
		{"two documents", "Resources: {}\n---\nResources: {}\n", nil, "one YAML document"},
		{"no resources", "Description: nothing\n", nil, "no Resources section"},
		{"unknown section", "Resource: {}\n", nil, "line 1, column 1: invalid template section Resource"},
		{"ssm parameter", "Parameters:\n  P: {Type: 'AWS::SSM::Parameter::Value<String>', Default: /x}\n" + table(keys+"      TableName: !Ref P\n"), nil, "cannot be resolved outside AWS"},
		{"resources a list", "Resources: [a]\n", nil, "Resources: expected a mapping"},
		{"duplicate resource", "Resources:\n  T: {Type: X}\n  T: {Type: Y}\n", nil, "line 3, column 3: Resources: duplicate key T"},
		{"unknown tag", "Resources:\n  T:\n    Type: !Bogus x\n", nil, "line 3, column 11: unknown tag !Bogus"},
		{"no type", "Resources:\n  T: {Properties: {}}\n", nil, "Resources.T.Type: missing value"},
		{"no properties", "Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n", nil, "needs Properties"},
		{"bad resource attribute", "Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Propertys: {}\n", nil, "invalid resource attribute Propertys"},
		{"no key schema", table("      TableName: x\n"), nil, "required property KeySchema is missing"},
		{"unknown property", table(keys + "      ReadCapacity: 5\n"), nil, "line 7, column 7: Resources.T.Properties: unsupported property ReadCapacity"},
		{"key schema not a list", table("      KeySchema: {AttributeName: id}\n"), nil, "Resources.T.Properties.KeySchema: expected a list, got a mapping"},
		{"key element missing type", table("      KeySchema: [{AttributeName: id}]\n"), nil, "KeySchema[0]: required property KeyType is missing"},
		{"key element extra", table("      KeySchema: [{AttributeName: id, KeyType: HASH, Type: S}]\n"), nil, "unsupported property Type"},
		{"table name a list", table(keys + "      TableName: [a]\n"), nil, "TableName: expected a string, got a list"},
		{"throughput not a number", table(keys + "      ProvisionedThroughput: {ReadCapacityUnits: five, WriteCapacityUnits: 1}\n"), nil, `ReadCapacityUnits: expected an integer, got "five"`},
		{"deletion protection", table(keys + "      DeletionProtectionEnabled: maybe\n"), nil, `expected true or false, got "maybe"`},
		{"ttl without attribute", table(keys + "      TimeToLiveSpecification: {Enabled: true}\n"), nil, "AttributeName is required when Enabled is true"},
		{"stream without view type", table(keys + "      StreamSpecification: {}\n"), nil, "required property StreamViewType is missing"},
		{"point-in-time recovery", table(keys + "      PointInTimeRecoverySpecification: {PointInTimeRecoveryEnabled: true}\n"), nil, "PointInTimeRecoveryEnabled: point-in-time recovery is per tenant in tenantdb"},
		{"point-in-time recovery not a bool", table(keys + "      PointInTimeRecoverySpecification: {PointInTimeRecoveryEnabled: yes}\n"), nil, `expected true or false, got "yes"`},
		{"encryption under a KMS key", table(keys + "      SSESpecification: {SSEEnabled: true, SSEType: KMS}\n"), nil, "tenantdb has no KMS keys"},
		{"gsi without projection", table(keys + "      GlobalSecondaryIndexes: [{IndexName: g, KeySchema: [{AttributeName: id, KeyType: HASH}]}]\n"), nil, "GlobalSecondaryIndexes[0]: required property Projection is missing"},
		{"tags not pairs", table(keys + "      Tags: {Environment: prod}\n"), nil, "Tags: expected a list, got a mapping"},
		{"import source", table(keys + "      ImportSourceSpecification: {}\n"), nil, "importing a table from S3 is not supported"},
		{"getatt in properties", table(keys + "      TableName: !GetAtt Other.Arn\n"), nil, "Fn::GetAtt Other.Arn has no value before the stack exists"},
		{"sub of an attribute", table(keys + "      TableName: !Sub '${Other.Arn}-x'\n"), nil, "${Other.Arn} is an attribute"},
		{"import value", table(keys + "      TableName: !ImportValue x\n"), nil, "Fn::ImportValue cannot be evaluated outside AWS"},
		{"unresolved ref", table(keys + "      TableName: !Ref Nope\n"), nil, "unresolved reference Nope"},
		{"ref of a non-table", "Resources:\n  Q: {Type: AWS::SQS::Queue}\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties:\n" + keys + "      TableName: !Ref Q\n", nil, "Ref Q: a AWS::SQS::Queue has no value"},
		{"parameter without default", "Parameters:\n  P: {Type: String}\n" + table(keys+"      TableName: !Ref P\n"), nil, "parameter P has no Default"},
		{"parameter not allowed", "Parameters:\n  P: {Type: String, Default: a, AllowedValues: [a, b]}\n" + table(keys+"      TableName: !Ref P\n"), map[string]string{"P": "c"}, `value "c" is not one of the AllowedValues`},
		{"parameter not a number", "Parameters:\n  P: {Type: Number, Default: x}\n" + table(keys+"      TableName: !Ref P\n"), nil, "is not a number"},
		{"undeclared parameter", table(keys), map[string]string{"Q": "1"}, "parameter Q is given a value but the template does not declare it"},
		{"undefined condition", table(keys + "      TableName: !If [Nope, a, b]\n"), nil, "condition Nope is not defined"},
		{"condition cycle", "Conditions:\n  A: !Condition B\n  B: !Not [!Condition A]\n" + table(keys+"      TableName: !If [A, a, b]\n"), nil, "refers to itself"},
		{"equals in properties", table(keys + "      TableName: !Equals [a, b]\n"), nil, "Fn::Equals can be used only in Conditions"},
		{"select out of range", table(keys + "      TableName: !Select [3, [a, b]]\n"), nil, `Fn::Select index "3" is not within the list of 2 elements`},
		{"join of a list of lists", table(keys + "      TableName: !Join ['-', [[a]]]\n"), nil, "Fn::Join joins strings"},
		{"join wrong arity", table(keys + "      TableName: !Join ['-']\n"), nil, "Fn::Join takes a list of 2 elements, got 1"},
		{"sub unterminated", table(keys + "      TableName: !Sub 'a${b'\n"), nil, "unterminated ${"},
		{"find in map missing", "Mappings:\n  M: {a: {b: c}}\n" + table(keys+"      TableName: !FindInMap [M, a, x]\n"), nil, "Mappings has no M.a.x"},
		{"merge key", "Metadata: {x: &x {Type: AWS::DynamoDB::Table}}\nResources:\n  T:\n    <<: *x\n", nil, "merge keys"},
		{"alias bomb", laughs, nil, "the template expands to more than 200000 values"},
		{"table name no value", table(keys + "      TableName: !Sub '${AWS::NoValue}'\n"), nil, "${AWS::NoValue} has no value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), Options{Parameters: c.params})
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", c.want)
			}
			var ce *Error
			if !asError(err, &ce) {
				t.Fatalf("error %v is %T, want *cfn.Error", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want it to contain %q", err, c.want)
			}
		})
	}
}

// laughs is a "billion laughs" template: aliases that expand to 10^8 tags.
const laughs = `Metadata:
  a: &a [x, x, x, x, x, x, x, x, x, x]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
  h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
Resources:
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      Tags: *h
`

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

// TestNoValueAndDefaults: AWS::NoValue removes a property, a table
// without TableName is named after its logical id, and an empty index
// list is no index list.
func TestNoValueAndDefaults(t *testing.T) {
	src := `Resources:
  Plain:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Ref AWS::NoValue
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      GlobalSecondaryIndexes: []
      Tags: [!Ref AWS::NoValue, {Key: a, Value: !Ref Plain}]
`
	tmpl, err := Parse([]byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := tmpl.Tables[0].CreateTable
	if in.TableName != "Plain" || in.GlobalSecondaryIndexes != nil {
		t.Errorf("TableName %q, GSIs %v; want Plain, nil", in.TableName, in.GlobalSecondaryIndexes)
	}
	if want := []wire.Tag{{Key: "a", Value: "Plain"}}; !reflect.DeepEqual(in.Tags, want) {
		t.Errorf("Tags = %v, want %v", in.Tags, want)
	}
}

func TestDifferences(t *testing.T) {
	tmpl, err := Parse(readTestdata(t, "features.yaml"), Options{StackName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	tb := tmpl.Tables[0]
	in := tb.CreateTable
	on := true
	d := &wire.TableDescription{
		TableName:             in.TableName,
		KeySchema:             in.KeySchema,
		AttributeDefinitions:  []wire.AttributeDefinition{in.AttributeDefinitions[4], in.AttributeDefinitions[0], in.AttributeDefinitions[1], in.AttributeDefinitions[2], in.AttributeDefinitions[3]},
		BillingModeSummary:    &wire.BillingModeSummary{BillingMode: "PROVISIONED"},
		ProvisionedThroughput: &wire.ProvisionedThroughputDescription{ReadCapacityUnits: 5, WriteCapacityUnits: 2},
		GlobalSecondaryIndexes: []wire.GlobalSecondaryIndexDescription{{
			IndexName: "GSI1", KeySchema: in.GlobalSecondaryIndexes[0].KeySchema,
			Projection:            &wire.Projection{ProjectionType: "INCLUDE", NonKeyAttributes: []string{"created", "title"}},
			ProvisionedThroughput: &wire.ProvisionedThroughputDescription{ReadCapacityUnits: 1, WriteCapacityUnits: 1},
		}},
		LocalSecondaryIndexes: []wire.LocalSecondaryIndexDescription{{IndexName: "by_owner_lsi", KeySchema: in.LocalSecondaryIndexes[0].KeySchema, Projection: &wire.Projection{ProjectionType: "ALL"}}},
		TableClassSummary:     &wire.TableClassSummary{TableClass: "STANDARD_INFREQUENT_ACCESS"},
	}
	if diffs := Differences(tb, d); diffs != nil {
		t.Fatalf("Differences of an identical table: %q", diffs)
	}
	d.GlobalSecondaryIndexes[0].Projection = &wire.Projection{ProjectionType: "ALL"}
	d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, wire.GlobalSecondaryIndexDescription{IndexName: "Extra"})
	d.LocalSecondaryIndexes = nil
	d.StreamSpecification = &wire.StreamSpecification{StreamEnabled: &on, StreamViewType: "NEW_AND_OLD_IMAGES"}
	d.DeletionProtectionEnabled = true
	d.ProvisionedThroughput.WriteCapacityUnits = 3
	want := []string{
		"provisioned throughput: the table has 5 RCU/3 WCU, the template 5 RCU/2 WCU",
		"global secondary index GSI1 projection: the table has ALL, the template INCLUDE (created, title)",
		"global secondary index Extra: the table has it, the template does not",
		"local secondary index by_owner_lsi: the table has none, the template defines it",
		"stream: the table has a stream of NEW_AND_OLD_IMAGES, the template no stream",
		"deletion protection: the table has true, the template false",
	}
	if got := Differences(tb, d); !reflect.DeepEqual(got, want) {
		t.Errorf("Differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTagAndTTLChanges(t *testing.T) {
	add, remove, fixed := tagChanges(
		[]wire.Tag{{Key: "tenantdb:isolation", Value: "leading-keys"}, {Key: "a", Value: "1"}, {Key: "b", Value: "2"}},
		[]wire.Tag{{Key: "tenantdb:isolation", Value: "namespace"}, {Key: "a", Value: "1"}, {Key: "b", Value: "3"}, {Key: "c", Value: "4"}})
	if !reflect.DeepEqual(add, []wire.Tag{{Key: "b", Value: "2"}}) || !reflect.DeepEqual(remove, []string{"c"}) || len(fixed) != 1 || !strings.Contains(fixed[0], "tenantdb:isolation") {
		t.Errorf("tagChanges: add %v, remove %v, fixed %q", add, remove, fixed)
	}
	for _, c := range []struct {
		want  *wire.TimeToLiveSpecification
		have  wire.TimeToLiveDescription
		steps int
	}{
		{nil, wire.TimeToLiveDescription{TimeToLiveStatus: "DISABLED"}, 0},
		{&wire.TimeToLiveSpecification{Enabled: true, AttributeName: "x"}, wire.TimeToLiveDescription{TimeToLiveStatus: "ENABLED", AttributeName: "x"}, 0},
		{&wire.TimeToLiveSpecification{Enabled: true, AttributeName: "x"}, wire.TimeToLiveDescription{TimeToLiveStatus: "DISABLED"}, 1},
		{&wire.TimeToLiveSpecification{Enabled: true, AttributeName: "x"}, wire.TimeToLiveDescription{TimeToLiveStatus: "ENABLED", AttributeName: "y"}, 2},
		{&wire.TimeToLiveSpecification{Enabled: false}, wire.TimeToLiveDescription{TimeToLiveStatus: "ENABLED", AttributeName: "y"}, 1},
	} {
		if steps, _ := ttlChanges(c.want, c.have); len(steps) != c.steps {
			t.Errorf("ttlChanges(%v, %v) = %v, want %d steps", c.want, c.have, steps, c.steps)
		}
	}
}

// TestAliases: YAML anchors and aliases are followed.
func TestAliases(t *testing.T) {
	src := `Metadata:
  Keys: &keys
    - {AttributeName: id, KeyType: HASH}
Resources:
  A:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: *keys
      AttributeDefinitions: &defs [{AttributeName: id, AttributeType: S}]
  B:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: *keys
      AttributeDefinitions: *defs
`
	tmpl, err := Parse([]byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.KeySchemaElement{{AttributeName: "id", KeyType: "HASH"}}
	if len(tmpl.Tables) != 2 || !reflect.DeepEqual(tmpl.Tables[1].CreateTable.KeySchema, want) || tmpl.Tables[1].CreateTable.AttributeDefinitions[0].AttributeName != "id" {
		t.Fatalf("tables %+v", tmpl.Tables)
	}
}
