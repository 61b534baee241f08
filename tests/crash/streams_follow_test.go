package crash

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// liveFollower follows a stream while it is written, as a consumer does:
// shard after shard (parents first) from TRIM_HORIZON, then from
// AFTER_SEQUENCE_NUMBER of the last record it got in each shard, polling
// the open shard. It keeps its position across a kill -9 of the server
// and a restart (a new client), so what it gets over all rounds must be
// exactly the stream: each record once, none lost, none that a restart
// takes back.
type liveFollower struct {
	mu   sync.Mutex
	recs []stypes.Record
	seen map[string]bool   // sequence numbers got
	last map[string]string // shard id -> sequence number of the last record got
	done map[string]bool   // shards read to their end (closed)
	errs []string          // protocol errors (not a dead server's)
}

func newLiveFollower() *liveFollower {
	return &liveFollower{seen: map[string]bool{}, last: map[string]string{}, done: map[string]bool{}}
}

// run follows arn through sc until stop is closed (transport errors, as
// when the server is killed, are retried until then).
func (f *liveFollower) run(sc *dynamodbstreams.Client, arn string, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if err := f.pass(sc, arn); err != nil {
			time.Sleep(50 * time.Millisecond) // the server is gone, or going
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pass reads every shard from where the follower is to its current end.
func (f *liveFollower) pass(sc *dynamodbstreams.Client, arn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var shards []stypes.Shard
	var from *string
	for {
		d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), ExclusiveStartShardId: from})
		if err != nil {
			return err
		}
		shards = append(shards, d.StreamDescription.Shards...)
		if from = d.StreamDescription.LastEvaluatedShardId; from == nil {
			break
		}
	}
	// NB: DescribeStream lists parents first, and a child is read only
	// once its parent is read to its end (closed): a parent still open
	// may yet receive a change in flight, which must come before the
	// child's records.
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		f.mu.Lock()
		done, last := f.done[id], f.last[id]
		f.mu.Unlock()
		if done {
			continue
		}
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon}
		if last != "" {
			in.ShardIteratorType, in.SequenceNumber = stypes.ShardIteratorTypeAfterSequenceNumber, aws.String(last)
		}
		it, err := sc.GetShardIterator(ctx, in)
		if err != nil {
			return err
		}
		for iter := it.ShardIterator; ; {
			if iter == nil {
				f.mu.Lock()
				f.done[id] = true
				f.mu.Unlock()
				break
			}
			r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
			if err != nil {
				return err
			}
			f.mu.Lock()
			for _, rec := range r.Records {
				seq := aws.ToString(rec.Dynamodb.SequenceNumber)
				if f.seen[seq] {
					f.errs = append(f.errs, fmt.Sprintf("record %s got twice", seq))
				}
				f.seen[seq] = true
				f.last[id] = seq
				f.recs = append(f.recs, rec)
			}
			f.mu.Unlock()
			if len(r.Records) == 0 && r.NextShardIterator != nil {
				return nil // the open shard's end, for now: its children wait
			}
			iter = r.NextShardIterator
		}
	}
	return nil
}
