package remote

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The copies of backups and restores are jobs that any gateway finishes
// (see DESIGN.md, "Backups"). The request that starts one runs it; its
// state (position, counts) is in the registry entry of the collection it
// fills, saved after every page together with a lease: the entry's
// "own" (the runner's random token) and "beat" (the time of its last
// page). Every save is conditioned on "own" being the runner's, so at
// most one runner advances a job. A marker item
//
//	pk = meta#bkjob   sk = kind || ns || collection id
//
// written before the entry and deleted when the job ends lets every
// gateway find unfinished jobs with one small Query every backupPoll; a
// job whose beat is older than backupLease (its gateway ended, was
// killed or lost the engine; a gateway that stops releases its lease at
// once) is claimed by a conditional update of the lease and resumed from
// the saved position. Copies are idempotent (an item is put at the same
// key again), so a page copied by a runner that lost its lease is only
// copied twice.

// markerPK is the collection of job markers.
const markerPK = "meta#bkjob"

// Job kinds.
const (
	jobBackup  byte = 'b'
	jobRestore byte = 'r'
)

// backupLease is how long a job's runner may go without saving progress
// before another gateway takes the job over; backupPoll is how often a
// gateway looks for such jobs.
const (
	backupLease = 10 * time.Second
	backupPoll  = 5 * time.Second
	copyPage    = 100 // items read per page of a copy
)

// errJobGone: the job's entry is gone (the tenant was deleted) or was
// taken over by another runner.
var errJobGone = errors.New("remote: backup job taken over or gone")

// bkJob is one copy job.
type bkJob struct {
	kind byte
	ns   []byte
	id   uint64 // the collection filled: a backup's bid, a restored table's id
	me   []byte // the runner's lease token
	// meter, when set, is told of the units the copy consumes as it goes
	// (a point-in-time restore answered before its end, pitr.go).
	meter *jobMeter
}

// jobMeter adds up a running copy's engine units.
type jobMeter struct {
	mu          sync.Mutex
	read, write float64
}

func (j *bkJob) spend(read, write float64) {
	if m := j.meter; m != nil {
		m.mu.Lock()
		m.read, m.write = m.read+read, m.write+write
		m.mu.Unlock()
	}
}

// take returns the units added up so far and starts again from zero.
func (m *jobMeter) take() (read, write float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	read, write, m.read, m.write = m.read, m.write, 0, 0
	return read, write
}

// backupJobs are the jobs this gateway runs (so that its poller does not
// claim them again).
type backupJobs struct{ running sync.Map }

func newJob(kind byte, ns []byte, id uint64) *bkJob {
	j := &bkJob{kind: kind, ns: ns, id: id, me: make([]byte, 8)}
	_, _ = rand.Read(j.me)
	return j
}

func (j *bkJob) markerSK() []byte {
	return binary.BigEndian.AppendUint64(append([]byte{j.kind}, j.ns...), j.id)
}

func (j *bkJob) entryKey() map[string]types.AttributeValue { return regKey(regSK(j.ns, j.id)) }

// putMarker writes j's marker, with extra attributes (a restore's
// source backup and table name, for its clean-up if its entry is gone).
func (b *Backend) putMarker(ctx context.Context, j *bkJob, extra map[string]types.AttributeValue) error {
	item := map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: markerPK},
		attrSK: &types.AttributeValueMemberB{Value: j.markerSK()},
		"at":   num64(time.Now().UnixMilli()),
	}
	for k, v := range extra {
		item[k] = v
	}
	_, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: item})
	return engineErr(err, strip)
}

func (b *Backend) dropMarker(ctx context.Context, j *bkJob) error {
	_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: markerPK},
		attrSK: &types.AttributeValueMemberB{Value: j.markerSK()},
	}})
	return engineErr(err, strip)
}

