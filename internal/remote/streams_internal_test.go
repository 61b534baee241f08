package remote

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
)

func TestIterPosRoundTrip(t *testing.T) {
	for _, p := range []iterPos{
		{name: "tbl", shard: "shardId-00000001700000000000-0a1b2c3d", kind: posTrim},
		{name: "a.b-c_d", shard: "s", kind: posAfter, arg: "000000000100000000000000000042"},
		{name: "tbl", shard: "s", kind: posEngine, arg: "tdb1.x\x00y"}, // the argument is last: anything goes
	} {
		got, ok := unpackPos(p.pack())
		if !ok || got != p {
			t.Errorf("unpackPos(pack(%+v)) = %+v, %v", p, got, ok)
		}
	}
	for _, bad := range []string{"", "tbl", "tbl\x00s", "tbl\x00s\x00", "tbl\x00s\x00X12"} {
		if _, ok := unpackPos(bad); ok {
			t.Errorf("unpackPos(%q) accepted", bad)
		}
	}
}

// FuzzUnpackPos: the payload of a sealed iterator never panics the
// parser, and what it accepts packs back to itself.
func FuzzUnpackPos(f *testing.F) {
	f.Add("tbl\x00shardId-1\x00T")
	f.Add("tbl\x00s\x00F0001")
	f.Add("\x00\x00I")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := unpackPos(s)
		if ok && p.pack() != s {
			t.Errorf("unpackPos(%q) = %+v, which packs to %q", s, p, p.pack())
		}
	})
}

// streamRecord builds an engine stream record of the physical item with
// partition key pk, key k, and images.
func streamRecord(event stypes.OperationType, pk string, sk []byte, old, new map[string]stypes.AttributeValue) stypes.Record {
	return stypes.Record{EventName: event, EventID: aws.String("e1"), EventVersion: aws.String("1.1"), Dynamodb: &stypes.StreamRecord{
		ApproximateCreationDateTime: aws.Time(time.Unix(1000, 0)),
		Keys:                        map[string]stypes.AttributeValue{attrPK: &stypes.AttributeValueMemberS{Value: pk}, attrSK: &stypes.AttributeValueMemberB{Value: sk}},
		OldImage:                    old, NewImage: new, SequenceNumber: aws.String("100"),
	}}
}

// byTTL makes r a deletion by the engine's TTL.
func byTTL(r stypes.Record) stypes.Record {
	r.UserIdentity = &stypes.Identity{PrincipalId: aws.String("dynamodb.amazonaws.com"), Type: aws.String("Service")}
	return r
}

