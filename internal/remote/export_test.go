package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// EngineStreamARNForTest returns the engine table's stream ARN, once a
// logical stream enabled it ("" before).
func EngineStreamARNForTest(b *Backend) string {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	return b.st.arn
}

// SweepGoneForTest sweeps the kept streams of deleted tables whose 24
// hours are over at now, as the gateway's sweep does; it returns how
// many it forgot.
func SweepGoneForTest(b *Backend, now time.Time) (int, error) {
	return b.sweepGoneOnce(b.bg, now)
}

// ErrNoMoveForTest is MoveForTest's answer for an item whose shard is
// the same in both layouts.
var ErrNoMoveForTest = errors.New("remote: the item stays in its shard")

// MoveForTest moves the item with key key of scope s's collection of
// table from shard 0 of 1 to its shard of 4, as the migrator reads and
// moves it: marked (the gateway's move) or not (the transaction alone,
// the move before the marks).
func MoveForTest(ctx context.Context, b *Backend, s tenancy.Scope, table string, key attr.Item, marked bool) error {
	tg, err := b.res.Open(ctx, s, table)
	if err != nil {
		return err
	}
	p := placeOf(tg, layout{n: 4, from: 1, phase: phaseMove})
	if p.pkOf(key) == p.part(0) {
		return ErrNoMoveForTest
	}
	sk, err := p.sortKey(key)
	if err != nil {
		return err
	}
	raw, err := b.reread(ctx, map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: p.part(0)}, attrSK: &types.AttributeValueMemberB{Value: sk}})
	if err != nil || raw == nil {
		return fmt.Errorf("remote: the item in shard 0: %v", err)
	}
	if marked {
		if ok, err := b.markedMove(ctx, p, raw); !ok || err != nil {
			return fmt.Errorf("remote: moved %v: %v", ok, err)
		}
		return nil
	}
	_, err = b.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: &b.table, Key: physKeyOf(raw), ConditionExpression: aws.String("attribute_exists(#p)"), ExpressionAttributeNames: map[string]string{"#p": attrPK}}},
		{Put: &types.Put{TableName: &b.table, Item: relocate(p, cloneRaw(raw), p.pkOf(key)), ConditionExpression: aws.String("attribute_not_exists(#p)"), ExpressionAttributeNames: map[string]string{"#p": attrPK}}},
	}})
	return err
}
