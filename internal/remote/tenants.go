package remote

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The registry of collections: which (namespace, table) pairs hold items
// or definitions, so that a deleted tenant's data can be found in every
// environment without scanning anyone else's. Entries live in one
// collection, sorted by namespace:
//
//	pk = "meta#reg"   sk = namespace || big-endian table id (0: the namespace's definitions)
//
// A gateway registers a pair (an idempotent put) before its first write
// to it and remembers that it did — for DefinitionsMaxStale on a fleet,
// measured from when the put or read started: another gateway may delete
// the tenant meanwhile (DropTenant deletes the entries), and a tenant
// created again with its id must be registered (and get a new
// incarnation) through every gateway. Tenant deletion settles for that
// bound before the id can be reused (catalog.Options.Settle).
const regPK = "meta#reg"

type registry struct {
	done  sync.Map // string(sk) -> time.Time (when the put started)
	lives sync.Map // string(sk) of table 0 -> cachedLife
}

// cachedLife is a namespace's incarnation and when its read started.
type cachedLife struct {
	life []byte
	at   time.Time
}

// fresh reports whether a registry entry cached at at may still be used.
func (b *Backend) fresh(at time.Time) bool {
	return b.opts.DefinitionsMaxStale <= 0 || time.Since(at) < b.opts.DefinitionsMaxStale
}

// registered reports whether this gateway registered sk recently enough.
func (b *Backend) registered(sk []byte) bool {
	v, ok := b.reg.done.Load(string(sk))
	return ok && b.fresh(v.(time.Time))
}

func regSK(ns []byte, table uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), ns...), table)
}

// registerColl registers tg's collection, with the shard count set for
// it (migrate.go) if it is new; fresh reports that this gateway had not
// registered it before (its cached layout is then forgotten).
func (b *Backend) registerColl(ctx context.Context, tg resolve.Target) (fresh bool, err error) {
	if tg.Namespace == nil {
		return false, nil
	}
	sk := regSK(tg.Namespace, tg.Table.ID)
	if b.registered(sk) {
		return false, nil
	}
	n, err := b.defaultShards(ctx, resolve.TenantPrefix(tg.Scope), tg.Table.Name)
	if err != nil {
		return false, err
	}
	if err := b.registerN(ctx, tg.Namespace, tg.Table.ID, n); err != nil {
		return false, err
	}
	b.lays.m.Delete(string(sk))
	return true, nil
}

// register records that p's collection (table 0: the namespace's
// definitions) holds data.
func (b *Backend) register(ctx context.Context, ns []byte, table uint64) error {
	return b.registerN(ctx, ns, table, 1)
}

// registerN is register, a new collection getting n shards.
func (b *Backend) registerN(ctx context.Context, ns []byte, table uint64, n int) error {
	if ns == nil {
		return nil
	}
	sk := regSK(ns, table)
	if b.registered(sk) {
		return nil
	}
	start := time.Now()
	// NB: conditional, so that the entry's layout (shard.go) and
	// incarnation are never overwritten.
	item := regKey(sk)
	if n > 1 {
		item["shards"] = num(n)
	}
	_, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#p)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK},
	})
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return engineErr(err, strip)
	}
	b.reg.done.Store(string(sk), start)
	return nil
}

// DropTenant deletes every item and table definition of scope s's tenant
// in every environment, found through the registry (lifecycle's tenant
// deletion). It is idempotent. With a WriteFence it deletes them twice:
// once at once, and again with the registry entries fenceWait after it
// began, when no write a gateway admitted before the deletion settled
// can still reach the engine (fence.go); the entries stay until then, so
// a deletion cut off in between finds every collection when retried.
func (b *Backend) DropTenant(ctx context.Context, s tenancy.Scope) error {
	if !s.Valid() || s.Tenant().IsZero() {
		return apierr.New(apierr.Validation, "no tenant to drop")
	}
	began := time.Now()
	prefix := resolve.TenantPrefix(s)
	if b.opts.WriteFence > 0 {
		if err := b.dropColls(ctx, prefix, false); err != nil {
			return err
		}
		if err := b.waitFence(ctx, began); err != nil {
			return err
		}
	}
	if err := b.dropColls(ctx, prefix, true); err != nil {
		return err
	}
	// The shard counts set for the tenant's future collections.
	in := &dynamodb.QueryInput{
		TableName:                &b.table,
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :s)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK, "#s": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: shardsPK},
			":s": &types.AttributeValueMemberB{Value: prefix},
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := b.db.Query(ctx, in)
		if err != nil {
			return engineErr(err, strip)
		}
		for _, it := range out.Items {
			if _, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: physKeyOf(it)}); err != nil {
				return engineErr(err, strip)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	// The kept streams of its deleted tables (streamgone.go).
	if err := b.dropGoneStreams(ctx, prefix); err != nil {
		return err
	}
	// Its capacity buckets (capacity.go) and storage counters (storage.go).
	if err := b.sweepCapacity(ctx, s.Tenant().String()); err != nil {
		return err
	}
	if err := b.dropStorage(ctx, prefix); err != nil {
		return err
	}
	b.res.ForgetTenant(s.Tenant())
	return nil
}

