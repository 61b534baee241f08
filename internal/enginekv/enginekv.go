// Package enginekv is the control plane's ordered key-value store (the
// kv.Store seam) on a DynamoDB-API engine, so that any number of tenantdb
// gateways over one engine share tenants, credentials, memberships,
// audit, quotas and usage. See DESIGN.md.
package enginekv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
)

// API is the part of *dynamodb.Client the store calls.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Physical attributes of a control record. The key attributes are the
// engine table's (internal/remote's layout); the partition values all
// start with "ctl#", which no data collection's does (those are hex).
const (
	attrPK = "tenantdb:pk"
	attrSK = "tenantdb:sk"
	attrV  = "v" // 0x01 || value: never empty, which not every engine stores
	attrN  = "n" // a counter (kv.Batch.Add)

	pkPrefix = "ctl#"
	// maxTransact is DynamoDB's limit of actions in one TransactWriteItems.
	maxTransact = 100
	// conflictRounds bounds the retries of a transaction cancelled by a
	// concurrent transaction on one of its items (TransactionConflict).
	conflictRounds = 12
)

// Store is a kv.Store over one engine table. Its methods are safe for
// concurrent use; it holds no lock.
type Store struct {
	db    API
	table string
	log   *slog.Logger
	// noTx is set once the engine answered that it has no transactions
	// (dynalite): batches are then applied one operation at a time.
	noTx atomic.Bool
}

// New returns the store over table (the remote backend's engine table,
// which must exist). log receives the one warning about an engine
// without transactions; nil discards it.
func New(db API, table string, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{db: db, table: table, log: log}
}

var _ kv.Store = (*Store)(nil)

func partitionValue(key []byte) string { return pkPrefix + hex.EncodeToString(keyspace.Partition(key)) }

func itemKey(key []byte) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: partitionValue(key)},
		attrSK: &types.AttributeValueMemberB{Value: key},
	}
}

// Present returns a transaction's check that key holds something, for
// writes outside this store that must not outlive a record of it (the
// remote backend's capacity buckets and their tenant's record).
func (s *Store) Present(key []byte) *types.ConditionCheck {
	return &types.ConditionCheck{TableName: &s.table, Key: itemKey(key),
		ConditionExpression:      aws.String("attribute_exists(#p)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK}}
}

func stored(v []byte) []byte { return append([]byte{1}, v...) }

// value returns the logical value of an item (nil, false if it has none).
func value(item map[string]types.AttributeValue) ([]byte, error) {
	if n, ok := item[attrN].(*types.AttributeValueMemberN); ok {
		c, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("enginekv: counter %q: %w", n.Value, err)
		}
		return kv.EncodeCounter(c), nil
	}
	if b, ok := item[attrV].(*types.AttributeValueMemberB); ok && len(b.Value) > 0 {
		return b.Value[1:], nil
	}
	return nil, errors.New("enginekv: control record without a value")
}

// Get implements kv.Store with one strongly consistent GetItem.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: itemKey(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("enginekv: get: %w", err)
	}
	if out.Item == nil {
		return nil, kv.ErrNotFound
	}
	return value(out.Item)
}

// Scan implements kv.Store with strongly consistent Query pages of lo's
// partition. NB: [lo, hi) must lie in one partition (keyspace.Partition);
// every range the control plane reads does (a tenant's records, the
// slugs, one user's memberships).
func (s *Store) Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error {
	return s.scan(ctx, lo, hi, nil, f)
}

