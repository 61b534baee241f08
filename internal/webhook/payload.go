package webhook

import (
	"encoding/json"

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
	return json.Marshal(struct {
		Records []json.RawMessage `json:"Records"`
	}{recs})
}