// dropColls deletes the items of every collection of the namespaces
// under prefix that the registry lists (their definitions too), and with
// entries the registry entries.
func (b *Backend) dropColls(ctx context.Context, prefix []byte, entries bool) error {
	in := &dynamodb.QueryInput{
		TableName:                &b.table,
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :s)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK, "#s": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: regPK},
			":s": &types.AttributeValueMemberB{Value: prefix},
		},
		ConsistentRead: aws.Bool(true),
	}
	var sks [][]byte
	var lays []layout
	for {
		out, err := b.db.Query(ctx, in)
		if err != nil {
			return engineErr(err, strip)
		}
		for _, it := range out.Items {
			if sk, ok := it[attrSK].(*types.AttributeValueMemberB); ok && len(sk.Value) > 8 {
				sks = append(sks, sk.Value)
				lays = append(lays, layoutFrom(it))
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	for i, sk := range sks {
		ns, table := sk[:len(sk)-8], binary.BigEndian.Uint64(sk[len(sk)-8:])
		pks := []string{defPK(ns)}
		if table != 0 {
			pks = (place{base: collBase(ns, table), lay: lays[i]}).shardPKs()
		}
		for _, pk := range pks {
			if err := b.deleteCollection(ctx, pk); err != nil {
				return err
			}
		}
		if !entries {
			continue
		}
		if _, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: regPK},
			attrSK: &types.AttributeValueMemberB{Value: sk},
		}}); err != nil {
			return engineErr(err, strip)
		}
		b.reg.done.Delete(string(sk))
		b.reg.lives.Delete(string(sk))
		b.lays.m.Delete(string(sk))
	}
	return nil
}

// SweepTenant deletes what the engine keeps of scope s's tenant outside
// its records and collections — its capacity buckets — once its records
// are gone (lifecycle.Options.Sweep): a gateway that had not yet seen the
// deletion may have leased from them after DropTenant, but can no longer
// create one (Capacity.Alive). It is idempotent.
func (b *Backend) SweepTenant(ctx context.Context, s tenancy.Scope) error {
	if !s.Valid() || s.Tenant().IsZero() {
		return apierr.New(apierr.Validation, "no tenant to sweep")
	}
	if err := b.sweepCapacity(ctx, s.Tenant().String()); err != nil {
		return err
	}
	return b.dropStorage(ctx, resolve.TenantPrefix(s))
}

// ReviveTenant has nothing to lift: DropTenant leaves no mark.
func (b *Backend) ReviveTenant(tenancy.Scope) {}

// deleteCollection deletes every item of the collection pk.
func (b *Backend) deleteCollection(ctx context.Context, pk string) error {
	in := b.partitionQuery(pk)
	in.ExpressionAttributeNames["#s"], in.ProjectionExpression = attrSK, aws.String("#p, #s")
	for {
		out, err := b.db.Query(ctx, in)
		if err != nil {
			return engineErr(err, strip)
		}
		for start := 0; start < len(out.Items); start += 25 {
			chunk := out.Items[start:min(start+25, len(out.Items))]
			reqs := make([]types.WriteRequest, len(chunk))
			for i, k := range chunk {
				reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}}
			}
			for len(reqs) > 0 {
				res, err := b.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{b.table: reqs}})
				if err != nil {
					return engineErr(err, strip)
				}
				reqs = res.UnprocessedItems[b.table]
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// incarnation returns the random value that identifies this life of
// namespace ns: a tenant deleted and created again with the same id gets
// a new one (DropTenant deletes it), so that nothing keyed by it — a
// transaction's ClientRequestToken — carries over. It is stored in the
// namespace's registry entry (table 0) and cached by the gateway.
func (b *Backend) incarnation(ctx context.Context, ns []byte) ([]byte, error) {
	sk := regSK(ns, 0)
	if v, ok := b.reg.lives.Load(string(sk)); ok && b.fresh(v.(cachedLife).at) {
		return v.(cachedLife).life, nil
	}
	key := map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: regPK},
		attrSK: &types.AttributeValueMemberB{Value: sk},
	}
	for range maxRetries {
		start := time.Now()
		out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, engineErr(err, strip)
		}
		if v, ok := out.Item["life"].(*types.AttributeValueMemberB); ok {
			b.reg.lives.Store(string(sk), cachedLife{life: v.Value, at: start})
			return v.Value, nil
		}
		life := newVersion().(*types.AttributeValueMemberB).Value
		_, err = b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &b.table, Key: key,
			UpdateExpression:          aws.String("SET #l = :l"),
			ConditionExpression:       aws.String("attribute_not_exists(#l)"),
			ExpressionAttributeNames:  map[string]string{"#l": "life"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":l": &types.AttributeValueMemberB{Value: life}},
		})
		if err == nil {
			b.reg.done.Store(string(sk), start)
			b.reg.lives.Store(string(sk), cachedLife{life: life, at: start})
			return life, nil
		}
		if !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return nil, engineErr(err, strip)
		}
	}
	return nil, apierr.New(apierr.Internal, "could not settle the namespace's incarnation")
}