// jobSave applies upd (SET and REMOVE clauses, after the lease's SET) to
// j's entry, on condition that j still holds the lease; errJobGone if
// not.
func (b *Backend) jobSave(ctx context.Context, j *bkJob, set, remove string, names map[string]string, values map[string]types.AttributeValue) error {
	if names == nil {
		names = map[string]string{}
	}
	if values == nil {
		values = map[string]types.AttributeValue{}
	}
	names["#own"], names["#beat"] = jobOwner, jobBeat
	values[":me"] = &types.AttributeValueMemberB{Value: j.me}
	// NB: a save that ends the job removes the lease (#own, #beat).
	var clauses []string
	if !strings.Contains(remove, "#beat") {
		values[":now"] = num64(time.Now().UnixMilli())
		clauses = append(clauses, "#beat = :now")
	}
	if set != "" {
		clauses = append(clauses, set)
	}
	upd := ""
	if len(clauses) > 0 {
		upd = "SET " + strings.Join(clauses, ", ")
	}
	if remove != "" {
		upd += " REMOVE " + remove
	}
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: j.entryKey(),
		UpdateExpression: &upd, ConditionExpression: aws.String("#own = :me"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return errJobGone
		}
		return engineErr(err, strip)
	}
	return nil
}

// release gives up j's lease at once (its runner stops), so that another
// gateway resumes the job without waiting for the lease to age.
func (b *Backend) release(ctx context.Context, j *bkJob) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: j.entryKey(),
		UpdateExpression:          aws.String("SET #beat = :z"),
		ConditionExpression:       aws.String("#own = :me"),
		ExpressionAttributeNames:  map[string]string{"#own": jobOwner, "#beat": jobBeat},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": &types.AttributeValueMemberB{Value: j.me}, ":z": num(0)},
	})
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		b.log.Warn("releasing a backup job", "err", err)
	}
}

// cleanUpGone ends job j that found itself no longer the holder of its
// entry: if the entry is gone (its tenant was deleted meanwhile), what
// the job wrote and its marker are deleted (abandonJob), or else another
// runner has it.
func (b *Backend) cleanUpGone(ctx context.Context, j *bkJob, mk map[string]types.AttributeValue) {
	ctx = context.WithoutCancel(ctx)
	it, err := b.readEntry(ctx, j)
	if err == nil && it == nil {
		err = b.abandonJob(ctx, j, mk, nil)
	}
	if err != nil {
		b.log.Warn("cleaning up after a backup job", "err", err)
	}
}

// shardOrder is the order in which a backup reads p's shards: during a
// change of shard count the shards items leave first, so that an item
// that moves meanwhile is read at least once (2 bytes per shard).
func shardOrder(p place) []byte {
	src := p.sources()
	var first, rest []byte
	for i := range max(p.lay.n, p.lay.from) {
		if src[p.part(i)] {
			first = binary.BigEndian.AppendUint16(first, uint16(i))
		} else {
			rest = binary.BigEndian.AppendUint16(rest, uint16(i))
		}
	}
	return append(first, rest...)
}

// layKey identifies a layout's shards (a change of it restarts a backup).
func layKey(l layout) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, uint16(l.n)), uint16(l.from))
}

// readEntry reads j's entry (nil: gone).
func (b *Backend) readEntry(ctx context.Context, j *bkJob) (map[string]types.AttributeValue, error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: j.entryKey(), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	return out.Item, nil
}

// copyUsage adds the engine's consumed capacity to u.
func addUnits(u *float64, cc []types.ConsumedCapacity) {
	for _, c := range cc {
		*u += aws.ToFloat64(c.CapacityUnits)
	}
}

// putAll writes items with BatchWriteItem, 25 at a time, until the
// engine has processed them all; it returns the write units consumed.
func (b *Backend) putAll(ctx context.Context, items []map[string]types.AttributeValue) (float64, error) {
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return b.writeAll(ctx, reqs)
}

// writeAll is putAll of any write requests (puts and deletes).
func (b *Backend) writeAll(ctx context.Context, all []types.WriteRequest) (float64, error) {
	var units float64
	for start := 0; start < len(all); start += 25 {
		reqs := all[start:min(start+25, len(all))]
		backoff := 20 * time.Millisecond
		for len(reqs) > 0 {
			res, err := b.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{b.table: reqs},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				return units, engineErr(err, strip)
			}
			addUnits(&units, res.ConsumedCapacity)
			reqs = res.UnprocessedItems[b.table]
			if len(reqs) > 0 {
				if err := sleep(ctx, backoff); err != nil {
					return units, err
				}
				backoff = min(2*backoff, time.Second)
			}
		}
	}
	return units, nil
}

