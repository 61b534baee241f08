package engine

import (
	"bytes"
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// maxRecordBytes is how much GetRecords returns at most, as DynamoDB.
const maxRecordBytes = 1 << 20

// GetRecords returns up to Limit (at most 1,000) records, at most 1 MB,
// from the position of a shard iterator, and the iterator of the position
// after them; NextShardIterator is null once a closed shard has been read
// to its end. Each call is one streams read request unit, charged to the
// table's reads. Errors: ValidationException (a malformed or altered
// iterator), AccessDeniedException (a genuine iterator issued to another
// tenant or environment, audited by the server as a cross-tenant attempt;
// the operator), ExpiredIteratorException, TrimmedDataAccessException,
// ResourceNotFoundException (the table or stream is gone).
func (e *Engine) GetRecords(ctx context.Context, s tenancy.Scope, in *wire.GetRecordsInput) (*wire.GetRecordsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 1000)
	if err != nil {
		return nil, err
	}
	if in.ShardIterator == "" {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'shardIterator' failed to satisfy constraint: Member must not be null")
	}
	if s.Tenant().IsZero() {
		return nil, apierr.New(apierr.AccessDenied, "The operator credential has no access to table data; use a tenant credential")
	}
	it, err := e.clog.OpenIterator(in.ShardIterator, resolve.Namespace(s))
	if err != nil {
		return nil, logError(err)
	}
	h, err := e.openLog(ctx, s, it.Name)
	defer h.close()
	if err != nil && !apierr.Is(err, apierr.ResourceNotFound) {
		return nil, err // e.g. a narrowed credential's policy
	}
	st, serr := e.clog.Stream(it.Table, it.Stream)
	if serr != nil || !e.streamShown(st) || st.TableName != it.Name || st.Owner != nil && !bytes.Equal(st.Owner, resolve.Namespace(s)) {
		return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found: Stream of table %s not found", it.Name)
	}
	if err != nil || h.Table.ID != it.Table {
		// The table was deleted (or replaced) since: its stream stays
		// readable until retention removes it.
		h = e.goneTableHandle(s, st)
		defer h.close()
	}
	page, err := e.clog.Read(h.db, h.Namespace, st, it.Pos, limit, maxRecordBytes)
	if err != nil {
		return nil, logError(err)
	}
	out := &wire.GetRecordsOutput{Records: make([]wire.Record, 0, len(page.Records))}
	out.U = wire.Usage{ReadUnits: 1, Table: h.Table.Name}
	for _, r := range page.Records {
		out.Records = append(out.Records, e.wireRecord(h.Namespace, st, r))
	}
	if !page.Drained {
		next := it
		next.Pos, next.Issued = page.Next, e.opts.Now()
		tok := e.clog.SealIterator(next)
		out.NextShardIterator = &tok
	}
	return out, nil
}

// wireRecord is the wire form of a change record.
func (e *Engine) wireRecord(ns []byte, st changelog.Stream, r changelog.Record) wire.Record {
	w := wire.Record{
		AwsRegion:    e.opts.Region,
		EventID:      e.clog.EventID(ns, st, r.Seq),
		EventName:    r.Event.String(),
		EventSource:  "aws:dynamodb",
		EventVersion: "1.1",
		Dynamodb: wire.StreamRecord{
			ApproximateCreationDateTime: float64(r.Time.Unix()),
			Keys:                        r.Keys,
			NewImage:                    r.New,
			OldImage:                    r.Old,
			SequenceNumber:              changelog.FormatSequenceNumber(changelog.Position{Shard: r.Shard, Seq: r.Seq}),
			SizeBytes:                   int64(r.SizeBytes()),
			StreamViewType:              st.View.String(),
		},
	}
	if r.Expired {
		w.UserIdentity = &wire.Identity{PrincipalId: "dynamodb.amazonaws.com", Type: "Service"}
	}
	return w
}
