package remote

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The streams of a deleted table stay listed and readable for 24 hours
// after they were disabled (DESIGN.md, "Streams", "Deleted tables"), as
// DynamoDB's and the embedded server's: DeleteTable disables the enabled
// one and marks every stream record of the table with the deletion, the
// table's name, the namespace that owned it (none for a shared table) and
// its definition, and files it under meta#gone, sort key
// hex(owner) "#" name 00 table id stream id, which ListStreams and a
// stream ARN naming no live table's stream search in the caller's
// namespace and the shared tables'. Who may read one is resolve's
// MayReadGone; what they read is their own collection of the deleted
// table's id (never the name's present table). A sweep deletes both once
// the 24 hours are over; deleting the tenant deletes its own at once.

const gonePK = "meta#gone"

// goneSK is the sort key of stream id of deleted table table, named name
// and owned by owner (nil: shared).
func goneSK(owner []byte, name string, table, id uint64) []byte {
	sk := []byte(hex.EncodeToString(owner) + "#" + name + "\x00")
	sk = binary.BigEndian.AppendUint64(sk, table)
	return binary.BigEndian.AppendUint64(sk, id)
}

// goneIDs returns the table and stream ids at the end of a meta#gone
// sort key.
func goneIDs(sk []byte) (table, id uint64, ok bool) {
	if len(sk) < 17 {
		return 0, 0, false
	}
	n := len(sk)
	return binary.BigEndian.Uint64(sk[n-16 : n-8]), binary.BigEndian.Uint64(sk[n-8:]), true
}

// streamPurgeDelay is how long after the second of a table's deletion its
// purge waits when a stream of it is kept: the engine's records carry
// whole seconds, and a deletion of the purge in the deletion's second
// would be read as one of the stream's changes.
const streamPurgeDelay = 2 * time.Second

// keepStreams keeps the streams of table t (namespace ns), deleted at at,
// readable (see above) and returns the time before which the table's
// purge must not begin (zero when no stream is kept). Streams no longer
// shown are forgotten. Errors are logged: the table is deleted, and a
// stream not kept is one the Streams API no longer finds.
func (b *Backend) keepStreams(ctx context.Context, t *schema.Table, ns []byte, at time.Time) time.Time {
	if t.LatestStream == 0 || b.st.client == nil {
		return time.Time{}
	}
	recs, err := b.streamRecs(ctx, t.ID)
	if err != nil {
		b.log.Warn("keeping the streams of a deleted table", "table", t.ID, "err", err)
		return time.Time{}
	}
	def, err := schema.Encode(t)
	if err != nil {
		b.log.Warn("keeping the streams of a deleted table", "table", t.ID, "err", err)
		return time.Time{}
	}
	var owner []byte
	if !t.Shared() {
		owner = ns
	}
	now, kept := b.opts.Now(), false
	for _, r := range recs {
		if !r.shown(now) {
			b.dropStreamRec(ctx, r.table, r.id)
			continue
		}
		if r.disabled.IsZero() {
			// NB: the deletion disables it, recording the open shards
			// whose ends close it (streamend.go).
			if err := b.setStreamDisabled(ctx, r.table, r.id, at); err != nil {
				b.log.Warn("disabling the stream of a deleted table", "table", t.ID, "err", err)
				continue
			}
			r.disabled = at.UTC()
		}
		in := &dynamodb.UpdateItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: streamPK(r.table)},
			attrSK: &types.AttributeValueMemberB{Value: streamSK(r.id)},
		},
			UpdateExpression:         aws.String("SET #g = :g, #n = :n, #f = :f"),
			ConditionExpression:      aws.String("attribute_exists(#p)"),
			ExpressionAttributeNames: map[string]string{"#p": attrPK, "#g": "gone", "#n": "nm", "#f": "def"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":g": &types.AttributeValueMemberN{Value: itoa64(at.UnixMilli())},
				":n": &types.AttributeValueMemberS{Value: t.Name},
				":f": &types.AttributeValueMemberB{Value: def},
			}}
		if owner != nil {
			in.UpdateExpression = aws.String(*in.UpdateExpression + ", #o = :o")
			in.ExpressionAttributeNames["#o"] = "own"
			in.ExpressionAttributeValues[":o"] = &types.AttributeValueMemberB{Value: owner}
		}
		if _, err := b.db.UpdateItem(ctx, in); err != nil {
			b.log.Warn("keeping the stream of a deleted table", "table", t.ID, "err", err)
			continue
		}
		// NB: the record is marked before it is filed: every entry found
		// names a marked record.
		_, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: gonePK},
			attrSK: &types.AttributeValueMemberB{Value: goneSK(owner, t.Name, r.table, r.id)},
			"exp":  &types.AttributeValueMemberN{Value: itoa64(r.disabled.Add(streamRetention).UnixMilli())},
		}})
		if err != nil {
			b.log.Warn("filing the stream of a deleted table", "table", t.ID, "err", err)
			continue
		}
		b.st.mu.Lock()
		delete(b.st.recs, recKey{r.table, r.id})
		b.st.mu.Unlock()
		kept = true
	}
	if !kept {
		return time.Time{}
	}
	return time.Unix(at.Unix(), 0).Add(streamPurgeDelay)
}