func TestStreamRecordMapping(t *testing.T) {
	tbl := &schema.Table{ID: 1, Name: "t", Hash: schema.KeyAttr{Name: "pk", Type: attr.S}}
	ns := []byte("namespace-of-A")
	tg := resolve.Target{Table: tbl, Namespace: ns}
	b := &Backend{opts: Options{Region: "us-east-1"}}
	sk := attr.AppendKey(nil, attr.Str("k"))
	img := func(v string, extra ...string) map[string]stypes.AttributeValue {
		m := map[string]stypes.AttributeValue{"pk": &stypes.AttributeValueMemberS{Value: "k"}, "v": &stypes.AttributeValueMemberS{Value: v},
			attrPK: &stypes.AttributeValueMemberS{Value: "x"}, attrSK: &stypes.AttributeValueMemberB{Value: sk}}
		for _, e := range extra {
			m[e] = &stypes.AttributeValueMemberS{Value: "slot"}
		}
		return m
	}
	mine := collBase(ns, 1) + "0"
	for _, c := range []struct {
		name, view string
		rec        stypes.Record
		want       string // "" for a record that is not the caller's
	}{
		{"own insert, both images", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeInsert, mine, sk, nil, img("1")), "INSERT k old=0 new=2"},
		{"own modify, keys only", "KEYS_ONLY", streamRecord(stypes.OperationTypeModify, mine, sk, img("1"), img("2")), "MODIFY k old=0 new=0"},
		{"own modify, old image", "OLD_IMAGE", streamRecord(stypes.OperationTypeModify, mine, sk, img("1"), img("2")), "MODIFY k old=2 new=0"},
		{"own remove, new image", "NEW_IMAGE", streamRecord(stypes.OperationTypeRemove, mine, sk, img("1"), nil), "REMOVE k old=0 new=0"},
		{"a backfill's slot attributes only", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeModify, mine, sk, img("1"), img("1", "tenantdb:x1p")), ""},
		{"a put of the same item (recorded by some engines, as Alternator may; not by DynamoDB)", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeModify, mine, sk, img("1"), img("1")), ""},
		{"another shard of the collection", "KEYS_ONLY", streamRecord(stypes.OperationTypeInsert, collBase(ns, 1)+"7", sk, nil, img("1")), "INSERT k old=0 new=0"},
		{"another namespace", "KEYS_ONLY", streamRecord(stypes.OperationTypeInsert, collBase([]byte("namespace-of-B"), 1)+"0", sk, nil, img("1")), ""},
		{"a namespace it begins", "KEYS_ONLY", streamRecord(stypes.OperationTypeInsert, collBase([]byte("namespace-of-A2"), 1)+"0", sk, nil, img("1")), ""},
		{"a table whose id it begins", "KEYS_ONLY", streamRecord(stypes.OperationTypeInsert, collBase(ns, 12)+"0", sk, nil, img("1")), ""},
		{"an index entry's key", "KEYS_ONLY", streamRecord(stypes.OperationTypeInsert, mine+"#1", sk, nil, img("1")), ""},
		{"a control record", "KEYS_ONLY", streamRecord(stypes.OperationTypeInsert, "ctl#00", sk, nil, img("1")), ""},
		{"a move's mark", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeModify, mine, sk, img("1"), img("1", attrMoveOut)), ""},
		{"a move's old copy", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeRemove, mine, sk, img("1", attrMoveOut), nil), ""},
		{"a move's new copy", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeInsert, mine, sk, nil, img("1", attrMoveIn)), ""},
		{"a client's update of a moved item", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeModify, mine, sk, img("1", attrMoveIn), img("2", attrMoveIn)), "MODIFY k old=2 new=2"},
		{"a client's delete of a moved item", "NEW_AND_OLD_IMAGES", streamRecord(stypes.OperationTypeRemove, mine, sk, img("1", attrMoveIn), nil), "REMOVE k old=2 new=0"},
		{"the expiry of an item being moved", "NEW_AND_OLD_IMAGES", byTTL(streamRecord(stypes.OperationTypeRemove, mine, sk, img("1", attrMoveOut), nil)), "REMOVE k old=2 new=0"},
	} {
		rd := &recordReader{b: b, tg: tg, r: &streamRec{table: 1, id: 1, view: c.view}, coll: collBase(ns, 1), limit: 10}
		w, ok, err := rd.record(placeOf(tg, layout{}), c.rec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := ""
		if ok {
			got = w.EventName + " " + w.Dynamodb.Keys["pk"].S + " old=" + itoa64(int64(len(w.Dynamodb.OldImage))) + " new=" + itoa64(int64(len(w.Dynamodb.NewImage)))
			for _, im := range []attr.Item{w.Dynamodb.Keys, w.Dynamodb.NewImage, w.Dynamodb.OldImage} {
				for k := range im {
					if strings.HasPrefix(k, reservedPrefix) {
						t.Errorf("%s: the record shows %s", c.name, k)
					}
				}
			}
			if w.Dynamodb.StreamViewType != c.view || w.Dynamodb.SizeBytes <= 0 || w.Dynamodb.SequenceNumber != "100" {
				t.Errorf("%s: %+v", c.name, w.Dynamodb)
			}
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestStreamOfDefinition: a stream's record newer than the definition is
// shown only while a gateway's definition may still be older than it.
func TestStreamOfDefinition(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	tbl := &schema.Table{LatestStream: uint64(now.Add(-time.Minute).UnixMilli())}
	for _, c := range []struct {
		id   time.Time
		want bool
	}{
		{now.Add(-2 * time.Minute), true},   // an earlier stream
		{now.Add(-time.Minute), true},       // the latest
		{now.Add(-time.Second), true},       // just enabled elsewhere
		{now.Add(-30 * time.Second), false}, // left by a cut-off UpdateTable
	} {
		r := &streamRec{id: uint64(c.id.UnixMilli())}
		if got := r.ofDef(tbl, now); got != c.want {
			t.Errorf("stream %v: shown %v, want %v", c.id, got, c.want)
		}
	}
}