// readPage reads up to copyPage items of partition pk after sort key
// after (nil: from its start), strongly consistent; last is the sort key
// to resume after (nil: the partition is done).
func (b *Backend) readPage(ctx context.Context, pk string, after []byte, units *float64) (items []map[string]types.AttributeValue, last []byte, err error) {
	return b.readPageOf(ctx, b.table, pk, after, units)
}

// readPageOf is readPage of engine table table.
func (b *Backend) readPageOf(ctx context.Context, table, pk string, after []byte, units *float64) (items []map[string]types.AttributeValue, last []byte, err error) {
	return b.readPageN(ctx, table, pk, after, copyPage, units)
}

// readPageN is readPageOf with a page of at most limit items (0: as many
// as one engine page holds, 1 MB).
func (b *Backend) readPageN(ctx context.Context, table, pk string, after []byte, limit int32, units *float64) (items []map[string]types.AttributeValue, last []byte, err error) {
	in := b.partitionQuery(pk)
	in.TableName = &table
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	if after != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{attrPK: in.ExpressionAttributeValues[":p"], attrSK: &types.AttributeValueMemberB{Value: after}}
	}
	res, err := b.db.Query(ctx, in)
	if err != nil {
		return nil, nil, engineErr(err, strip)
	}
	if res.ConsumedCapacity != nil {
		*units += aws.ToFloat64(res.ConsumedCapacity.CapacityUnits)
	}
	if s, ok := res.LastEvaluatedKey[attrSK].(*types.AttributeValueMemberB); ok {
		last = s.Value
	}
	return res.Items, last, nil
}

// backupState is a backup copy's saved state.
type backupState struct {
	table       *schema.Table
	order, lay  []byte
	pos         int
	last        []byte
	items, size int64
}

func backupStateFrom(it map[string]types.AttributeValue) (*backupState, error) {
	d, _ := it[bkDef].(*types.AttributeValueMemberB)
	o, _ := it[bkOrder].(*types.AttributeValueMemberB)
	l, _ := it[bkLay].(*types.AttributeValueMemberB)
	if d == nil || o == nil || l == nil {
		return nil, apierr.New(apierr.Internal, "corrupt backup job in the engine")
	}
	t, err := schema.Decode(d.Value)
	if err != nil {
		return nil, err
	}
	st := &backupState{table: t, order: o.Value, lay: l.Value, pos: int(num64Attr(it, bkPos)), items: num64Attr(it, bkItems), size: num64Attr(it, bkBytes)}
	if v, ok := it[bkLast].(*types.AttributeValueMemberB); ok {
		st.last = v.Value
	}
	return st, nil
}

