package remote

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The shards of a disabled logical stream are closed, as DynamoDB's are
// (DESIGN.md, "Streams", "Disabled streams"). The end of the logical
// shard over engine shard X is the engine's last record in X whose
// ApproximateCreationDateTime (whole seconds) is not after the disable's
// second — the rule by which a reader of X already stopped. Nobody can
// know it before reading X up to there, so the first gateway that does
// (a GetRecords crossing it, or a DescribeStream searching for it) writes
// it into the stream's record (ends.<X>, on condition that none is there):
// from then on DescribeStream shows it as the shard's
// EndingSequenceNumber and every reader stops right after it.

// maxOpenShards bounds the engine shards a disable records as open.
const maxOpenShards = 1000

// endSearchPages bounds the engine pages (of 1,000 records) one
// DescribeStream reads to find shards' ends; a search cut short resumes
// at the next one from where it stopped (scan.<X>).
const endSearchPages = 8

// openShards returns the ids of the engine stream's shards that are open
// now; ok is false if they could not be listed (or are too many to
// record).
func (b *Backend) openShards(ctx context.Context, arn string) (open []string, ok bool) {
	shards, err := b.engineShards(ctx, arn)
	if err != nil {
		b.log.Warn("listing the engine stream's open shards", "err", err)
		return nil, false
	}
	for _, sh := range shards {
		if sh.SequenceNumberRange == nil || sh.SequenceNumberRange.EndingSequenceNumber == nil {
			open = append(open, aws.ToString(sh.ShardId))
		}
	}
	return open, len(open) <= maxOpenShards
}

// engineShards returns every shard of engine stream arn (DescribeStream
// pages of 100).
func (b *Backend) engineShards(ctx context.Context, arn string) ([]stypes.Shard, error) {
	var out []stypes.Shard
	var start *string
	for {
		d, err := b.st.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &arn, ExclusiveStartShardId: start})
		if err != nil {
			return nil, streamEngineErr(err)
		}
		out = append(out, d.StreamDescription.Shards...)
		start = d.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return out, nil
		}
	}
}

// endAttrs adds to in, the update of a stream record that disables it
// (disable) or undoes that, what the ends need: on a disable the engine
// shards open now and empty maps of ends and searches (kept if there);
// on an undo their removal.
func (b *Backend) endAttrs(ctx context.Context, in *dynamodb.UpdateItemInput, disable bool) {
	in.ExpressionAttributeNames["#e"], in.ExpressionAttributeNames["#c"] = "ends", "scan"
	if !disable {
		in.ExpressionAttributeNames["#o"] = "open"
		in.UpdateExpression = aws.String(*in.UpdateExpression + ", #e, #c, #o")
		return
	}
	expr := *in.UpdateExpression + ", #e = if_not_exists(#e, :e), #c = if_not_exists(#c, :e)"
	if in.ExpressionAttributeValues == nil {
		in.ExpressionAttributeValues = map[string]types.AttributeValue{}
	}
	in.ExpressionAttributeValues[":e"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	if arn, err := b.engineStream(ctx); err == nil {
		if open, ok := b.openShards(ctx, arn); ok {
			l := make([]types.AttributeValue, len(open))
			for i, id := range open {
				l[i] = &types.AttributeValueMemberS{Value: id}
			}
			in.ExpressionAttributeNames["#o"] = "open"
			in.ExpressionAttributeValues[":o"] = &types.AttributeValueMemberL{Value: l}
			expr += ", #o = if_not_exists(#o, :o)"
		}
	}
	in.UpdateExpression = aws.String(expr)
}

// decodeStreamEnd reads the ends' attributes of a stream record.
func decodeStreamEnd(r *streamRec, it map[string]types.AttributeValue) {
	if l, ok := it["open"].(*types.AttributeValueMemberL); ok {
		r.openKnown = true
		for _, v := range l.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				r.open = append(r.open, s.Value)
			}
		}
	}
	strMap := func(name string) map[string]string {
		m, ok := it[name].(*types.AttributeValueMemberM)
		if !ok {
			return nil
		}
		out := make(map[string]string, len(m.Value))
		for k, v := range m.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				out[k] = s.Value
			}
		}
		return out
	}
	r.ends, r.scan = strMap("ends"), strMap("scan")
}

