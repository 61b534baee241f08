package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TTL expiry (see DESIGN.md, "TTL"). The engine's own TTL is enabled once,
// on the engine table, on the gateway's attribute tenantdb:ttl. Every
// write of an item of a logical table whose TTL is enabled copies the
// item's TTL attribute into tenantdb:ttl when it is a number (physItem;
// UpdateItem mirrors the client's action on it, expr.MirrorTop), so the
// engine deletes the item when the logical attribute says, and a table
// without TTL — or another tenant's table that uses the same attribute
// name — never has the copy. Turning a table's TTL on or off syncs the
// copy of its existing items (a job, below); DescribeTimeToLive reports
// ENABLING or DISABLING until the job is done.

// attrTTL is the engine table's TTL attribute.
const attrTTL = "tenantdb:ttl"

// ttlJobPK is the collection of TTL sync jobs, one per logical table
// (sort key: the table id, %020d).
const ttlJobPK = "meta#ttl"

// ttlJobPage bounds the items one page of a sync job reads.
const ttlJobPage = 100

// ensureTTL enables the engine's TTL on attrTTL if it is not yet, and
// records why expiry is unavailable if the engine cannot (dynalite has no
// UpdateTimeToLive) or its table's TTL is on another attribute.
func (b *Backend) ensureTTL(ctx context.Context) {
	on, why := b.engineTTL(ctx)
	if !on {
		b.ttlOff = why
		b.log.Warn("TTL expiry is not available on this engine", "reason", why)
	}
}

func (b *Backend) engineTTL(ctx context.Context) (bool, string) {
	for attempt := 0; ; attempt++ {
		out, err := b.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &b.table})
		if err != nil {
			return false, "the engine does not answer DescribeTimeToLive: " + err.Error()
		}
		d := out.TimeToLiveDescription
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if a := aws.ToString(d.AttributeName); a != attrTTL {
				return false, fmt.Sprintf("the engine table's TTL is on attribute %q, not %q", a, attrTTL)
			}
			return true, ""
		case types.TimeToLiveStatusDisabling:
			return false, "the engine table's TTL is being disabled"
		}
		if attempt > 0 {
			return false, "the engine table's TTL stays disabled"
		}
		_, err = b.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &b.table,
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true)}})
		if err != nil && !apierr.Is(engineErr(err, strip), apierr.Validation) { // a validation error: another gateway enabled it first
			return false, "the engine refuses UpdateTimeToLive: " + err.Error()
		}
	}
}

// ttlAvailable refuses to enable a table's TTL on an engine without TTL.
func (b *Backend) ttlAvailable() error {
	if b.ttlOff != "" {
		return apierr.Validationf("TimeToLive is not available on the remote backend over this engine: %s", b.ttlOff)
	}
	return nil
}

// mirrorTTL adds the copy of item's TTL attribute to its engine item m
// when the table's TTL is enabled and the attribute is a number.
func (p place) mirrorTTL(item attr.Item, m map[string]types.AttributeValue) {
	t := p.tg.Table
	if !t.TTLEnabled || t.TTLAttribute == "" {
		return
	}
	if v, ok := item[t.TTLAttribute]; ok && v.Type == attr.N {
		m[attrTTL] = toAV(v)
	}
}

// mirrorUpdate repeats the update's action on the table's TTL attribute
// on attrTTL (expr.MirrorTop), adding the placeholders it uses to names
// and values.
func (p place) mirrorUpdate(upd string, params *expr.Params, names map[string]string, values map[string]types.AttributeValue) (string, error) {
	t := p.tg.Table
	if upd == "" || !t.TTLEnabled || t.TTLAttribute == "" {
		return upd, nil
	}
	out, changed, zero, err := params.MirrorTop(upd, t.TTLAttribute, phPrefixName+"t", phPrefixValue+"z")
	if err != nil || !changed {
		return upd, err
	}
	names[phPrefixName+"t"] = attrTTL
	if zero {
		values[phPrefixValue+"z"] = &types.AttributeValueMemberN{Value: "0"}
	}
	return out, nil
}

