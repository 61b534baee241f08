package remote

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Storage metering on a fleet (DESIGN.md, "Storage"): what each tenant
// environment's tables hold, kept in the engine as counters per
// collection, so that any gateway reports the same figures.
//
//	pk = "stat#" hex(tenant prefix)   sk = namespace || big-endian table id
//	items, bytes, ibytes (N)          the collection's items, their size, its index entries' size
//	rc (N), counted (N, Unix ms)      recounts so far, and when the last one ran
//
// A tenant's counters are one item collection: its report is one Query.
// Every write whose old item the engine returns at no cost (PutItem,
// DeleteItem and UpdateItem with ReturnValues ALL_OLD, the gateway's
// computed updates and writes during a shard change) adds its exact size
// change to the gateway's pending deltas; each second the gateway adds
// them to the counters (ADD, in one transaction per tenant with a check
// that the tenant still exists). Writes the engine reports no old item for
// (BatchWriteItem, TransactWriteItems), the engine's TTL expiry and index
// backfills are corrected by a recount: a Query of the collection, sized
// item by item, whose difference to the counters read before it is added
// (so deltas flushed meanwhile are kept).
const statPrefix = "stat#"

const (
	attrItems   = "items"
	attrBytes   = "bytes"
	attrIBytes  = "ibytes"
	attrRC      = "rc"
	attrCounted = "counted"
)

// Defaults of the storage meter.
const (
	// StorageFlushInterval is how often a gateway adds its pending size
	// changes to the engine's counters.
	StorageFlushInterval = time.Second
	// RecountDelay is how long after a write with no old item (a batch or
	// a transaction) its collection is recounted by the gateway that made
	// it, and RecountEvery the least time between two recounts of one
	// collection by one gateway; RecountRate bounds it further for large
	// collections (a recount of B bytes waits at least B / RecountRate
	// seconds after the previous one).
	RecountDelay = 2 * time.Second
	RecountEvery = 30 * time.Second
	RecountRate  = 1 << 20 // bytes per second
	// RecountAge is the age at which a report finds a collection's
	// counters stale and recounts it (a killed gateway's last second of
	// deltas, the engine's TTL deletions).
	RecountAge = 6 * time.Hour
)

// collKey names one tenant environment's collection of one table.
type collKey struct {
	tenant string // hex tenant id (Options' tenant check)
	prefix string // resolve.TenantPrefix of the tenant
	ns     string
	table  uint64
}

// sizeDelta is a change of a collection's storage.
type sizeDelta struct{ items, bytes, ibytes int64 }

func (d *sizeDelta) add(o sizeDelta) {
	d.items += o.items
	d.bytes += o.bytes
	d.ibytes += o.ibytes
}

// storageMeter is a gateway's pending size changes and recounts.
type storageMeter struct {
	// alive returns a check that holds while the tenant (hex id) exists
	// (SetTenantCheck); nil: counters are written without it.
	alive atomic.Pointer[func(tenant string) *types.ConditionCheck]
	noTx  atomic.Bool
	// recounting is set while runRecounts runs.
	recounting atomic.Bool

	mu      sync.Mutex
	pending map[collKey]sizeDelta
	due     map[collKey]time.Time // collections to recount, and when
	// drift marks the collections due for writes with no old item (as
	// opposed to a report's finding them stale): only their recounts
	// wait for next.
	drift   map[collKey]bool
	next    map[collKey]time.Time // no recount for writes by this gateway before
	running map[collKey]bool

	flushMu sync.Mutex // one flush at a time
	every   time.Duration
	delay   time.Duration
	recount time.Duration // RecountEvery
	age     time.Duration
}

func newStorageMeter() *storageMeter {
	return &storageMeter{pending: map[collKey]sizeDelta{}, due: map[collKey]time.Time{}, drift: map[collKey]bool{}, next: map[collKey]time.Time{},
		running: map[collKey]bool{}, every: StorageFlushInterval, delay: RecountDelay, recount: RecountEvery, age: RecountAge}
}

