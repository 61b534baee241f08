package webhook

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
)

// TestAppendRecordMatchesMarshal: the hand-written encoder writes what
// encoding/json writes for the Lambda record.
func TestAppendRecordMatchesMarshal(t *testing.T) {
	src := source{Region: "eu-west-1", Account: "123456789012"}
	img := attr.Item{"pk": attr.Str("a\"<&>\u2028"), "sk": attr.Str("OUTBOX#1"), "n": attr.Num(attr.MustNumber("12.5")),
		"l": {Type: attr.L, L: []attr.Value{attr.Str("x"), {Type: attr.BOOL, Bool: true}}}, "b": {Type: attr.B, B: []byte{0, 1, 2}}}
	for _, e := range []changelog.Entry{
		{Record: changelog.Record{Seq: 7, Event: changelog.Insert, Time: time.UnixMilli(1700000000123), Keys: attr.Item{"pk": img["pk"], "sk": img["sk"]}, New: img},
			Stream: 1700000000000, EventID: "abc123", SequenceNumber: "000000000100000000000000000007"},
		{Record: changelog.Record{Seq: 8, Event: changelog.Remove, Expired: true, Time: time.UnixMilli(1700000001000), Keys: attr.Item{"pk": img["pk"]}, Old: img},
			Stream: 1700000000000, EventID: "def", SequenceNumber: "000000000100000000000000000008"},
		{Record: changelog.Record{Seq: 9, Event: changelog.Modify, Time: time.UnixMilli(1700000002000)}, Stream: 42, EventID: "x", SequenceNumber: "9"},
	} {
		want, err := json.Marshal(src.record("Orders.v2", e))
		if err != nil {
			t.Fatal(err)
		}
		got := src.encoder("Orders.v2").append(nil, e)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("appended %s: %v", got, err)
		}
		json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("appended\n%s\nmarshalled\n%s", got, want)
		}
	}
}
