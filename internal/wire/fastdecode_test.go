package wire

import (
	"reflect"
	"slices"
	"testing"
)

// fastSeeds are requests as SDKs send them, for every fast decoder.
var fastSeeds = []struct{ op, body string }{
	{"PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"n":{"N":"1.50"},"l":{"L":[{"M":{"x":{"NULL":true}}}]}},"ConditionExpression":"attribute_not_exists(#p)","ExpressionAttributeNames":{"#p":"pk"},"ExpressionAttributeValues":{":v":{"SS":["a","b"]}},"ReturnValues":"ALL_OLD","ReturnConsumedCapacity":"TOTAL","ReturnItemCollectionMetrics":"SIZE","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`},
	{"GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"},"sk":{"N":"1"}},"ConsistentRead":true,"ProjectionExpression":"a, #b","ExpressionAttributeNames":{"#b":"b"},"AttributesToGet":["a","b"],"ReturnConsumedCapacity":"NONE"}`},
	{"DeleteItem", `{"TableName":"t","Key":{"pk":{"B":"AAE="}},"ConditionExpression":"v = :v","ExpressionAttributeValues":{":v":{"N":"42"}},"ReturnValues":"ALL_OLD"}`},
	{"UpdateItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET v = v + :d ADD c :one","ExpressionAttributeValues":{":d":{"N":"41"},":one":{"N":"1"}},"ReturnValues":"ALL_NEW"}`},
	{"Query", `{"TableName":"t","IndexName":"GSI1","KeyConditionExpression":"pk = :p","FilterExpression":"x > :x","ProjectionExpression":"a","ExpressionAttributeValues":{":p":{"S":"x"},":x":{"N":"1"}},"Limit":10,"ScanIndexForward":false,"ConsistentRead":false,"Select":"ALL_ATTRIBUTES","ExclusiveStartKey":{"pk":{"S":"x"}}}`},
	{"BatchWriteItem", `{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"}}}},{"DeleteRequest":{"Key":{"pk":{"S":"b"}}}}],"u":[]},"ReturnConsumedCapacity":"TOTAL"}`},
	{"BatchGetItem", `{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"}},{"pk":{"S":"b"}}],"ConsistentRead":true,"ProjectionExpression":"#a","ExpressionAttributeNames":{"#a":"a"}}}}`},
	{"TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}},"ConditionExpression":"attribute_not_exists(pk)"}},{"Update":{"TableName":"t","Key":{"pk":{"S":"b"}},"UpdateExpression":"ADD n :one","ExpressionAttributeValues":{":one":{"N":"1"}}}},{"Delete":{"TableName":"t","Key":{"pk":{"S":"c"}}}},{"ConditionCheck":{"TableName":"t","Key":{"pk":{"S":"d"}},"ConditionExpression":"attribute_exists(pk)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}}],"ClientRequestToken":"tok"}`},
	{"ExecuteStatement", `{"Statement":"SELECT * FROM \"t\" WHERE pk = ? AND sk = ?","Parameters":[{"S":"a"}, {"N":"1"}],"ConsistentRead":true,"NextToken":"x","Limit":5,"ReturnConsumedCapacity":"TOTAL","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`},
	{"PutItem", "{ \"TableName\" : \"t\u00e9\\u0041\" , \"Item\" : { \"p\\\"k\" : { \"S\" : \"x\\ny\" } } }"},
	{"PutItem", `{"TableName":"t","Item":null,"ConditionExpression":null}`},
	{"Query", `{"TableName":"t","Limit":-0}`},
	{"ExecuteStatement", `{"Statement":"x","Parameters":[null]}`},
	{"ExecuteStatement", `{"Statement":"x","Parameters":null}`},
	{"ExecuteStatement", `{"Statement":"x","Parameters":[ ]}`},
}

// TestFastDecodersTaken makes sure the SDK-shaped seeds take the fast path
// (a regression to encoding/json would only show as lost performance).
func TestFastDecodersTaken(t *testing.T) {
	for _, s := range fastSeeds[:9] {
		in, ok := NewInput(s.op)
		if !ok {
			t.Fatalf("%s is not an operation", s.op)
		}
		if !fastDecode([]byte(s.body), in) {
			t.Errorf("%s: the fast decoder gave up on %s", s.op, s.body)
		}
	}
}

// TestFastDecodersNameRealOps checks that the fast decoders are exactly
// those of the operations the SDK-shaped seeds name: each is reached from
// an operation of the table (which it knows by its input type) and each
// has a seed.
func TestFastDecodersNameRealOps(t *testing.T) {
	var fast, seeded []string
	for _, op := range OpNames {
		in, _ := NewInput(op)
		if fastDecode([]byte(`{}`), in) {
			fast = append(fast, op)
		}
	}
	for _, s := range fastSeeds[:9] {
		seeded = append(seeded, s.op)
	}
	slices.Sort(seeded)
	if seeded = slices.Compact(seeded); !slices.Equal(fast, seeded) {
		t.Errorf("operations with a fast decoder: %v; with a fast seed: %v", fast, seeded)
	}
}

// FuzzFastDecode checks that whenever a fast decoder succeeds, it yields
// exactly what encoding/json yields, and that when it gives up it leaves
// the input zero for encoding/json.
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s.op, []byte(s.body))
	}
	addDecodeSeeds(f)
	f.Fuzz(func(t *testing.T, op string, body []byte) {
		fast, ok := NewInput(op)
		if !ok {
			return
		}
		slow, _ := NewInput(op)
		if !fastDecode(body, fast) {
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%s %q: the fast decoder gave up and left %#v", op, body, fast)
			}
			return
		}
		if err := decodeJSON(body, slow); err != nil {
			t.Fatalf("%s %q: fast decoder succeeded, encoding/json says %v", op, body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s %q:\nfast %#v\nslow %#v", op, body, fast, slow)
		}
	})
}