// SetTenantCheck makes every write of storage counters conditional on
// alive(tenant) in the same engine transaction, so that a gateway that
// has not yet seen a tenant's deletion cannot bring its counters back
// (the node gives the tenant record's presence; as Capacity.Alive).
func (b *Backend) SetTenantCheck(alive func(tenant string) *types.ConditionCheck) {
	b.meter.alive.Store(&alive)
}

// statPK is the counters' collection of the tenant whose prefix is prefix.
func statPK(prefix []byte) string { return statPrefix + hex.EncodeToString(prefix) }

// keyOf returns the counters' key of tg's collection; ok is false for a
// target that holds no tenant's items (the operator, background work).
func keyOf(tg resolve.Target) (collKey, bool) {
	if tg.Namespace == nil || tg.Table == nil || !tg.Scope.Valid() || tg.Scope.Tenant().IsZero() {
		return collKey{}, false
	}
	return collKey{tenant: tg.Scope.Tenant().String(), prefix: string(resolve.TenantPrefix(tg.Scope)),
		ns: string(tg.Namespace), table: tg.Table.ID}, true
}

// sizes returns the size of logical item it of table t, and of its index
// entries, by DynamoDB's item size rule (attr.ItemSize), as DescribeTable
// counts them (stats.go).
func sizes(t *schema.Table, it attr.Item) (sizeDelta, bool) {
	if it == nil {
		return sizeDelta{}, false
	}
	d := sizeDelta{items: 1, bytes: int64(attr.ItemSize(it))}
	for _, ix := range t.Indexes {
		if !indexed(ix, it) {
			continue
		}
		proj := attr.Item{}
		for n, v := range it {
			if t.Projects(ix, n) {
				proj[n] = v
			}
		}
		d.ibytes += int64(attr.ItemSize(proj))
	}
	return d, true
}

// meterWrite notes that a write of p replaced logical item old (nil:
// none) by neu (nil: deleted).
func (b *Backend) meterWrite(p place, old, neu attr.Item) {
	k, ok := keyOf(p.tg)
	if !ok {
		return
	}
	n, _ := sizes(p.tg.Table, neu)
	o, _ := sizes(p.tg.Table, old)
	d := sizeDelta{n.items - o.items, n.bytes - o.bytes, n.ibytes - o.ibytes}
	if d == (sizeDelta{}) {
		return
	}
	m := b.meter
	m.mu.Lock()
	c := m.pending[k]
	c.add(d)
	m.pending[k] = c
	m.mu.Unlock()
}

// meterDrift notes writes to the collections of tgs whose old items the
// engine did not return: each is recounted RecountDelay later (at most
// once per RecountEvery for such writes).
//
// NB: a recount running now (its Query may have begun before these
// writes) does not clear the mark: the collection is recounted again
// after it; and a report's recount does not delay theirs.
func (b *Backend) meterDrift(tgs ...resolve.Target) {
	m := b.meter
	at := time.Now().Add(m.delay)
	m.mu.Lock()
	for _, tg := range tgs {
		if k, ok := keyOf(tg); ok {
			if _, marked := m.due[k]; !marked {
				m.due[k] = at
			}
			m.drift[k] = true
		}
	}
	m.mu.Unlock()
}

// meterLoop flushes the pending deltas every interval and runs the
// recounts that are due, until ctx ends.
func (b *Backend) meterLoop(ctx context.Context) {
	t := time.NewTicker(b.meter.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := b.flushStorage(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("remote: storage counters not flushed; kept for the next flush", "error", err)
		}
		if b.meter.recounting.CompareAndSwap(false, true) {
			go func() {
				defer b.meter.recounting.Store(false)
				b.runRecounts(ctx) // NB: not in the flush loop: a recount waits two flush intervals
			}()
		}
	}
}

