package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// checkGolden compares results (name → text) with the "encode name=NAME"
// cases of the datadriven file path (go test -rewrite updates them). Every
// result must have a case and every case a result.
func checkGolden(t *testing.T, path string, results map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		name := arg(d, "name")
		got, ok := results[name]
		if d.Cmd != "encode" || !ok {
			t.Fatalf("%s: stale case %s (no result of that name)", d.Pos, d.Cmd+" name="+name)
		}
		if seen[name] {
			t.Fatalf("%s: case %q twice", d.Pos, name)
		}
		seen[name] = true
		return got
	})
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !seen[n] {
			t.Errorf("%s: case %q missing (add \"encode name=%s\" and run with -rewrite)", path, n, n)
		}
	}
}

func item(kv ...string) Item {
	it := Item{}
	for i := 0; i+1 < len(kv); i += 2 {
		it[kv[i]] = attr.Str(kv[i+1])
	}
	return it
}

func f64(f float64) *float64 { return &f }

var encodeCases = map[string]any{
	"get-item-found":     &GetItemOutput{Item: Item{"pk": attr.Str("a"), "n": attr.Num(attr.MustNumber("1.50")), "l": attr.List([]attr.Value{attr.Null(), attr.BoolV(false)})}},
	"get-item-not-found": &GetItemOutput{},
	"get-item-projected-away": &GetItemOutput{Item: Item{},
		ConsumedCapacity: &ConsumedCapacity{TableName: "t", CapacityUnits: 0.5}},
	"put-item-none":    &PutItemOutput{},
	"put-item-all-old": &PutItemOutput{Attributes: item("pk", "a", "x", "line\nbreak \"quoted\" \u2028 \x01")},
	"update-item-capacity": &UpdateItemOutput{Attributes: item("x", "y"),
		ConsumedCapacity: &ConsumedCapacity{TableName: "t", CapacityUnits: 2, Table: &Capacity{CapacityUnits: 1},
			GlobalSecondaryIndexes: map[string]Capacity{"GSI1": {CapacityUnits: 1}}}},
	"delete-item-none": &DeleteItemOutput{},
	"query-page": &QueryOutput{Items: []Item{item("pk", "a", "sk", "1"), item("pk", "a", "sk", "2")},
		Count: 2, ScannedCount: 3, LastEvaluatedKey: item("pk", "a", "sk", "2")},
	"query-empty": &QueryOutput{Items: []Item{}},
	"execute-statement-page": &ExecuteStatementOutput{Items: []Item{item("pk", "a", "sk", "1")}, NextToken: "tok/+=",
		LastEvaluatedKey: item("pk", "a", "sk", "1"), ConsumedCapacity: &ConsumedCapacity{TableName: "t", CapacityUnits: 0.5}},
	"execute-statement-write": &ExecuteStatementOutput{Items: []Item{}},
	"query-count":             &QueryOutput{Count: 7, ScannedCount: 9},
	"batch-get": &BatchGetItemOutput{Responses: map[string][]Item{"t": {item("pk", "a")}},
		UnprocessedKeys: map[string]KeysAndAttributes{"u": {Keys: []Item{item("pk", "b")}}}},
	"batch-get-empty":  &BatchGetItemOutput{Responses: map[string][]Item{}},
	"batch-write-done": &BatchWriteItemOutput{},
	"batch-write-unprocessed": &BatchWriteItemOutput{UnprocessedItems: map[string][]WriteRequest{
		"t": {{PutRequest: &PutRequest{Item: item("pk", "a")}}, {DeleteRequest: &DeleteRequest{Key: item("pk", "b")}}}},
		ConsumedCapacity: []ConsumedCapacity{{TableName: "t", CapacityUnits: 1, WriteCapacityUnits: f64(1)}}},
	"transact-get":      &TransactGetItemsOutput{Responses: []ItemResponse{{Item: item("pk", "a")}, {}}},
	"transact-write":    &TransactWriteItemsOutput{},
	"list-tables":       &ListTablesOutput{TableNames: []string{"a", "b"}, LastEvaluatedTableName: "b"},
	"list-tables-empty": &ListTablesOutput{TableNames: []string{}},
	"describe-ttl":      &DescribeTimeToLiveOutput{TimeToLiveDescription: TimeToLiveDescription{TimeToLiveStatus: "ENABLED", AttributeName: "exp"}},
	"empty":             &EmptyOutput{},
	"describe-table": &DescribeTableOutput{Table: &TableDescription{
		TableName: "t", TableStatus: "ACTIVE", CreationDateTime: 1767225600.25,
		AttributeDefinitions:  []AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		KeySchema:             []KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		ProvisionedThroughput: &ProvisionedThroughputDescription{},
		TableArn:              "arn:aws:dynamodb:us-east-1:000000000000:table/t",
		BillingModeSummary:    &BillingModeSummary{BillingMode: "PAY_PER_REQUEST"},
	}},
}