// runBackupCopy runs backup job j (whose lease it holds) to its end: the
// source collection's items, shard by shard, into the backup's
// collection, then AVAILABLE. It returns the engine units it consumed.
// On an error its lease is released (another gateway resumes the job).
func (b *Backend) runBackupCopy(ctx context.Context, j *bkJob) (u wire.Usage, err error) {
	b.bk.running.Store(string(j.markerSK()), true)
	defer b.bk.running.Delete(string(j.markerSK()))
	defer func() {
		switch {
		case errors.Is(err, errJobGone):
			b.cleanUpGone(ctx, j, nil)
		case err != nil:
			b.release(ctx, j)
		}
	}()
	it, err := b.readEntry(ctx, j)
	if err != nil {
		return u, err
	}
	if it == nil {
		return u, errJobGone
	}
	st, err := backupStateFrom(it)
	if err != nil {
		return u, err
	}
	dst := backupPK(j.ns, j.id)
	t := st.table
	for {
		lay, err := b.layoutOf(ctx, j.ns, t.ID)
		if err != nil {
			return u, err
		}
		src := place{tg: resolve.Background(t, j.ns), base: collBase(j.ns, t.ID), lay: lay}
		if string(layKey(lay)) != string(st.lay) {
			// NB: the shard count changed since the copy began: items may
			// have moved into shards already read. Start again.
			if err := b.deleteCollection(ctx, dst); err != nil {
				return u, err
			}
			st.order, st.lay, st.pos, st.last, st.items, st.size = shardOrder(src), layKey(lay), 0, nil, 0, 0
			if err := b.jobSave(ctx, j, "#o = :o, #l = :l, #pos = :z, #n = :z, #sz = :z", "#last",
				map[string]string{"#o": bkOrder, "#l": bkLay, "#pos": bkPos, "#n": bkItems, "#sz": bkBytes, "#last": bkLast},
				map[string]types.AttributeValue{":o": &types.AttributeValueMemberB{Value: st.order}, ":l": &types.AttributeValueMemberB{Value: st.lay}, ":z": num(0)}); err != nil {
				return u, err
			}
			continue
		}
		if st.pos >= len(st.order)/2 {
			return u, b.finishBackup(ctx, j, st, lay)
		}
		shard := int(binary.BigEndian.Uint16(st.order[2*st.pos:]))
		raws, last, err := b.readPage(ctx, src.part(shard), st.last, &u.ReadUnits)
		if err != nil {
			return u, err
		}
		puts := make([]map[string]types.AttributeValue, 0, len(raws))
		for _, raw := range raws {
			sk := raw[attrSK]
			item := strip(raw)
			if item == nil {
				continue
			}
			m := toItem(item)
			m[attrPK], m[attrSK] = &types.AttributeValueMemberS{Value: dst}, sk
			puts = append(puts, m)
			st.items++
			st.size += int64(attr.ItemSize(item))
		}
		w, err := b.putAll(ctx, puts)
		u.WriteUnits += w
		if err != nil {
			return u, err
		}
		if last == nil {
			st.pos, st.last = st.pos+1, nil
		} else {
			st.last = last
		}
		set := "#pos = :pos, #n = :n, #sz = :sz"
		names := map[string]string{"#pos": bkPos, "#n": bkItems, "#sz": bkBytes, "#last": bkLast}
		values := map[string]types.AttributeValue{":pos": num(st.pos), ":n": num64(st.items), ":sz": num64(st.size)}
		remove := ""
		if st.last != nil {
			set += ", #last = :last"
			values[":last"] = &types.AttributeValueMemberB{Value: st.last}
		} else {
			remove = "#last"
		}
		if err := b.jobSave(ctx, j, set, remove, names, values); err != nil {
			return u, err
		}
	}
}

// finishBackup marks backup j AVAILABLE and ends the job. A copy made
// during a change of shard count may have read an item twice (into one
// backup item): its counts are taken from the backup itself then.
func (b *Backend) finishBackup(ctx context.Context, j *bkJob, st *backupState, lay layout) error {
	if lay.moving() {
		var n, size int64
		var after []byte
		var units float64
		for {
			raws, last, err := b.readPage(ctx, backupPK(j.ns, j.id), after, &units)
			if err != nil {
				return err
			}
			for _, raw := range raws {
				if item := strip(raw); item != nil {
					n++
					size += int64(attr.ItemSize(item))
				}
			}
			if last == nil {
				break
			}
			after = last
		}
		st.items, st.size = n, size
	}
	err := b.jobSave(ctx, j, "#st = :av, #n = :n, #sz = :sz", "#o, #l, #pos, #last, #own, #beat",
		map[string]string{"#st": bkStatus, "#n": bkItems, "#sz": bkBytes, "#o": bkOrder, "#l": bkLay, "#pos": bkPos, "#last": bkLast},
		map[string]types.AttributeValue{":av": &types.AttributeValueMemberS{Value: stAvailable}, ":n": num64(st.items), ":sz": num64(st.size)})
	if err != nil {
		return err
	}
	b.log.Info("backup copied", "items", st.items, "bytes", st.size)
	return b.dropMarker(ctx, j)
}

// resumeBackupJobs looks for unfinished backup and restore copies every
// backupPoll and resumes those whose runner's lease has expired: run by
// Open in the background until Close.
func (b *Backend) resumeBackupJobs(ctx context.Context) {
	for {
		if err := b.pollBackupJobs(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("looking for backup jobs to resume", "err", err)
		}
		if sleep(ctx, backupPoll) != nil {
			return
		}
	}
}