// ttlJob is a job syncing the TTL copies of one logical table's items
// with its definition's TTL setting: in every collection of the table,
// an item whose TTL attribute is a number gets the copy, any other loses
// it. A job is written before the definition changes and deleted when it
// is done; a newer change replaces it (a new gen), which stops the older.
// An index backfill (backfill.go) is the same kind of job under gsiJobPK.
type ttlJob struct {
	pk      string // ttlJobPK, or gsiJobPK for an index's backfill (backfill.go)
	index   uint16 // the index backfilled (its No)
	iname   string // and its name (for the audit log)
	id      uint64
	gen     []byte
	name    string
	ns      []byte // tenant table: the collection's namespace; nil when shared
	tenant  string // the table's owner, for the audit log ("": shared)
	attr    string // the attribute enabled, or being disabled
	at      time.Time
	cns     []byte   // the namespace of the collection being synced (nil: before the first)
	colls   [][]byte // the job's collections, read once per run (ttlJobColls)
	shard   int      // shard within it
	last    []byte   // last sort key synced in the shard (nil: its start)
	synced  int64    // copies written or removed
	enabled bool     // the definition's setting when the job was written
}

func jobKey(pk string, id uint64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberB{Value: fmt.Appendf(nil, "%020d", id)},
	}
}

// startTTLJob records a sync job for table t (before its definition
// changes to enabled, on attribute name).
func (b *Backend) startTTLJob(ctx context.Context, t *schema.Table, ns []byte, owner tenancy.TenantID, name string, enabled bool) (*ttlJob, error) {
	j := &ttlJob{pk: ttlJobPK, id: t.ID, gen: make([]byte, 8), name: t.Name, attr: name, at: b.opts.Now(), enabled: enabled}
	if !owner.IsZero() {
		j.tenant = owner.String()
	}
	rand.Read(j.gen)
	if !t.Shared() {
		j.ns = ns
	}
	item := jobKey(ttlJobPK, t.ID)
	item["gen"] = &types.AttributeValueMemberB{Value: j.gen}
	item["name"] = &types.AttributeValueMemberS{Value: t.Name}
	item["attr"] = &types.AttributeValueMemberS{Value: name}
	item["at"] = num64(j.at.UnixMilli())
	item["enabled"] = &types.AttributeValueMemberBOOL{Value: enabled}
	if j.tenant != "" {
		item["tenant"] = &types.AttributeValueMemberS{Value: j.tenant}
	}
	if j.ns != nil {
		item["ns"] = &types.AttributeValueMemberB{Value: j.ns}
	}
	if _, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: item}); err != nil {
		return nil, engineErr(err, strip)
	}
	return j, nil
}

// dropTTLJob deletes job j if it is still the table's current one.
func (b *Backend) dropTTLJob(ctx context.Context, j *ttlJob) error {
	_, err := b.endJob(ctx, j)
	return err
}