// flushStorage adds the pending deltas to the engine's counters: one
// transaction per tenant (of up to 99 collections, with the tenant's
// check). Deltas that could not be written are kept for the next flush;
// those of a tenant that no longer exists are dropped.
func (b *Backend) flushStorage(ctx context.Context) error {
	m := b.meter
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	taken := m.pending
	m.pending = map[collKey]sizeDelta{}
	m.mu.Unlock()
	byTenant := map[string][]collKey{}
	for k := range taken {
		byTenant[k.tenant] = append(byTenant[k.tenant], k)
	}
	var first error
	for tenant, keys := range byTenant {
		for start := 0; start < len(keys); start += 99 {
			chunk := keys[start:min(start+99, len(keys))]
			ups := make([]*types.Update, len(chunk))
			for i, k := range chunk {
				ups[i] = b.addUpdate(k, taken[k], nil, time.Time{})
			}
			gone, err := b.writeStats(ctx, tenant, ups)
			if err == nil || gone {
				continue
			}
			if first == nil {
				first = err
			}
			m.mu.Lock()
			for _, k := range chunk {
				c := m.pending[k]
				c.add(taken[k])
				m.pending[k] = c
			}
			m.mu.Unlock()
		}
	}
	return first
}

// statKey is the engine key of k's counters.
func statKey(k collKey) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: statPK([]byte(k.prefix))},
		attrSK: &types.AttributeValueMemberB{Value: binary.BigEndian.AppendUint64([]byte(k.ns), k.table)},
	}
}

// addUpdate is the update adding d to k's counters; with rc (a recount
// whose Query began at at) it also counts the recount, on condition that
// none ran since the one numbered *rc.
func (b *Backend) addUpdate(k collKey, d sizeDelta, rc *int64, at time.Time) *types.Update {
	u := &types.Update{TableName: &b.table, Key: statKey(k),
		UpdateExpression:         aws.String("ADD #i :i, #b :b, #x :x"),
		ExpressionAttributeNames: map[string]string{"#i": attrItems, "#b": attrBytes, "#x": attrIBytes},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":i": num64(d.items), ":b": num64(d.bytes), ":x": num64(d.ibytes)},
	}
	if rc != nil {
		*u.UpdateExpression += ", #rc :one SET #c = :now"
		u.ExpressionAttributeNames["#rc"] = attrRC
		u.ExpressionAttributeNames["#c"] = attrCounted
		u.ExpressionAttributeValues[":one"] = num64(1)
		u.ExpressionAttributeValues[":now"] = num64(at.UnixMilli())
		if *rc == 0 {
			u.ConditionExpression = aws.String("attribute_not_exists(#rc)")
		} else {
			u.ConditionExpression = aws.String("#rc = :rc")
			u.ExpressionAttributeValues[":rc"] = num64(*rc)
		}
	}
	return u
}

// errRecountRaced: another recount of the collection ran meanwhile.
var errRecountRaced = errors.New("remote: another recount of the collection ran meanwhile")

// writeStats applies ups (counters of tenant's collections) in one
// transaction with the tenant's check; gone reports that the tenant no
// longer exists. Without transactions (dynalite) each is one UpdateItem
// without the check.
func (b *Backend) writeStats(ctx context.Context, tenant string, ups []*types.Update) (gone bool, err error) {
	m := b.meter
	if !m.noTx.Load() {
		acts := make([]types.TransactWriteItem, 0, len(ups)+1)
		for _, u := range ups {
			acts = append(acts, types.TransactWriteItem{Update: u})
		}
		if alive := m.alive.Load(); alive != nil && *alive != nil {
			acts = append(acts, types.TransactWriteItem{ConditionCheck: (*alive)(tenant)})
		}
		var tok [16]byte
		rand.Read(tok[:])
		// NB: the token makes the SDK's retry of a flush whose answer was
		// lost count once.
		_, err := b.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: acts,
			ClientRequestToken: aws.String(hex.EncodeToString(tok[:]))})
		var tce *types.TransactionCanceledException
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &tce):
			for i, r := range tce.CancellationReasons {
				if aws.ToString(r.Code) != "ConditionalCheckFailed" {
					continue
				}
				if i == len(ups) {
					return true, nil
				}
				return false, errRecountRaced
			}
			return false, engineErr(err, strip)
		case unknownOperation(err):
			m.noTx.Store(true)
		default:
			return false, engineErr(err, strip)
		}
	}
	for _, u := range ups {
		_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key,
			UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return false, errRecountRaced
		}
		if err != nil {
			return false, engineErr(err, strip)
		}
	}
	return false, nil
}

