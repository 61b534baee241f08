package conformance

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestReadCapacityOnTotalSize: Scan and Query charge the total size of the
// items read, rounded up to 4 KB once, not each item rounded up; items a
// filter drops count, as they were read.
func TestReadCapacityOnTotalSize(t *testing.T) {
	_, c := start(t)
	sk := keyDef{"sk", "N"}
	createTable(t, c, "Cap", keyDef{"pk", "S"}, &sk, nil)
	tbl := aws.String("Cap")
	// Ten items of exactly 1,000 bytes: 10,000 bytes read is 3 units of
	// 4 KB (1.5 eventually consistent), where per-item rounding would be
	// 10 (5).
	for i := 0; i < 10; i++ {
		n := string(rune('0' + i))
		pad := 1000 - len("pk") - 1 - len("sk") - 2 - len("v")
		_, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: tbl, Item: item("pk", S("a"), "sk", N(n), "v", S(strings.Repeat("x", pad)))})
		ok(t, err)
	}
	vals := map[string]types.AttributeValue{":p": S("a"), ":none": S("nothing")}
	scan, err := c.Scan(ctxT(t), &dynamodb.ScanInput{TableName: tbl, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		FilterExpression: aws.String("v = :none"), ExpressionAttributeValues: map[string]types.AttributeValue{":none": S("nothing")}})
	ok(t, err)
	if scan.Count != 0 || scan.ScannedCount != 10 || aws.ToFloat64(scan.ConsumedCapacity.CapacityUnits) != 1.5 {
		t.Errorf("Scan with a filter: count %d scanned %d capacity %v, want 0 10 1.5", scan.Count, scan.ScannedCount, aws.ToFloat64(scan.ConsumedCapacity.CapacityUnits))
	}
	q, err := c.Query(ctxT(t), &dynamodb.QueryInput{TableName: tbl, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("v = :none"), ExpressionAttributeValues: vals})
	ok(t, err)
	if q.Count != 0 || q.ScannedCount != 10 || aws.ToFloat64(q.ConsumedCapacity.CapacityUnits) != 3 {
		t.Errorf("strongly consistent Query with a filter: count %d scanned %d capacity %v, want 0 10 3", q.Count, q.ScannedCount, aws.ToFloat64(q.ConsumedCapacity.CapacityUnits))
	}
}
