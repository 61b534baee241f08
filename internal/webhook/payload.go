package webhook

import (
	"encoding/json"
	"strconv"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Record is one record of a delivery: a DynamoDB Streams record as AWS
// Lambda receives it (the Streams API's record plus eventSourceARN).
type Record struct {
	wire.Record
	EventSourceARN string `json:"eventSourceARN"`
}

// Event is a delivery's body, the shape of Lambda's DynamoDB event.
type Event struct {
	Records []Record `json:"Records"`
}

// maxBody bounds a delivery's body (Lambda's synchronous payload limit); a
// batch is cut before a record that would pass it, but always holds at
// least one record.
const maxBody = 6 << 20

// source names where records come from in their ARNs.
type source struct {
	Region, Account string
}

// record returns the Lambda form of entry e of table.
func (s source) record(table string, e changelog.Entry) Record {
	w := wire.Record{
		AwsRegion:    s.Region,
		EventID:      e.EventID,
		EventName:    e.Event.String(),
		EventSource:  "aws:dynamodb",
		EventVersion: "1.1",
		Dynamodb: wire.StreamRecord{
			ApproximateCreationDateTime: float64(e.Time.Unix()),
			Keys:                        e.Keys,
			NewImage:                    e.New,
			OldImage:                    e.Old,
			SequenceNumber:              e.SequenceNumber,
			SizeBytes:                   int64(e.SizeBytes()),
			StreamViewType:              "NEW_AND_OLD_IMAGES",
		},
	}
	if e.Expired {
		w.UserIdentity = &wire.Identity{PrincipalId: "dynamodb.amazonaws.com", Type: "Service"}
	}
	return Record{Record: w, EventSourceARN: changelog.FormatStreamARN(s.Region, s.Account, table, changelog.Stream{ID: e.Stream})}
}

// encode returns the body of a delivery of recs (each an encoded Record).
func encode(recs []json.RawMessage) ([]byte, error) {
	n := 16
	for _, r := range recs {
		n += len(r) + 1
	}
	b := append(make([]byte, 0, n), `{"Records":[`...)
	for i, r := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, "]}"...), nil
}

// quoted returns s as a JSON string.
func quoted(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// encoder writes the records of one table's deliveries: what
// json.Marshal(s.record(table, e)) writes, without reflection (delivery
// encodes every record it sends; TestAppendRecordMatchesMarshal keeps
// the two equal).
type encoder struct {
	region, arnPrefix []byte // quoted region; `"arn:...:table/<name>/stream/`
	// The label of the stream last encoded (a table's records are in one
	// stream but for the moment of a switch).
	labelOf uint64
	label   string
}

func (s source) encoder(table string) *encoder {
	arn := changelog.FormatStreamARN(s.Region, s.Account, table, changelog.Stream{ID: 1})
	arn = arn[:len(arn)-len(changelog.Stream{ID: 1}.Label())]
	q := quoted(arn)
	return &encoder{region: quoted(s.Region), arnPrefix: q[:len(q)-1]}
}

// append appends the JSON of entry e's Record to dst.
func (c *encoder) append(dst []byte, e changelog.Entry) []byte {
	dst = append(dst, `{"awsRegion":`...)
	dst = append(dst, c.region...)
	dst = append(dst, `,"dynamodb":{"ApproximateCreationDateTime":`...)
	dst = strconv.AppendFloat(dst, float64(e.Time.Unix()), 'f', -1, 64)
	dst = append(dst, `,"Keys":`...)
	dst = appendItem(dst, e.Keys)
	if len(e.New) > 0 {
		dst = append(dst, `,"NewImage":`...)
		dst = attr.AppendItemJSON(dst, e.New)
	}
	if len(e.Old) > 0 {
		dst = append(dst, `,"OldImage":`...)
		dst = attr.AppendItemJSON(dst, e.Old)
	}
	dst = append(dst, `,"SequenceNumber":`...)
	dst = appendQuoted(dst, e.SequenceNumber)
	dst = append(dst, `,"SizeBytes":`...)
	dst = strconv.AppendInt(dst, int64(e.SizeBytes()), 10)
	dst = append(dst, `,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventID":`...)
	dst = appendQuoted(dst, e.EventID)
	dst = append(dst, `,"eventName":"`...)
	dst = append(dst, e.Event.String()...)
	dst = append(dst, `","eventSource":"aws:dynamodb","eventVersion":"1.1"`...)
	if e.Expired {
		dst = append(dst, `,"userIdentity":{"PrincipalId":"dynamodb.amazonaws.com","Type":"Service"}`...)
	}
	dst = append(dst, `,"eventSourceARN":`...)
	dst = append(dst, c.arnPrefix...)
	if c.label == "" || c.labelOf != e.Stream {
		c.labelOf, c.label = e.Stream, changelog.Stream{ID: e.Stream}.Label()
	}
	dst = append(dst, c.label...)
	return append(dst, `"}`...)
}

// appendQuoted appends s as a JSON string: as it is, quoted, when it has
// only letters and digits (sequence numbers, event ids), else as
// encoding/json writes it.
func appendQuoted(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return append(dst, quoted(s)...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendItem is attr.AppendItemJSON, with null for a nil item (as
// encoding/json writes a nil map).
func appendItem(dst []byte, it attr.Item) []byte {
	if it == nil {
		return append(dst, "null"...)
	}
	return attr.AppendItemJSON(dst, it)
}