// runRecounts recounts the collections whose recount is due, one at a
// time, in the background context.
func (b *Backend) runRecounts(ctx context.Context) {
	m := b.meter
	now := time.Now()
	var keys []collKey
	m.mu.Lock()
	for k, at := range m.next {
		if now.After(at) {
			delete(m.next, k) // NB: bounds the map by the collections recounted recently
		}
	}
	drift := map[collKey]bool{}
	for k, at := range m.due {
		if now.Before(at) || m.running[k] || (m.drift[k] && now.Before(m.next[k])) {
			continue
		}
		delete(m.due, k)
		drift[k] = m.drift[k]
		delete(m.drift, k)
		m.running[k] = true
		keys = append(keys, k)
	}
	m.mu.Unlock()
	sem := make(chan struct{}, recountParallel)
	var wg sync.WaitGroup
	for _, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			b.recountDue(ctx, k, drift[k])
		}()
	}
	wg.Wait()
}

// recountParallel bounds the recounts a gateway runs at once.
const recountParallel = 8

// recountDue recounts k (for writes with no old item if drift, else for
// a report) and sets when it may be recounted again: a recount for
// writes, RecountEvery (or its bytes / RecountRate) later; a failed one
// is retried after that wait, for writes or not. A report's recount sets
// no wait: what makes a report find the collection stale again is its
// counters' age (RecountAge), kept in the engine.
func (b *Backend) recountDue(ctx context.Context, k collKey, drift bool) {
	m := b.meter
	bytes, err := b.recount(ctx, k)
	m.mu.Lock()
	delete(m.running, k)
	wait := m.recount
	if d := time.Duration(bytes / RecountRate * int64(time.Second)); d > wait {
		wait = d
	}
	if drift {
		m.next[k] = time.Now().Add(wait)
	}
	if err != nil && ctx.Err() == nil {
		if at, marked := m.due[k]; !marked || at.Before(time.Now().Add(wait)) {
			m.due[k] = time.Now().Add(wait) // tried again after the wait
		}
		if drift {
			m.drift[k] = true
		}
	}
	m.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		b.log.Warn("remote: storage recount failed; retried later", "error", err)
	}
}