// decodeStreamGone reads the deletion's attributes of a stream record.
func decodeStreamGone(r *streamRec, it map[string]types.AttributeValue) {
	if v, ok := it["gone"].(*types.AttributeValueMemberN); ok {
		if ms, err := parseInt64(v.Value); err == nil {
			r.gone = time.UnixMilli(ms).UTC()
		}
	}
	if v, ok := it["nm"].(*types.AttributeValueMemberS); ok {
		r.name = v.Value
	}
	if v, ok := it["own"].(*types.AttributeValueMemberB); ok && len(v.Value) > 0 {
		r.owner = v.Value
	}
	if v, ok := it["def"].(*types.AttributeValueMemberB); ok {
		r.def = v.Value
	}
}

// goneStreams returns the kept streams of deleted tables that scope s may
// read (resolve.MayReadGone), of the table named name (every name if
// ""), each with its record read fresh: those of the caller's own
// namespace's tables and of shared tables.
func (b *Backend) goneStreams(ctx context.Context, s tenancy.Scope, name string) ([]*streamRec, error) {
	if s.Tenant().IsZero() || b.st.client == nil {
		return nil, nil // NB: the operator has no access to table data
	}
	now := b.opts.Now()
	var out []*streamRec
	for _, owner := range [][]byte{resolve.Namespace(s), nil} {
		prefix := hex.EncodeToString(owner) + "#"
		if name != "" {
			prefix += name + "\x00"
		}
		err := b.goneEntries(ctx, []byte(prefix), func(sk []byte, _ int64) error {
			table, id, ok := goneIDs(sk)
			if !ok {
				return nil
			}
			r, err := b.streamRecFresh(ctx, table, id)
			if err != nil || r == nil {
				return err
			}
			if r.gone.IsZero() || !r.shown(now) || name != "" && r.name != name || !resolve.MayReadGone(s, r.owner, r.name) {
				return nil
			}
			out = append(out, r)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// goneEntries calls fn with the sort key and expiry (Unix ms) of every
// meta#gone entry whose sort key begins with prefix.
func (b *Backend) goneEntries(ctx context.Context, prefix []byte, fn func(sk []byte, exp int64) error) error {
	in := &dynamodb.QueryInput{TableName: &b.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :s)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK, "#s": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: gonePK},
			":s": &types.AttributeValueMemberB{Value: prefix},
		}}
	if len(prefix) == 0 {
		in.KeyConditionExpression = aws.String("#p = :p")
		delete(in.ExpressionAttributeNames, "#s")
		delete(in.ExpressionAttributeValues, ":s")
	}
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return engineErr(err, strip)
		}
		for _, it := range res.Items {
			sk, ok := it[attrSK].(*types.AttributeValueMemberB)
			if !ok {
				continue
			}
			var exp int64
			if v, ok := it["exp"].(*types.AttributeValueMemberN); ok {
				exp, _ = parseInt64(v.Value)
			}
			if err := fn(sk.Value, exp); err != nil {
				return err
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// forgetGone deletes the kept stream filed under sk: its record, then the
// entry.
func (b *Backend) forgetGone(ctx context.Context, sk []byte) error {
	if table, id, ok := goneIDs(sk); ok {
		_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: streamPK(table)},
			attrSK: &types.AttributeValueMemberB{Value: streamSK(id)},
		}})
		if err != nil {
			return engineErr(err, strip)
		}
		b.st.mu.Lock()
		delete(b.st.recs, recKey{table, id})
		b.st.mu.Unlock()
	}
	_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: gonePK},
		attrSK: &types.AttributeValueMemberB{Value: sk},
	}})
	if err != nil {
		return engineErr(err, strip)
	}
	return nil
}

// sweepGoneOnce forgets the kept streams whose 24 hours are over at now;
// it returns how many.
func (b *Backend) sweepGoneOnce(ctx context.Context, now time.Time) (int, error) {
	var old [][]byte
	err := b.goneEntries(ctx, nil, func(sk []byte, exp int64) error {
		if exp <= now.UnixMilli() {
			old = append(old, sk)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for i, sk := range old {
		if err := b.forgetGone(ctx, sk); err != nil {
			return i, err
		}
	}
	return len(old), nil
}

// goneSweepEvery is how often a gateway sweeps the kept streams of
// deleted tables (one Query of meta#gone, which holds a day's deletions
// of tables with streams).
const goneSweepEvery = 10 * time.Minute

// sweepGone sweeps the kept streams of deleted tables until ctx ends.
func (b *Backend) sweepGone(ctx context.Context) {
	tick := time.NewTicker(goneSweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := b.sweepGoneOnce(ctx, b.opts.Now()); err != nil && ctx.Err() == nil {
			b.log.Warn("sweeping the streams of deleted tables", "err", err)
		}
	}
}

// dropGoneStreams forgets the kept streams of the deleted tables of every
// namespace under prefix (a deleted tenant's).
func (b *Backend) dropGoneStreams(ctx context.Context, prefix []byte) error {
	var sks [][]byte
	if err := b.goneEntries(ctx, []byte(hex.EncodeToString(prefix)), func(sk []byte, _ int64) error {
		sks = append(sks, sk)
		return nil
	}); err != nil {
		return err
	}
	for _, sk := range sks {
		if err := b.forgetGone(ctx, sk); err != nil {
			return err
		}
	}
	return nil
}

// goneTarget is the Target through which scope s reads its own records of
// kept stream r of a deleted table: the table's last definition, in the
// caller's namespace (resolve.MayReadGone allowed it).
func goneTarget(s tenancy.Scope, r *streamRec) (resolve.Target, error) {
	t, err := schema.Decode(r.def)
	if err != nil {
		return resolve.Target{}, apierr.Wrap(apierr.Internal, err, "decoding a deleted table's definition")
	}
	t.Status = "DELETED"
	return resolve.Target{Table: t, Namespace: resolve.Namespace(s), Scope: s}, nil
}
