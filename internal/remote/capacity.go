package remote

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Capacity keeps the token buckets of fleet-wide quotas in the engine
// (it is the quota package's Leaser; internal/quota/DESIGN.md): a
// tenant's capacity is one bucket that every gateway takes leases from.
//
// A bucket is one item, stored as the time at which it would be empty
// again if nothing refilled it — the "theoretical arrival time" of GCRA,
// an exact token bucket in one number:
//
//	pk = "meta#cap#" tenant   sk = bucket name   tenantdb:tat = N (µs since the epoch)
//
// The bucket holds (now + size/rate - tat) x rate units, at most size
// (tat >= now); taking n units adds n/rate to tat. A lease is one
// UpdateItem, atomic in the engine: `ADD tat :d` on condition
// `tat BETWEEN :now AND :now + size/rate - :d` (the bucket is not full
// and holds d), or, when the bucket is full (tat < now, or no item yet),
// `SET tat = :now + :d` on that condition. The gateway guesses which from
// the last tat it saw, so a lease is one engine call except after the
// guess was wrong; a failed condition tells which (the old item comes
// back with ReturnValuesOnConditionCheckFailure, where the engine
// supports it). No gateway lock decides anything: two gateways leasing at
// once are ordered by the engine's conditions.
//
// Gateways' clocks set "now": a gateway whose clock runs δ ahead of the
// others' can take up to rate x δ more, once (NTP keeps δ to
// milliseconds).
type Capacity struct {
	db    *dynamodb.Client
	table string
	// Alive, if set, returns a check that holds while the tenant (hex id)
	// exists in the control plane: a bucket item is created only in one
	// transaction with it, so a gateway that has not yet seen a tenant's
	// deletion cannot bring its bucket back after SweepTenant removed it.
	Alive func(tenant string) *types.ConditionCheck

	noTx atomic.Bool // the engine has no transactions: buckets are created without the check

	mu   sync.Mutex
	hint map[string]int64 // bucket key -> the last tat seen, µs
}

// Capacity returns the engine's fleet-wide token buckets, in the
// backend's table.
func (b *Backend) Capacity() *Capacity {
	return &Capacity{db: b.db, table: b.table, hint: map[string]int64{}}
}

const (
	capPrefix = "meta#cap#"
	attrTAT   = "tenantdb:tat"
	// capRounds bounds the engine calls of one lease (a wrong guess, or
	// another gateway leasing in between).
	capRounds = 4
)