func (s *Store) scan(ctx context.Context, lo, hi []byte, projection *string, f func(k, v []byte) bool) error {
	if len(lo) == 0 {
		return errors.New("enginekv: a scan needs a lower bound in one partition")
	}
	part := keyspace.Partition(lo)
	in := &dynamodb.QueryInput{
		TableName:                &s.table,
		ConsistentRead:           aws.Bool(true),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p":  &types.AttributeValueMemberS{Value: partitionValue(lo)},
			":lo": &types.AttributeValueMemberB{Value: lo},
		},
		KeyConditionExpression: aws.String("#pk = :p AND #sk >= :lo"),
		ProjectionExpression:   projection,
	}
	if hi != nil && bytes.Equal(keyspace.Partition(hi), part) {
		if bytes.Compare(lo, hi) >= 0 {
			return nil
		}
		in.KeyConditionExpression = aws.String("#pk = :p AND #sk BETWEEN :lo AND :hi")
		in.ExpressionAttributeValues[":hi"] = &types.AttributeValueMemberB{Value: hi}
	}
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("enginekv: scan: %w", err)
		}
		for _, item := range out.Items {
			k, ok := item[attrSK].(*types.AttributeValueMemberB)
			if !ok {
				return errors.New("enginekv: control record without a key")
			}
			if hi != nil && bytes.Compare(k.Value, hi) >= 0 {
				return nil
			}
			var v []byte
			if projection == nil {
				if v, err = value(item); err != nil {
					return err
				}
			}
			if !f(k.Value, v) {
				return nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Apply implements kv.Store. A batch of one Set, Delete or Check without
// counters is one conditional PutItem or DeleteItem; any other batch is
// one TransactWriteItems with a ClientRequestToken, so the SDK's retry of
// a request whose answer was lost does not apply it twice (a counter
// counts once). DeleteRange ops are applied first, by reading the range
// and deleting it in BatchWriteItem calls, and are not atomic with the
// rest; a batch of more than 100 operations without conditions is split
// into transactions of 100, each atomic (enginekv/DESIGN.md).
func (s *Store) Apply(ctx context.Context, b *kv.Batch) error {
	var ops []kv.Op
	for _, op := range b.Ops {
		if op.Kind != kv.OpDeleteRange {
			ops = append(ops, op)
			continue
		}
		if err := s.deleteRange(ctx, op.Key, op.End); err != nil {
			return err
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if len(ops) == 1 && ops[0].Kind != kv.OpAdd && ops[0].Kind != kv.OpCheck {
		return s.single(ctx, ops[0])
	}
	if len(ops) > maxTransact {
		for _, op := range ops {
			if op.Cond != kv.CondNone {
				return fmt.Errorf("enginekv: a conditional batch of %d operations exceeds the engine's %d per transaction", len(ops), maxTransact)
			}
		}
		for len(ops) > 0 {
			n := min(len(ops), maxTransact)
			if err := s.transact(ctx, ops[:n]); err != nil {
				return err
			}
			ops = ops[n:]
		}
		return nil
	}
	return s.transact(ctx, ops)
}

// condition returns the condition expression of op and adds its names
// and values.
func condition(op kv.Op, names map[string]string, values map[string]types.AttributeValue) *string {
	switch op.Cond {
	case kv.CondAbsent:
		names["#pk"] = attrPK
		return aws.String("attribute_not_exists(#pk)")
	case kv.CondPresent:
		names["#pk"] = attrPK
		return aws.String("attribute_exists(#pk)")
	case kv.CondEquals:
		names["#v"] = attrV
		values[":old"] = &types.AttributeValueMemberB{Value: stored(op.Old)}
		return aws.String("#v = :old")
	}
	return nil
}

func nilIfEmpty[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

func (s *Store) single(ctx context.Context, op kv.Op) error {
	names, values := map[string]string{}, map[string]types.AttributeValue{}
	cond := condition(op, names, values)
	var err error
	switch op.Kind {
	case kv.OpSet:
		item := itemKey(op.Key)
		item[attrV] = &types.AttributeValueMemberB{Value: stored(op.Value)}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item, ConditionExpression: cond,
			ExpressionAttributeNames: nilIfEmpty(names), ExpressionAttributeValues: nilIfEmpty(values)})
	case kv.OpDelete:
		_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: itemKey(op.Key), ConditionExpression: cond,
			ExpressionAttributeNames: nilIfEmpty(names), ExpressionAttributeValues: nilIfEmpty(values)})
	default:
		return fmt.Errorf("enginekv: operation %d alone", op.Kind)
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w: key %x", kv.ErrConflict, op.Key)
	}
	if err != nil {
		return fmt.Errorf("enginekv: write: %w", err)
	}
	return nil
}

func (s *Store) transact(ctx context.Context, ops []kv.Op) error {
	if s.noTx.Load() {
		return s.sequential(ctx, ops)
	}
	items := make([]types.TransactWriteItem, 0, len(ops))
	for _, op := range ops {
		names, values := map[string]string{}, map[string]types.AttributeValue{}
		cond := condition(op, names, values)
		var it types.TransactWriteItem
		switch op.Kind {
		case kv.OpSet:
			item := itemKey(op.Key)
			item[attrV] = &types.AttributeValueMemberB{Value: stored(op.Value)}
			it.Put = &types.Put{TableName: &s.table, Item: item, ConditionExpression: cond,
				ExpressionAttributeNames: nilIfEmpty(names), ExpressionAttributeValues: nilIfEmpty(values)}
		case kv.OpDelete:
			it.Delete = &types.Delete{TableName: &s.table, Key: itemKey(op.Key), ConditionExpression: cond,
				ExpressionAttributeNames: nilIfEmpty(names), ExpressionAttributeValues: nilIfEmpty(values)}
		case kv.OpAdd:
			names["#n"] = attrN
			values[":d"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(op.Delta, 10)}
			it.Update = &types.Update{TableName: &s.table, Key: itemKey(op.Key), UpdateExpression: aws.String("ADD #n :d"),
				ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values}
		case kv.OpCheck:
			if cond == nil {
				continue
			}
			it.ConditionCheck = &types.ConditionCheck{TableName: &s.table, Key: itemKey(op.Key), ConditionExpression: cond,
				ExpressionAttributeNames: nilIfEmpty(names), ExpressionAttributeValues: nilIfEmpty(values)}
		default:
			return fmt.Errorf("enginekv: unknown operation %d", op.Kind)
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil
	}
	backoff := 5 * time.Millisecond
	for round := 0; ; round++ {
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: aws.String(token())})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			var ae smithy.APIError
			if errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException" {
				if !s.noTx.Swap(true) {
					s.log.Warn("the engine has no transactions (TransactWriteItems): the control plane's multi-key writes are applied one at a time and are not atomic; run a single gateway over this engine")
				}
				return s.sequential(ctx, ops)
			}
			return fmt.Errorf("enginekv: transaction: %w", err)
		}
		conflict := false
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				key := []byte(nil)
				if i < len(ops) {
					key = ops[i].Key
				}
				return fmt.Errorf("%w: key %x", kv.ErrConflict, key)
			case "TransactionConflict":
				conflict = true
			}
		}
		if !conflict || round >= conflictRounds {
			return fmt.Errorf("enginekv: transaction: %w", err)
		}
		// Another transaction held one of the items; nothing was
		// written: try again with a new token.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