// ttlJobOf reads table id's sync job (nil: none).
func (b *Backend) ttlJobOf(ctx context.Context, id uint64) (*ttlJob, error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: jobKey(ttlJobPK, id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	if out.Item == nil {
		return nil, nil
	}
	return jobFrom(out.Item)
}

func jobFrom(it map[string]types.AttributeValue) (*ttlJob, error) {
	j := &ttlJob{}
	if pk, ok := it[attrPK].(*types.AttributeValueMemberS); ok {
		j.pk = pk.Value
	}
	j.index = uint16(numAttr(it, "index"))
	sk, _ := it[attrSK].(*types.AttributeValueMemberB)
	g, _ := it["gen"].(*types.AttributeValueMemberB)
	if sk == nil || g == nil {
		return nil, apierr.New(apierr.Internal, "corrupt TTL job in the engine")
	}
	var err error
	if j.id, err = strconv.ParseUint(string(sk.Value), 10, 64); err != nil {
		return nil, apierr.New(apierr.Internal, "corrupt TTL job in the engine")
	}
	j.gen = g.Value
	if v, ok := it["name"].(*types.AttributeValueMemberS); ok {
		j.name = v.Value
	}
	if v, ok := it["attr"].(*types.AttributeValueMemberS); ok {
		j.attr = v.Value
	}
	if v, ok := it["ns"].(*types.AttributeValueMemberB); ok {
		j.ns = v.Value
	}
	if v, ok := it["tenant"].(*types.AttributeValueMemberS); ok {
		j.tenant = v.Value
	}
	if v, ok := it["iname"].(*types.AttributeValueMemberS); ok {
		j.iname = v.Value
	}
	if v, ok := it["enabled"].(*types.AttributeValueMemberBOOL); ok {
		j.enabled = v.Value
	}
	if v, ok := it["last"].(*types.AttributeValueMemberB); ok {
		j.last = v.Value
	}
	if v, ok := it["at"].(*types.AttributeValueMemberN); ok {
		ms, _ := strconv.ParseInt(v.Value, 10, 64)
		j.at = time.UnixMilli(ms)
	}
	if v, ok := it["cns"].(*types.AttributeValueMemberB); ok {
		j.cns = v.Value
	}
	j.shard = numAttr(it, "shard")
	if v, ok := it["synced"].(*types.AttributeValueMemberN); ok {
		j.synced, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	return j, nil
}

// ttlSettle is how long a job waits after its definition changed before
// it reads items: every gateway then uses the new definition (it re-reads
// definitions after DefinitionsMaxStale), so no write made under the old
// one lands behind the job.
func (b *Backend) ttlSettle() time.Duration {
	return 2*b.opts.DefinitionsMaxStale + time.Second
}

// resumeTTLJobs runs every sync job left in the engine (a gateway that
// ran one may have ended): run by Open in the background.
func (b *Backend) resumeTTLJobs(ctx context.Context) {
	for _, pk := range []string{ttlJobPK, gsiJobPK} {
		b.resumeJobs(ctx, pk)
	}
}

// resumeJobs runs the jobs of partition pk.
func (b *Backend) resumeJobs(ctx context.Context, pk string) {
	out, err := b.db.Query(ctx, b.partitionQuery(pk))
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("reading jobs to resume", "jobs", pk, "err", err)
		}
		return
	}
	for _, it := range out.Items {
		j, err := jobFrom(it)
		if err != nil {
			b.log.Warn("resuming a TTL job", "err", err)
			continue
		}
		b.runTTLJob(ctx, j, "resumed")
	}
}

