package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/node"
)

// streamedTable is the bench table's twin with a NEW_AND_OLD_IMAGES
// stream; the streamed workloads are the plain ones with its name.
const streamedTable = "benchs"

// streamRounds is how many plain/streamed pairs BenchmarkStreamWrites
// runs. The pairs alternate in one process (-count would run each
// sub-benchmark's repetitions back to back, so load changes on a shared
// machine would fall on one side).
const streamRounds = 6

func onStreamed(body func(int) string) func(int) string {
	return func(i int) string {
		return strings.ReplaceAll(body(i), `"`+table+`"`, `"`+streamedTable+`"`)
	}
}

// BenchmarkStreamWrites runs PutItem and BatchWrite25 against the bench
// table and against the same table with a NEW_AND_OLD_IMAGES stream, in
// alternating rounds on one server, then reads the stream back from
// TRIM_HORIZON with one consumer (GetRecords, Limit 1,000) and reports
// records per second (the metrics of the last of up to 3 reads).
func BenchmarkStreamWrites(b *testing.B) {
	t := startTenantDB(b, node.Options{})
	c := t.dial(b)
	c.must(b, t.sign(b, "CreateTable", `{"TableName":"`+streamedTable+`","BillingMode":"PAY_PER_REQUEST",`+
		`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],`+
		`"StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`))
	desc := string(c.must(b, t.sign(b, "DescribeTable", `{"TableName":"`+streamedTable+`"}`)))
	c.close()
	_, rest, ok := strings.Cut(desc, `"LatestStreamArn":"`)
	arn, _, _ := strings.Cut(rest, `"`)
	if !ok || arn == "" {
		b.Fatalf("no LatestStreamArn in %s", desc)
	}
	for r := range streamRounds {
		for _, w := range workloads {
			if w.op != "PutItem" && w.op != "BatchWriteItem" {
				continue
			}
			plain := func() { b.Run(w.name+"/plain", func(b *testing.B) { run(b, t, w.name, w.op, w.body) }) }
			streamed := func() {
				b.Run(w.name+"/streamed", func(b *testing.B) { run(b, t, w.name, w.op, onStreamed(w.body)) })
			}
			if r%2 == 0 {
				plain()
				streamed()
			} else {
				streamed()
				plain()
			}
		}
	}
	b.Run("GetRecords", func(b *testing.B) {
		// NB: each iteration reads the whole stream (every record the
		// rounds above wrote); more than 3 would take minutes.
		for range min(b.N, 3) {
			getRecords(b, t, arn)
		}
	})
}

// getRecords reads every shard of arn from TRIM_HORIZON with GetRecords
// (Limit 1,000) over one keep-alive connection, signing each request as
// the SDK does, and reports records/s.
func getRecords(b *testing.B, t *target, arn string) {
	c := t.dial(b)
	defer c.close()
	call := func(op string, in, out any) {
		body, err := json.Marshal(in)
		if err != nil {
			b.Fatal(err)
		}
		resp := c.must(b, t.signTarget(b, "DynamoDBStreams_20120810."+op, string(body)))
		if err := json.Unmarshal(resp, out); err != nil {
			b.Fatalf("%s: %v", op, err)
		}
	}
	start, cpu0 := time.Now(), cpuTime()
	records, calls := 0, 0
	var shards []string
	var from *string
	for {
		var d struct {
			StreamDescription struct {
				Shards               []struct{ ShardId string }
				LastEvaluatedShardId *string
			}
		}
		call("DescribeStream", map[string]any{"StreamArn": arn, "ExclusiveStartShardId": from}, &d)
		for _, sh := range d.StreamDescription.Shards {
			shards = append(shards, sh.ShardId)
		}
		if from = d.StreamDescription.LastEvaluatedShardId; from == nil {
			break
		}
	}
	for _, sh := range shards {
		var it struct{ ShardIterator *string }
		call("GetShardIterator", map[string]any{"StreamArn": arn, "ShardId": sh, "ShardIteratorType": "TRIM_HORIZON"}, &it)
		for iter := it.ShardIterator; iter != nil; {
			var r struct {
				Records           []json.RawMessage
				NextShardIterator *string
			}
			call("GetRecords", map[string]any{"ShardIterator": *iter, "Limit": 1000}, &r)
			calls++
			records += len(r.Records)
			if len(r.Records) == 0 {
				break // an open shard, read to its end
			}
			iter = r.NextShardIterator
		}
	}
	wall := time.Since(start)
	if records == 0 {
		b.Fatal("no records in the stream")
	}
	b.ReportMetric(float64(records)/wall.Seconds(), "records/s")
	b.ReportMetric(float64(records), "records")
	b.ReportMetric(float64(calls), "calls")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(records), "cpu-µs/record")
}