func token() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// deleteRange deletes every key in [lo, hi) of lo's partition.
func (s *Store) deleteRange(ctx context.Context, lo, hi []byte) error {
	var keys [][]byte
	if err := s.scan(ctx, lo, hi, aws.String("#pk, #sk"), func(k, _ []byte) bool {
		keys = append(keys, bytes.Clone(k))
		return true
	}); err != nil {
		return err
	}
	for len(keys) > 0 {
		n := min(len(keys), 25)
		reqs := make([]types.WriteRequest, 0, n)
		for _, k := range keys[:n] {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: itemKey(k)}})
		}
		keys = keys[n:]
		pending := map[string][]types.WriteRequest{s.table: reqs}
		for attempt := 0; len(pending[s.table]) > 0; attempt++ {
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return fmt.Errorf("enginekv: delete range: %w", err)
			}
			pending = out.UnprocessedItems
			if attempt > 20 {
				return errors.New("enginekv: delete range: the engine keeps leaving deletions unprocessed")
			}
			if len(pending[s.table]) > 0 {
				time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
			}
		}
	}
	return nil
}

// sequential applies ops one at a time, for an engine without
// transactions: checks first, then the writes in order, each with its own
// condition. NB: not atomic (a failed condition leaves the earlier writes
// in place) and not safe against another gateway between two operations;
// such an engine (dynalite) serves one gateway, as DESIGN.md says.
func (s *Store) sequential(ctx context.Context, ops []kv.Op) error {
	for _, op := range ops {
		if op.Kind != kv.OpCheck || op.Cond == kv.CondNone {
			continue
		}
		cur, err := s.Get(ctx, op.Key)
		if errors.Is(err, kv.ErrNotFound) {
			cur, err = nil, nil
		}
		if err != nil {
			return err
		}
		if !op.Holds(cur) {
			return fmt.Errorf("%w: key %x", kv.ErrConflict, op.Key)
		}
	}
	for _, op := range ops {
		switch op.Kind {
		case kv.OpCheck:
		case kv.OpAdd:
			names, values := map[string]string{"#n": attrN}, map[string]types.AttributeValue{
				":d": &types.AttributeValueMemberN{Value: strconv.FormatInt(op.Delta, 10)}}
			cond := condition(op, names, values)
			_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: itemKey(op.Key),
				UpdateExpression: aws.String("ADD #n :d"), ConditionExpression: cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values})
			var ccf *types.ConditionalCheckFailedException
			if errors.As(err, &ccf) {
				return fmt.Errorf("%w: key %x", kv.ErrConflict, op.Key)
			}
			if err != nil {
				return fmt.Errorf("enginekv: add: %w", err)
			}
		default:
			if err := s.single(ctx, op); err != nil {
				return err
			}
		}
	}
	return nil
}