// Lease takes units from bucket key (rate units/s, at most size units) at
// now, if it holds them; otherwise it returns when it will. key is
// "<tenant>/<bucket name>": a tenant's buckets are one item collection.
func (c *Capacity) Lease(ctx context.Context, key string, units, rate, size float64, now time.Time) (bool, time.Time, error) {
	if rate <= 0 || units <= 0 {
		return true, time.Time{}, nil
	}
	tenant, name, _ := strings.Cut(key, "/")
	ikey := map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: capPrefix + tenant},
		attrSK: &types.AttributeValueMemberB{Value: []byte(name)},
	}
	d := int64(math.Ceil(units / rate * 1e6))
	burst := int64(size / rate * 1e6)
	t := now.UnixMicro()
	hi := t + burst - d
	if hi < t {
		// More than the bucket holds: never (the quota package does not ask).
		return false, now.Add(time.Duration(d) * time.Microsecond), nil
	}
	retry := func(tat int64) time.Time { return time.UnixMicro(tat + d - burst) }

	c.mu.Lock()
	hint, seen := c.hint[key]
	c.mu.Unlock()
	full := seen && hint < t
	triedFull, triedAdd, create := false, false, false
	for range capRounds {
		if create {
			ok, err := c.create(ctx, tenant, ikey, t+d)
			if errors.Is(err, errTenantGone) {
				return false, now.Add(time.Duration(d) * time.Microsecond), nil
			}
			if err != nil {
				return false, time.Time{}, err
			}
			if ok {
				c.remember(key, t+d)
				return true, time.Time{}, nil
			}
			create, full = false, false // created meanwhile: take from it
			continue
		}
		in := &dynamodb.UpdateItemInput{
			TableName:                           &c.table,
			Key:                                 ikey,
			ExpressionAttributeNames:            map[string]string{"#t": attrTAT},
			ReturnValues:                        types.ReturnValueUpdatedNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
		if full {
			triedFull = true
			in.UpdateExpression = aws.String("SET #t = :t")
			in.ConditionExpression = aws.String("attribute_not_exists(#t) OR #t < :now")
			if c.Alive != nil {
				// NB: only an existing bucket here; a new one is created
				// with the tenant's check (create).
				in.ConditionExpression = aws.String("#t < :now")
			}
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":t": num64(t + d), ":now": num64(t)}
		} else {
			triedAdd = true
			in.UpdateExpression = aws.String("ADD #t :d")
			in.ConditionExpression = aws.String("#t BETWEEN :now AND :hi")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":d": num64(d), ":now": num64(t), ":hi": num64(hi)}
		}
		out, err := c.db.UpdateItem(ctx, in)
		if err == nil {
			if tat, ok := tatOf(out.Attributes); ok {
				c.remember(key, tat)
			}
			return true, time.Time{}, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return false, time.Time{}, engineErr(err, strip)
		}
		old, ok := tatOf(ccf.Item)
		switch {
		case ok:
			c.remember(key, old)
			if old > hi {
				return false, retry(old), nil
			}
			full = old < t // else another gateway moved it in between
		case full && c.Alive != nil:
			create = true // no item, or an engine that does not say
		case full && triedAdd, !full && triedFull:
			// Neither condition held and the engine does not say why
			// (dynalite returns no old item): another gateway moved it in
			// between, or it is empty. Refuse for the time one lease
			// refills; a refusal withholds capacity, never grants it.
			return false, now.Add(time.Duration(d) * time.Microsecond), nil
		default:
			full = !full // no item yet, or an engine without the old item
		}
	}
	return false, now.Add(time.Duration(d) * time.Microsecond), nil
}

// errTenantGone refuses a lease of a tenant that no longer exists.
var errTenantGone = errors.New("remote: the tenant of the capacity bucket no longer exists")

// create creates the bucket item ikey holding tat, if it does not exist
// yet and tenant still exists; ok is false if the item exists.
func (c *Capacity) create(ctx context.Context, tenant string, ikey map[string]types.AttributeValue, tat int64) (ok bool, err error) {
	item := map[string]types.AttributeValue{attrTAT: num64(tat)}
	for k, v := range ikey {
		item[k] = v
	}
	put := &types.Put{TableName: &c.table, Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#p)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK}}
	if !c.noTx.Load() {
		_, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: put}, {ConditionCheck: c.Alive(tenant)},
		}})
		var tce *types.TransactionCanceledException
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &tce):
			for i, r := range tce.CancellationReasons {
				if aws.ToString(r.Code) != "ConditionalCheckFailed" {
					continue
				}
				if i == 1 {
					return false, errTenantGone
				}
				return false, nil
			}
			// TransactionConflict: another gateway creating it; read again.
			return false, nil
		case unknownOperation(err):
			c.noTx.Store(true) // an engine without transactions (dynalite): one gateway only
		default:
			return false, engineErr(err, strip)
		}
	}
	_, err = c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &c.table, Item: item,
		ConditionExpression: put.ConditionExpression, ExpressionAttributeNames: put.ExpressionAttributeNames})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, engineErr(err, strip)
	}
	return true, nil
}

// unknownOperation reports whether the engine answered that it does not
// serve the operation.
func unknownOperation(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException"
}

// sweepCapacity deletes every bucket of tenant (hex id).
func (b *Backend) sweepCapacity(ctx context.Context, tenant string) error {
	return b.deleteCollection(ctx, capPrefix+tenant)
}

func (c *Capacity) remember(key string, tat int64) {
	c.mu.Lock()
	c.hint[key] = tat
	c.mu.Unlock()
}

func num64(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// tatOf reads the bucket's time from an item or UpdateItem's attributes.
func tatOf(it map[string]types.AttributeValue) (int64, bool) {
	n, ok := it[attrTAT].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	return v, err == nil
}