// pollBackupJobs resumes (in the background) or cleans up each job with
// a marker that no runner holds.
func (b *Backend) pollBackupJobs(ctx context.Context) error {
	in := b.partitionQuery(markerPK)
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return engineErr(err, strip)
		}
		for _, mk := range res.Items {
			sk, ok := mk[attrSK].(*types.AttributeValueMemberB)
			if !ok || len(sk.Value) < 9 {
				continue
			}
			if sk.Value[0] == jobRewind {
				continue // tenant restores' (rewind.go: PendingRewinds)
			}
			j := newJob(sk.Value[0], sk.Value[1:len(sk.Value)-8], binary.BigEndian.Uint64(sk.Value[len(sk.Value)-8:]))
			if _, mine := b.bk.running.Load(string(j.markerSK())); mine {
				continue
			}
			if err := b.tryResume(ctx, j, mk); err != nil && ctx.Err() == nil {
				b.log.Warn("resuming a backup job", "kind", string(j.kind), "err", err)
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// tryResume claims job j (its marker mk) if its lease expired, and runs
// it in the background; a job whose entry is gone (its tenant deleted, or
// its request failed before the entry) is cleaned up.
func (b *Backend) tryResume(ctx context.Context, j *bkJob, mk map[string]types.AttributeValue) error {
	markedAt := time.UnixMilli(num64Attr(mk, "at"))
	it, err := b.readEntry(ctx, j)
	if err != nil {
		return err
	}
	_, owned := it[jobOwner]
	if it == nil || !owned {
		if it == nil && time.Since(markedAt) < backupLease {
			return nil // its entry may be about to be written
		}
		// Gone, or finished but for its marker.
		return b.abandonJob(ctx, j, mk, it)
	}
	beat := num64Attr(it, jobBeat)
	if beat != 0 && time.Since(time.UnixMilli(beat)) < backupLease {
		return nil // its runner is alive
	}
	_, err = b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: j.entryKey(),
		UpdateExpression:          aws.String("SET #own = :me, #beat = :now"),
		ConditionExpression:       aws.String("#own = :old AND #beat = :beat"),
		ExpressionAttributeNames:  map[string]string{"#own": jobOwner, "#beat": jobBeat},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": &types.AttributeValueMemberB{Value: j.me}, ":now": num64(time.Now().UnixMilli()), ":old": it[jobOwner], ":beat": it[jobBeat]},
	})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return nil // another gateway claimed it first
		}
		return engineErr(err, strip)
	}
	b.log.Info("resuming a backup job", "kind", string(j.kind), "collection", j.id)
	if src, name, ok := rsSourceOf(it); ok && j.kind == jobRestore && src.scratch != "" {
		b.pitrEvent(j, src, name, "resumed", num64Attr(it, rsItems), "")
	}
	go func() {
		var err error
		if j.kind == jobBackup {
			_, err = b.runBackupCopy(b.bg, j)
		} else {
			_, _, err = b.runRestoreCopy(b.bg, j)
		}
		if err != nil && b.bg.Err() == nil {
			b.log.Warn("resumed backup job", "kind", string(j.kind), "err", err)
		}
	}()
	return nil
}

// abandonJob ends job j (its marker mk) whose entry it (nil: gone) no
// runner holds: a backup's copy whose entry is gone is deleted; a
// restore whose entry is gone is dropped (backuprestore.go); then the
// marker.
func (b *Backend) abandonJob(ctx context.Context, j *bkJob, mk, it map[string]types.AttributeValue) error {
	if it == nil {
		switch j.kind {
		case jobBackup:
			if err := b.deleteCollection(ctx, backupPK(j.ns, j.id)); err != nil {
				return err
			}
		case jobRestore:
			if src, name, ok := rsSourceOf(mk); ok {
				if err := b.dropRestore(ctx, j, src, name, false); err != nil {
					return err
				}
			}
		}
	}
	return b.dropMarker(ctx, j)
}