// runTTLJob runs job j to its end, retrying engine errors with backoff,
// until a newer job replaces it or ctx ends (any gateway's start resumes
// it from its recorded position). Two gateways running one job are safe:
// every sync is a conditional update of one item that copies or removes
// what the item holds at that moment.
func (b *Backend) runTTLJob(ctx context.Context, j *ttlJob, phase string) {
	if _, running := b.running.LoadOrStore(j.jobID(), true); running {
		return // by this gateway already
	}
	defer b.running.Delete(j.jobID())
	if phase != "" {
		b.jobEvent(j, phase, "")
	}
	if err := sleep(ctx, time.Until(j.at.Add(b.ttlSettle()))); err != nil {
		return
	}
	backoff := 100 * time.Millisecond
	for {
		done, err := b.ttlJobStep(ctx, j)
		if done || ctx.Err() != nil {
			return
		}
		if err != nil {
			b.log.Warn("TTL sync job", "table", j.id, "err", err)
			if sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// ttlJobStep syncs one page of job j and records its position; done
// reports that the job ended (finished, replaced, or its table gone).
func (b *Backend) ttlJobStep(ctx context.Context, j *ttlJob) (done bool, err error) {
	t, err := b.ttlJobTable(ctx, j)
	if err != nil {
		return false, err
	}
	if t == nil || (j.pk == gsiJobPK && indexPos(t, j.index) < 0) {
		return true, b.finishJob(ctx, j, "cancelled")
	}
	if j.colls == nil {
		if j.colls, err = b.ttlJobColls(ctx, j); err != nil {
			return false, err
		}
	}
	// NB: the position is a namespace, not an index into the list: tenant
	// environments created or deleted meanwhile do not shift it. The
	// collections are in namespace order (the registry's).
	i := sort.Search(len(j.colls), func(i int) bool { return bytes.Compare(j.colls[i], j.cns) >= 0 })
	if i == len(j.colls) {
		if j.pk == gsiJobPK {
			if err := b.indexBackfilled(ctx, j, t); err != nil {
				return false, err
			}
		}
		return true, b.finishJob(ctx, j, "done")
	}
	ns := j.colls[i]
	if !bytes.Equal(ns, j.cns) {
		j.cns, j.shard, j.last = ns, 0, nil // the next collection
	}
	lay, err := b.layoutOf(ctx, ns, j.id)
	if err != nil {
		return false, err
	}
	if j.shard >= max(lay.n, lay.from) {
		j.cns, j.shard, j.last = append(bytes.Clone(ns), 0), 0, nil // the least namespace after ns
		return b.ttlJobSave(ctx, j, 0)
	}
	pk := collBase(ns, j.id) + strconv.Itoa(j.shard)
	var n int
	var last []byte
	if j.pk == gsiJobPK {
		n, last, err = b.backfillPage(ctx, t, j.index, pk, j.last)
	} else {
		n, last, err = b.syncTTLPage(ctx, t, pk, j.last)
	}
	if err != nil {
		return false, err
	}
	if last == nil {
		j.shard, j.last = j.shard+1, nil
	} else {
		j.last = last
	}
	return b.ttlJobSave(ctx, j, n)
}

// ttlJobSave records j's position and n more syncs, on condition that j
// is still the table's job; done reports that it is not.
func (b *Backend) ttlJobSave(ctx context.Context, j *ttlJob, n int) (done bool, err error) {
	j.synced += int64(n)
	upd := "SET #c = :c, #s = :s, #n = :n"
	names := map[string]string{"#g": "gen", "#c": "cns", "#s": "shard", "#n": "synced"}
	values := map[string]types.AttributeValue{":g": &types.AttributeValueMemberB{Value: j.gen}, ":c": &types.AttributeValueMemberB{Value: j.cns}, ":s": num(j.shard), ":n": num64(j.synced)}
	names["#l"] = "last"
	if j.last != nil {
		upd += ", #l = :l"
		values[":l"] = &types.AttributeValueMemberB{Value: j.last}
	} else {
		upd += " REMOVE #l"
	}
	_, err = b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: jobKey(j.pk, j.id),
		UpdateExpression: &upd, ConditionExpression: aws.String("#g = :g"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return true, nil // replaced by a newer change of the setting
		}
		return false, engineErr(err, strip)
	}
	return false, nil
}

// ttlJobTable reads the definition j syncs to (nil: the table is gone).
func (b *Backend) ttlJobTable(ctx context.Context, j *ttlJob) (*schema.Table, error) {
	key := map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: defShared},
		attrSK: &types.AttributeValueMemberB{Value: []byte(j.name)},
	}
	if j.ns != nil {
		key[attrPK] = &types.AttributeValueMemberS{Value: defPK(j.ns)}
	}
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	d, ok := out.Item["def"].(*types.AttributeValueMemberB)
	if !ok {
		return nil, nil
	}
	t, err := schema.Decode(d.Value)
	if err != nil {
		return nil, err
	}
	if t.ID != j.id {
		return nil, nil // dropped, and the name reused
	}
	return t, nil
}