// TestEncodeGolden encodes one output of each kind.
func TestEncodeGolden(t *testing.T) {
	results := map[string]string{}
	for name, out := range encodeCases {
		b, err := AppendOutput(nil, out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body := "(no body)"
		if len(b) > 0 {
			body = canonical(t, b)
		}
		results[name] = fmt.Sprintf("%T\n%s", out, body)
	}
	checkGolden(t, "testdata/encode/outputs.txt", results)
}

// TestFastEncodersMatchJSON checks that the hand-written encoders produce
// what encoding/json would for outputs whose members are all set (the two
// differ only in writing empty-but-non-nil items).
func TestFastEncodersMatchJSON(t *testing.T) {
	for name, out := range encodeCases {
		switch name {
		case "get-item-projected-away", "query-empty", "query-count", "batch-get-empty",
			"batch-write-done", "put-item-none", "delete-item-none", "get-item-not-found":
			continue // nil-vs-empty semantics differ on purpose
		case "empty":
			continue // no body at all, as DynamoDB answers TagResource
		}
		fast, err := AppendOutput(nil, out)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonical(t, fast), canonical(t, slow); got != want {
			t.Errorf("%s: fast encoder\n%s\nencoding/json\n%s", name, got, want)
		}
	}
}

var errorCases = map[string]error{
	"validation":           apierr.Validationf("One or more parameter values were invalid: Missing the key pk in the item"),
	"wrapped-in-fmt":       fmt.Errorf("engine: put: %w", apierr.New(apierr.ResourceNotFound, "Requested resource not found")),
	"cause-not-leaked":     apierr.Wrap(apierr.Validation, errors.New("secret internal detail"), "bad request"),
	"untyped":              errors.New("pebble: corruption in sstable 000123 of tenant 42"),
	"internal-typed-empty": &apierr.Error{Kind: apierr.Internal, Cause: errors.New("disk on fire")},
	"too-large":            apierr.New(apierr.RequestTooLarge, "Request size 17000000 exceeds the maximum of 16777216 bytes"),
	"throttled":            apierr.New(apierr.ProvisionedThroughputExceeded, "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."),
	"conditional-with-item": &apierr.Error{Kind: apierr.ConditionalCheckFailed, Message: "The conditional request failed",
		Detail: ConditionalCheckFailedDetail{Item: item("pk", "a", "v", "old")}},
	"conditional-pointer-detail": &apierr.Error{Kind: apierr.ConditionalCheckFailed, Message: "The conditional request failed",
		Detail: &ConditionalCheckFailedDetail{Item: item("pk", "a")}},
	"conditional-no-item": apierr.New(apierr.ConditionalCheckFailed, "The conditional request failed"),
	"transaction-canceled": &apierr.Error{Kind: apierr.TransactionCanceled,
		Message: "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]",
		Detail: &TransactionCanceledDetail{CancellationReasons: []CancellationReason{
			{Code: "None"},
			{Code: "ConditionalCheckFailed", Message: "The conditional request failed", Item: item("pk", "b")},
		}}},
	"unknown-kind": &apierr.Error{Kind: apierr.Kind(9999), Message: "from the future"},
}

// TestErrorGolden encodes one error of each interesting shape.
func TestErrorGolden(t *testing.T) {
	results := map[string]string{}
	for name, err := range errorCases {
		b, status := AppendError(nil, err)
		results[name] = fmt.Sprintf("%d\n%s", status, canonical(t, b))
	}
	checkGolden(t, "testdata/encode/errors.txt", results)
}

// TestErrorTableComplete proves that every kind has a wire shape whose code
// is the kind's DynamoDB name and whose status is a deliberate one.
func TestErrorTableComplete(t *testing.T) {
	allowed := map[int]bool{400: true, 401: true, 404: true, 405: true, 409: true, 413: true, 500: true, 503: true}
	seen := map[string]apierr.Kind{}
	for k := apierr.Kind(0); int(k) < apierr.KindCount; k++ {
		sh := errorTable[k]
		if sh.Type == "" {
			t.Errorf("kind %d (%v) has no entry in errorTable", int(k), k)
			continue
		}
		if !allowed[sh.Status] {
			t.Errorf("kind %v: status %d", k, sh.Status)
		}
		if got, want := ErrorCode(k), k.String(); got != want {
			t.Errorf("kind %d: code %q, want %q (apierr's name)", int(k), got, want)
		}
		if prev, dup := seen[sh.Type]; dup {
			t.Errorf("kinds %v and %v share __type %q", prev, k, sh.Type)
		}
		seen[sh.Type] = k
		b, status := AppendError(nil, apierr.New(k, "m"))
		if status != sh.Status || !json.Valid(b) {
			t.Errorf("kind %v: AppendError gave %d %s", k, status, b)
		}
	}
	if sh := Shape(apierr.Kind(apierr.KindCount)); sh.Status != 500 {
		t.Errorf("out-of-range kind maps to %v, want the internal error", sh)
	}
}

// TestUntypedErrorLeaksNothing checks the generic 500.
func TestUntypedErrorLeaksNothing(t *testing.T) {
	err := fmt.Errorf("storage: write /var/lib/tenantdb/000042.log: %w", errors.New("no space left on device"))
	b, status := AppendError(nil, err)
	if status != 500 {
		t.Errorf("status %d, want 500", status)
	}
	for _, leak := range []string{"storage", "000042", "no space"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("body %s leaks %q", b, leak)
		}
	}
	if want := `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`; string(b) != want {
		t.Errorf("body %s, want %s", b, want)
	}
}

func TestAppendStringMatchesJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\x7f", "\u2028\u2029", "héllo", "bad\xffutf8", "<&>", "\t\r\n"} {
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q: %s is not a JSON string: %v", s, got, err)
			continue
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if back != want {
			t.Errorf("%q: round trip gave %q, want %q", s, back, want)
		}
	}
}