// endOf returns the recorded end of r's logical shard over engine shard
// id: the sequence number of its last record, or "" if it holds no
// record up to the disable; ok is false while it is not known.
func (r *streamRec) endOf(id string) (seq string, ok bool) {
	if r.disabled.IsZero() || r.ends == nil {
		return "", false
	}
	seq, ok = r.ends[id]
	return seq, ok
}

// seqCmp compares two engine sequence numbers (decimal strings, of any
// length): -1, 0 or 1.
func seqCmp(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// setEnd records seq as the end of r's logical shard over engine shard id
// (the first gateway's wins; a stream disabled before ends were recorded
// takes none) and returns the end recorded.
func (b *Backend) setEnd(ctx context.Context, r *streamRec, id, seq string) string {
	if r.ends == nil {
		return seq
	}
	in := &dynamodb.UpdateItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: streamPK(r.table)},
		attrSK: &types.AttributeValueMemberB{Value: streamSK(r.id)},
	},
		UpdateExpression:          aws.String("SET #e.#x = :v"),
		ConditionExpression:       aws.String("attribute_exists(#e) AND attribute_not_exists(#e.#x)"),
		ExpressionAttributeNames:  map[string]string{"#e": "ends", "#x": id},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: seq}},
	}
	_, err := b.db.UpdateItem(ctx, in)
	b.st.mu.Lock()
	delete(b.st.recs, recKey{r.table, r.id})
	b.st.mu.Unlock()
	if err != nil {
		if !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			b.log.Warn("recording the end of a disabled stream's shard", "table", r.table, "err", err)
			return seq
		}
		// Another gateway's came first: that one is the end.
		if fresh, ferr := b.streamRecFresh(ctx, r.table, r.id); ferr == nil && fresh != nil {
			if e, ok := fresh.endOf(id); ok {
				seq = e
			}
		}
	}
	if r.ends != nil {
		r.ends[id] = seq
	}
	return seq
}

// saveSearch records how far a search for the end of engine shard id
// has read (seq, a record not after the disable).
func (b *Backend) saveSearch(ctx context.Context, r *streamRec, id, seq string) {
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: streamPK(r.table)},
		attrSK: &types.AttributeValueMemberB{Value: streamSK(r.id)},
	},
		UpdateExpression:          aws.String("SET #c.#x = :v"),
		ConditionExpression:       aws.String("attribute_exists(#c)"),
		ExpressionAttributeNames:  map[string]string{"#c": "scan", "#x": id},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: seq}},
	})
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		b.log.Warn("recording a search for a disabled stream's end", "table", r.table, "err", err)
	}
}

// findEnd reads engine shard id of disabled stream r, from where an
// earlier search stopped, for at most *budget engine pages, until it
// knows the logical shard's end; ok is false if it does not yet (the
// budget ran out, or the shard's present end was reached less than
// drainAfter after the disable).
func (b *Backend) findEnd(ctx context.Context, r *streamRec, id string, budget *int) (string, bool) {
	hi := r.disabled.Unix()
	prev := r.scan[id] // the last engine record read that is not after the disable
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &r.engine, ShardId: &id, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}
	if prev != "" {
		in.ShardIteratorType, in.SequenceNumber = stypes.ShardIteratorTypeAfterSequenceNumber, aws.String(prev)
	}
	gi, err := b.st.client.GetShardIterator(ctx, in)
	if err != nil {
		b.log.Warn("searching for a disabled stream's end", "table", r.table, "err", err)
		return "", false
	}
	iter, start := gi.ShardIterator, prev
	for *budget > 0 {
		*budget--
		res, err := b.st.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
		if err != nil {
			b.log.Warn("searching for a disabled stream's end", "table", r.table, "err", err)
			return "", false
		}
		for _, er := range res.Records {
			if er.Dynamodb == nil {
				continue
			}
			if aws.ToTime(er.Dynamodb.ApproximateCreationDateTime).Unix() > hi {
				return b.setEnd(ctx, r, id, prev), true
			}
			prev = aws.ToString(er.Dynamodb.SequenceNumber)
		}
		if res.NextShardIterator == nil {
			return b.setEnd(ctx, r, id, prev), true // closed by the engine, read to its end
		}
		if len(res.Records) == 0 {
			if b.opts.Now().Sub(r.disabled) > drainAfter {
				return b.setEnd(ctx, r, id, prev), true
			}
			break
		}
		iter = res.NextShardIterator
	}
	if prev != start {
		b.saveSearch(ctx, r, id, prev)
	}
	return "", false
}