// ttlJobColls lists the namespaces of j's collections: a tenant table's
// one, or every tenant environment's of a shared table (the registry's
// entries for the table id, in namespace order).
func (b *Backend) ttlJobColls(ctx context.Context, j *ttlJob) ([][]byte, error) {
	if j.ns != nil {
		return [][]byte{j.ns}, nil
	}
	in := b.partitionQuery(regPK)
	in.ExpressionAttributeNames["#s"], in.ProjectionExpression = attrSK, aws.String("#s")
	id := binary.BigEndian.AppendUint64(nil, j.id)
	var out [][]byte
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range res.Items {
			if sk, ok := it[attrSK].(*types.AttributeValueMemberB); ok && len(sk.Value) > 8 && bytes.Equal(sk.Value[len(sk.Value)-8:], id) {
				out = append(out, sk.Value[:len(sk.Value)-8])
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			sort.Slice(out, func(a, b int) bool { return bytes.Compare(out[a], out[b]) < 0 })
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// syncTTLPage syncs the copies of up to ttlJobPage items of partition pk
// after sort key after (nil: from its start) with t's TTL setting. It
// returns the syncs written and the sort key to resume after (nil: the
// partition is done).
func (b *Backend) syncTTLPage(ctx context.Context, t *schema.Table, pk string, after []byte) (int, []byte, error) {
	in := b.partitionQuery(pk)
	names, values := in.ExpressionAttributeNames, in.ExpressionAttributeValues
	names["#s"], names["#t"] = attrSK, attrTTL
	filter, proj := "attribute_exists(#t)", "#p, #s, #t"
	on := t.TTLEnabled && t.TTLAttribute != ""
	if on {
		names["#a"] = t.TTLAttribute
		values[":n"] = &types.AttributeValueMemberS{Value: "N"}
		filter, proj = "attribute_type(#a, :n) OR attribute_exists(#t)", proj+", #a"
	}
	in.FilterExpression, in.ProjectionExpression, in.Limit = &filter, &proj, aws.Int32(ttlJobPage)
	if after != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{attrPK: values[":p"], attrSK: &types.AttributeValueMemberB{Value: after}}
	}
	res, err := b.db.Query(ctx, in)
	if err != nil {
		return 0, nil, engineErr(err, strip)
	}
	n := 0
	for _, it := range res.Items {
		copied, hasCopy := it[attrTTL]
		a, isNum := it[names["#a"]].(*types.AttributeValueMemberN)
		if on && isNum {
			if c, ok := copied.(*types.AttributeValueMemberN); ok && c.Value == a.Value {
				continue // written under the setting already
			}
		} else if !hasCopy {
			continue
		}
		if err := b.syncTTLItem(ctx, it, on && isNum, t.TTLAttribute); err != nil {
			return n, nil, err
		}
		n++
	}
	var last []byte
	if s, ok := res.LastEvaluatedKey[attrSK].(*types.AttributeValueMemberB); ok {
		last = s.Value
	}
	return n, last, nil
}

// syncTTLItem copies (set) or removes the TTL copy of one item, on
// condition that the item is still as read in that respect (a concurrent
// write wrote the copy itself: nothing to do then). The item's version is
// renewed, so that a gateway's computed write or a move that read it
// before reads it again (update.go, move.go).
func (b *Backend) syncTTLItem(ctx context.Context, it map[string]types.AttributeValue, set bool, name string) error {
	in := &dynamodb.UpdateItemInput{
		TableName:                 &b.table,
		Key:                       physKeyOf(it),
		ExpressionAttributeNames:  map[string]string{"#t": attrTTL, "#v": attrVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": newVersion()},
	}
	if set {
		in.UpdateExpression = aws.String("SET #t = #a, #v = :v")
		in.ConditionExpression = aws.String("attribute_type(#a, :n)")
		in.ExpressionAttributeNames["#a"] = name
		in.ExpressionAttributeValues[":n"] = &types.AttributeValueMemberS{Value: "N"}
	} else {
		in.UpdateExpression = aws.String("REMOVE #t SET #v = :v")
		in.ConditionExpression = aws.String("attribute_exists(#t)")
		if name != "" {
			in.ConditionExpression = aws.String("attribute_exists(#t) AND NOT attribute_type(#a, :n)")
			in.ExpressionAttributeNames["#a"] = name
			in.ExpressionAttributeValues[":n"] = &types.AttributeValueMemberS{Value: "N"}
		}
	}
	_, err := b.db.UpdateItem(ctx, in)
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return engineErr(err, strip)
	}
	return nil
}
