package wire

import (
	"fmt"
	"strings"
	"testing"
)

// benchItem is an item shaped like tdbload's: two short key strings and
// a payload string of about 1 KB.
func benchItem(i int) string {
	payload := strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 17)[:1000]
	return fmt.Sprintf(`{"pk":{"S":"p%08d"},"sk":{"S":"s%02d"},"data":{"S":%q}}`, i/20, i%20, payload)
}

// batchWriteBody is a BatchWriteItem of n bench items.
func batchWriteBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"RequestItems":{"bench":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"PutRequest":{"Item":` + benchItem(i) + `}}`)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// BenchmarkDecodeBatchWrite25 is the request decode of tdbload's
// batchwrite workload: 25 items of ~1 KB.
func BenchmarkDecodeBatchWrite25(b *testing.B) {
	body := batchWriteBody(25)
	if !fastDecode(body, new(BatchWriteItemInput)) {
		b.Fatal("the fast decoder gave up")
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		fastDecode(body, new(BatchWriteItemInput))
	}
}

// BenchmarkDecodePutItem1K is the request decode of tdbload's put.
func BenchmarkDecodePutItem1K(b *testing.B) {
	body := []byte(`{"TableName":"bench","Item":` + benchItem(7) + `}`)
	if !fastDecode(body, new(PutItemInput)) {
		b.Fatalf("the fast decoder gave up on %s", body)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		fastDecode(body, new(PutItemInput))
	}
}