// disabledShards returns the shards of disabled stream r as DescribeStream
// shows them: the engine shards open at the disable, each closed at its
// end once that is known (searched for within endSearchPages), omitted if
// it holds no record up to the disable; those the engine had closed
// before with the engine's end; none opened after the disable (they hold
// nothing of r). A stream disabled before ends were recorded shows the
// engine's shards as they are.
func (b *Backend) disabledShards(ctx context.Context, r *streamRec) ([]wire.Shard, error) {
	shards, err := b.engineShards(ctx, r.engine)
	if err != nil {
		return nil, err
	}
	open := map[string]bool{}
	for _, id := range r.open {
		open[id] = true
	}
	// Shards opened after the disable: not open then, and open now or
	// children of one open then or opened after.
	after := map[string]bool{}
	if r.openKnown && r.ends != nil {
		for grew := true; grew; {
			grew = false
			for _, sh := range shards {
				id := aws.ToString(sh.ShardId)
				if open[id] || after[id] {
					continue
				}
				closed := sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
				if p := aws.ToString(sh.ParentShardId); !closed || p != "" && (open[p] || after[p]) {
					after[id], grew = true, true
				}
			}
		}
	}
	budget := endSearchPages
	out := []wire.Shard{}
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		if after[id] {
			continue
		}
		w := wire.Shard{ShardId: id, ParentShardId: aws.ToString(sh.ParentShardId)}
		if sr := sh.SequenceNumberRange; sr != nil {
			w.SequenceNumberRange.StartingSequenceNumber = aws.ToString(sr.StartingSequenceNumber)
			w.SequenceNumberRange.EndingSequenceNumber = aws.ToString(sr.EndingSequenceNumber)
		}
		needs := r.ends != nil && (open[id] || !r.openKnown && w.SequenceNumberRange.EndingSequenceNumber == "")
		if needs {
			w.SequenceNumberRange.EndingSequenceNumber = ""
			end, ok := r.endOf(id)
			if !ok && budget > 0 {
				end, ok = b.findEnd(ctx, r, id, &budget)
			}
			if ok && end == "" {
				continue // nothing of the stream in it
			}
			if ok {
				w.SequenceNumberRange.EndingSequenceNumber = end
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// pageShards is DescribeStream's page of shards: at most limit after
// exclusiveStart.
func pageShards(shards []wire.Shard, exclusiveStart string, limit int) ([]wire.Shard, string, error) {
	i := 0
	if exclusiveStart != "" {
		i = -1
		for j, sh := range shards {
			if sh.ShardId == exclusiveStart {
				i = j + 1
				break
			}
		}
		if i < 0 {
			return nil, "", apierr.New(apierr.ResourceNotFound, "Requested resource not found: Shard: %s not found", apierr.Clip(exclusiveStart))
		}
	}
	page := shards[i:]
	if len(page) > limit {
		page = page[:limit]
		return page, page[limit-1].ShardId, nil
	}
	return page, "", nil
}

// endAtDrain is the end a reader of engine shard p.shard knows when it
// finds that nothing after lastSeq (the last engine record it read, ""
// if none) can be of the disabled stream: lastSeq, or what p says came
// before; ok is false if it cannot tell (an iterator AT a sequence
// number, or the engine's, with nothing read).
func endAtDrain(p iterPos, lastSeq string) (string, bool) {
	switch {
	case lastSeq != "":
		return lastSeq, true
	case p.kind == posAfter:
		return p.arg, true
	case p.kind == posTrim:
		return "", true
	}
	return "", false
}

// pastEnd reports whether position p of a shard whose end is end lies
// after it.
func pastEnd(p iterPos, end string) bool {
	switch p.kind {
	case posAfter:
		return end == "" || seqCmp(p.arg, end) >= 0
	case posAt:
		return end == "" || seqCmp(p.arg, end) > 0
	}
	return end == ""
}
