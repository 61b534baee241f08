package verify

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// streamsOf returns a DynamoDB Streams client with a's admin key,
// capturing through a's recorder.
func (r *run) streamsOf(a *actor) *dynamodbstreams.Client {
	c := cred(a.admin)
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       r.o.Region,
		BaseEndpoint: aws.String(r.o.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
		HTTPClient:       &http.Client{Transport: a.rec, Timeout: time.Minute},
		RetryMaxAttempts: r.o.MaxAttempts,
	})
}

// enableStream turns on a NEW_AND_OLD_IMAGES stream of table with c (the
// operator for a shared table, the owner otherwise) and returns its ARN.
func enableStream(ctx context.Context, c *dynamodb.Client, table string) (string, error) {
	out, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
	if err != nil {
		return "", fmt.Errorf("enabling the stream of %s: %w", table, err)
	}
	if arn := aws.ToString(out.TableDescription.LatestStreamArn); arn != "" {
		return arn, nil
	}
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", err
	}
	return aws.ToString(d.Table.LatestStreamArn), nil
}

// streams attacks the DynamoDB Streams surface: a stream of a shared
// table (one ARN, each tenant its own records) and the stream of the
// victim's own table. The victim writes an item carrying its secret under
// each stream; A uses the ARNs, shard ids, iterators and sequence numbers
// the victim got. Everything must be refused or empty: the recorder
// flags any answer carrying the victim's secret or ids.
func (r *run) streams(ctx context.Context) {
	A, B := r.A, r.B
	sa, sb := r.streamsOf(A), r.streamsOf(B)
	B.rec.take()
	fail := func(what string, err error) { r.setupFail(what, err) }
	shared, err := enableStream(ctx, r.opDB, r.tables[kNS])
	if err != nil {
		fail("shared table", err)
		return
	}
	own, err := enableStream(ctx, B.Admin, r.tables[kBOnly])
	if err != nil {
		fail("victim's table", err)
		return
	}
	// The victim's changes, one under each stream.
	for _, k := range []string{kNS, kBOnly} {
		it := item(B, k, 90, 0)
		if _, err := B.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(k), Item: it}); err != nil {
			fail("victim's write", err)
			return
		}
		r.mu.Lock()
		r.bItems[k] = append(r.bItems[k], it)
		r.mu.Unlock()
	}
	// What the victim sees of each: shard ids, iterators, sequence numbers.
	type view struct {
		arn, shard string
		iter, seq  *string
	}
	victim := map[string]*view{}
	for name, arn := range map[string]string{"shared": shared, "own": own} {
		d, err := sb.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		if err != nil || len(d.StreamDescription.Shards) == 0 {
			fail("victim's DescribeStream of the "+name+" stream", fmt.Errorf("%v (%d shards)", err, len(d.StreamDescription.Shards)))
			return
		}
		v := &view{arn: arn, shard: aws.ToString(d.StreamDescription.Shards[len(d.StreamDescription.Shards)-1].ShardId)}
		it, err := sb.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(v.shard), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			fail("victim's GetShardIterator", err)
			return
		}
		v.iter = it.ShardIterator
		rs, err := sb.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: v.iter})
		if err != nil || len(rs.Records) == 0 {
			fail("victim's GetRecords of the "+name+" stream", fmt.Errorf("%v (no record of its write)", err))
			return
		}
		v.seq = rs.Records[0].Dynamodb.SequenceNumber
		victim[name] = v
	}
	B.rec.take()

	readAll := func(ctx context.Context, iter *string) error {
		for n := 0; iter != nil && n < 10; n++ {
			out, err := sa.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				return err
			}
			if len(out.Records) == 0 {
				return nil
			}
			iter = out.NextShardIterator
		}
		return nil
	}
	sh := victim["shared"]
	r.try(ctx, A.rec, "GetRecords from TRIM_HORIZON of a shared table's stream", func(ctx context.Context) string {
		it, err := sa.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(sh.arn), ShardId: aws.String(sh.shard), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return "" // refused: nothing read
		}
		readAll(ctx, it.ShardIterator)
		return "" // the recorder judges what came back
	})
	for name, v := range victim {
		r.try(ctx, A.rec, "GetRecords with the victim's iterator of the "+name+" stream", func(ctx context.Context) string {
			_, err := sa.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: v.iter})
			return refused(err)
		})
		r.try(ctx, A.rec, "GetRecords with an altered iterator of the victim's ("+name+")", func(ctx context.Context) string {
			forged := []byte(aws.ToString(v.iter))
			forged[len(forged)/2] ^= 1
			_, err := sa.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(string(forged))})
			return refused(err)
		})
		for _, typ := range []stypes.ShardIteratorType{stypes.ShardIteratorTypeAtSequenceNumber, stypes.ShardIteratorTypeAfterSequenceNumber} {
			r.try(ctx, A.rec, fmt.Sprintf("GetShardIterator %s the victim's sequence number (%s)", typ, name), func(ctx context.Context) string {
				it, err := sa.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(v.arn), ShardId: aws.String(v.shard),
					ShardIteratorType: typ, SequenceNumber: v.seq})
				if err != nil {
					return ""
				}
				readAll(ctx, it.ShardIterator)
				return ""
			})
		}
	}
	ov := victim["own"]
	r.try(ctx, A.rec, "DescribeStream of the victim's own table's stream", func(ctx context.Context) string {
		_, err := sa.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(ov.arn)})
		return refused(err)
	})
	r.try(ctx, A.rec, "GetShardIterator on the victim's own table's stream", func(ctx context.Context) string {
		_, err := sa.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(ov.arn), ShardId: aws.String(ov.shard), ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		return refused(err)
	})
	r.try(ctx, A.rec, "ListStreams (must not list the victim's own table's stream)", func(ctx context.Context) string {
		out, err := sa.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})
		if err != nil {
			return ""
		}
		for _, s := range out.Streams {
			if aws.ToString(s.StreamArn) == ov.arn {
				return "lists the victim's own table's stream"
			}
		}
		return ""
	})
	r.try(ctx, A.rec, "ListStreams of the victim's own table", func(ctx context.Context) string {
		out, err := sa.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: r.tbl(kBOnly)})
		if err == nil && len(out.Streams) > 0 {
			return "lists the streams of the victim's own table"
		}
		return ""
	})
}