// recount reads collection k item by item (strongly consistent) and
// corrects its counters: it waits until every gateway has flushed the
// deltas of the writes acknowledged before its Query began (two flush
// intervals), reads the counters, and adds the difference between what it
// counted and them, together with the recount mark (so two recounts never
// both correct from one read; deltas flushed after the read are kept by
// the ADD). Raced by another recount, it reads again and corrects from
// its count unless the other's Query began no earlier. It returns the
// bytes counted.
//
// NB: exact when no write of the collection is acknowledged from the
// Query's start to the counters' read; otherwise the error it leaves is
// at most the size changes of those writes (a write the Query saw whose
// delta came after the read counts twice; one it missed whose delta came
// before, not at all), plus the deltas of a gateway stalled longer.
func (b *Backend) recount(ctx context.Context, k collKey) (int64, error) {
	start := time.Now()
	t, err := b.res.TableByID(ctx, k.table, []byte(k.ns))
	if err != nil {
		return 0, err
	}
	if t == nil {
		return 0, nil // dropped: its counters are no longer reported
	}
	lay, err := b.layoutOf(ctx, []byte(k.ns), k.table)
	if err != nil {
		return 0, err
	}
	p := placeOf(resolve.Background(t, []byte(k.ns)), lay)
	began := time.Now()
	var counted sizeDelta
	for _, pk := range p.shardPKs() {
		in := b.partitionQuery(pk)
		for {
			out, err := b.db.Query(ctx, in)
			if err != nil {
				return 0, engineErr(err, strip)
			}
			for _, raw := range out.Items {
				if d, ok := sizes(t, strip(raw)); ok {
					counted.add(d)
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	if d := time.Until(start.Add(2 * b.meter.every)); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return 0, ctx.Err()
		}
	}
	for range recountRounds {
		got, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: statKey(k), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return 0, engineErr(err, strip)
		}
		if rc := counterOf(got.Item, attrRC); rc > 0 && counterOf(got.Item, attrCounted) >= began.UnixMilli() {
			// NB: a recount whose Query began no earlier than this one's
			// corrected the counters: it saw every write this one saw.
			return counted.bytes, nil
		}
		before := sizeDelta{counterOf(got.Item, attrItems), counterOf(got.Item, attrBytes), counterOf(got.Item, attrIBytes)}
		rc := counterOf(got.Item, attrRC)
		fix := sizeDelta{counted.items - before.items, counted.bytes - before.bytes, counted.ibytes - before.ibytes}
		_, err = b.writeStats(ctx, k.tenant, []*types.Update{b.addUpdate(k, fix, &rc, began)})
		if !errors.Is(err, errRecountRaced) {
			return counted.bytes, err
		}
		// NB: another recount wrote since the read. If its Query began
		// before this one's, it may have missed writes this one saw (a
		// batch acknowledged between the two): read the counters again
		// and correct them from this count, rather than drop it.
	}
	return counted.bytes, errRecountRaced
}

// recountRounds bounds the reads and corrections of one recount that
// other recounts keep racing.
const recountRounds = 3

// counterOf reads counter name of an engine item (0 if absent).
func counterOf(it map[string]types.AttributeValue, name string) int64 {
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}

// CollectionStorage is what one table holds in one environment
// (Namespace) of a tenant.
type CollectionStorage struct {
	Namespace []byte
	Table     string
	// Items and Bytes are the table's items and their size (DynamoDB's
	// item size); IndexBytes the size of its index entries.
	Items, Bytes, IndexBytes int64
}

// TenantStorage reports the storage of scope s's tenant, per environment
// and table, from the engine's counters (one strongly consistent Query
// of the tenant's counters) plus this gateway's pending deltas, in
// (namespace, table) order. Tables dropped are not reported. A
// collection whose last recount is older than RecountAge (or that never
// had one) is recounted in the background.
func (b *Backend) TenantStorage(ctx context.Context, s tenancy.Scope) ([]CollectionStorage, error) {
	if !s.Valid() || s.Tenant().IsZero() {
		return nil, apierr.New(apierr.Validation, "no tenant to report storage for")
	}
	prefix := resolve.TenantPrefix(s)
	tenant := s.Tenant().String()
	m := b.meter
	found := map[collKey]sizeDelta{}
	in := b.partitionQuery(statPK(prefix))
	var stale []collKey
	for {
		out, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range out.Items {
			sk, ok := it[attrSK].(*types.AttributeValueMemberB)
			if !ok || len(sk.Value) <= 8 {
				continue
			}
			k := collKey{tenant: tenant, prefix: string(prefix), ns: string(sk.Value[:len(sk.Value)-8]),
				table: binary.BigEndian.Uint64(sk.Value[len(sk.Value)-8:])}
			found[k] = sizeDelta{counterOf(it, attrItems), counterOf(it, attrBytes), counterOf(it, attrIBytes)}
			if counted := counterOf(it, attrCounted); time.Since(time.UnixMilli(counted)) > m.age {
				stale = append(stale, k)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	// NB: collections written before any counter was kept (or only by
	// batches whose recount has not run yet) have none: recounted.
	colls, err := b.tenantColls(ctx, s)
	if err != nil {
		return nil, err
	}
	for _, k := range colls {
		if _, ok := found[k]; !ok {
			stale = append(stale, k)
		}
	}
	m.mu.Lock()
	for k, d := range m.pending {
		if k.prefix == string(prefix) {
			c := found[k]
			c.add(d)
			found[k] = c
		}
	}
	now := time.Now()
	for _, k := range stale {
		if _, marked := m.due[k]; !marked {
			m.due[k] = now
		}
	}
	m.mu.Unlock()
	res := make([]CollectionStorage, 0, len(found))
	for k, d := range found {
		t, err := b.res.TableByID(ctx, k.table, []byte(k.ns))
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue // dropped
		}
		res = append(res, CollectionStorage{Namespace: []byte(k.ns), Table: t.Name,
			Items: max(d.items, 0), Bytes: max(d.bytes, 0), IndexBytes: max(d.ibytes, 0)})
	}
	sort.Slice(res, func(i, j int) bool {
		if a, b := string(res[i].Namespace), string(res[j].Namespace); a != b {
			return a < b
		}
		return res[i].Table < res[j].Table
	})
	return res, nil
}

// tenantColls lists the collections of scope s's tenant, in every
// environment, from the registry (one Query).
func (b *Backend) tenantColls(ctx context.Context, s tenancy.Scope) ([]collKey, error) {
	prefix := resolve.TenantPrefix(s)
	in := &dynamodb.QueryInput{
		TableName:                &b.table,
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :s)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK, "#s": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: regPK},
			":s": &types.AttributeValueMemberB{Value: prefix},
		},
		ProjectionExpression: aws.String("#s"),
		ConsistentRead:       aws.Bool(true),
	}
	var keys []collKey
	for {
		out, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range out.Items {
			sk, ok := it[attrSK].(*types.AttributeValueMemberB)
			if !ok || len(sk.Value) <= 8 {
				continue
			}
			if id := binary.BigEndian.Uint64(sk.Value[len(sk.Value)-8:]); id != 0 {
				keys = append(keys, collKey{tenant: s.Tenant().String(), prefix: string(prefix), ns: string(sk.Value[:len(sk.Value)-8]), table: id})
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// dropStorage deletes the counters of the tenant whose prefix is prefix
// and this gateway's pending deltas of it (DropTenant, SweepTenant).
func (b *Backend) dropStorage(ctx context.Context, prefix []byte) error {
	m := b.meter
	m.mu.Lock()
	for k := range m.pending {
		if k.prefix == string(prefix) {
			delete(m.pending, k)
		}
	}
	for k := range m.due {
		if k.prefix == string(prefix) {
			delete(m.due, k)
			delete(m.drift, k)
		}
	}
	m.mu.Unlock()
	return b.deleteCollection(ctx, statPK(prefix))
}

// returned is what a PutItem or DeleteItem answers for ReturnValues rv
// given the old item the engine returned (the gateway always asks for
// it, for metering).
func returned(rv string, old attr.Item) attr.Item {
	if rv != "ALL_OLD" || len(old) == 0 {
		return nil
	}
	return old
}

// meterUpdate meters an UpdateItem the engine applied to old (nil: it
// created the item; the gateway asks for ALL_OLD, at no extra capacity)
// and returns the attributes the client asked for: the new item is the
// client's update applied to old by the gateway (internal/expr, as the
// embedded engine and the gateway's computed updates do); the engine
// applied the same expression to the same item atomically.
func (b *Backend) meterUpdate(ctx context.Context, p place, key map[string]types.AttributeValue, in *wire.UpdateItemInput, old attr.Item) (attr.Item, error) {
	var paths []expr.Path
	mu, err := updateMutation(in, &paths)
	var neu attr.Item
	if err == nil {
		neu, err = mu.compute(old)
	}
	if err == nil && neu == nil {
		err = errors.New("the update left no item")
	}
	if err != nil {
		// NB: never expected (the engine applied the expression the
		// gateway validated): the collection is recounted, and the new
		// values are read back, not atomically with the write.
		b.log.Warn("remote: could not compute an update the engine applied; its collection is recounted", "error", err)
		b.meterDrift(p.tg)
		if in.ReturnValues == "" || in.ReturnValues == "NONE" || in.ReturnValues == "ALL_OLD" || in.ReturnValues == "UPDATED_OLD" {
			neu = nil
		} else {
			got, gerr := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
			if gerr != nil {
				return nil, engineErr(gerr, strip)
			}
			neu = strip(got.Item)
		}
		if u, perr := expr.NewParams(in.ExpressionAttributeNames, in.ExpressionAttributeValues).Update(aws.ToString(in.UpdateExpression)); perr == nil {
			paths = u.Paths()
		}
	} else {
		b.meterWrite(p, old, neu)
	}
	var out attr.Item
	switch in.ReturnValues {
	case "ALL_OLD":
		out = old
	case "ALL_NEW":
		out = neu
	case "UPDATED_OLD":
		out = expr.ProjectPaths(old, paths)
	case "UPDATED_NEW":
		out = expr.ProjectPaths(neu, paths)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
