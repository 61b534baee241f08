package remote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Follower is the change feed webhook delivery reads on a gateway
// (webhook.Feed; DESIGN.md, "Webhooks"): one logical table's changes in
// one namespace, read from the engine table's DynamoDB stream — every
// shard, parents before children — filtered to the caller's collection
// and mapped to logical items as GetRecords does. Its positions
// (hookPos) hold a place in every engine shard.
type Follower struct {
	b    *Backend
	poll time.Duration

	mu       sync.Mutex
	shards   []engineShard // the engine stream's shards, as last listed
	listedAt time.Time
	turn     atomic.Uint32 // the shard a read starts with, in turn
	// behind holds the positions a Follow ended at, having found nothing
	// within its budget, before reaching every shard's present end: a
	// Wait from one of them returns at once (catching up reads on).
	behind sync.Map
	// pace holds, per reader (paceKey), the next wait after an empty
	// Follow while changes are coming (time.Duration): a Follow that
	// found records sets it to poll/paceDivisor, each Wait doubles it,
	// and at poll the entry goes (an idle reader waits poll).
	pace sync.Map
}

// paceDivisor: while records come a reader waits poll/paceDivisor after
// an empty read. NB: 2, not more: a delivering subscription then reads
// its engine shard about 5 times a second under load (an empty read, a
// read after each delivery), DynamoDB Streams' limit per shard; a
// quarter of the poll cut the median lag further but read twice that
// (BENCHMARKS.md §36).
const paceDivisor = 2

// paceKey names a reader of the Follower: a table name of a tenant. NB:
// a pace only hurries polls; tables of one name in two environments of
// the tenant share one, which isolates nothing and reveals nothing.
type paceKey struct {
	t     tenancy.TenantID
	table string
}

func paceOf(s tenancy.Scope, table string) paceKey { return paceKey{s.Tenant(), table} }

// engineShard is one shard of the engine stream.
type engineShard struct {
	id, parent string
	start, end string // sequence number range; end "" while open
}

// Follower returns the backend's change feed for webhooks; poll is how
// long a reader that found nothing waits before it reads again (default
// 1 s; DynamoDB allows 5 reads a second per shard).
func (b *Backend) Follower(poll time.Duration) *Follower {
	if poll <= 0 {
		poll = time.Second
	}
	return &Follower{b: b, poll: poll}
}

// followPages bounds the engine GetRecords of one Follow.
const followPages = 8

// listEvery is how long a listing of the engine's shards is used.
const listEvery = time.Second

// hookPosPrefix starts every position of the Follower.
const hookPosPrefix = "r1."

// hookPos is a position in a logical table's changes: per engine shard,
// T (from its oldest record), A<seq> (at), F<seq> (after) or D (read to
// its end: closed); a shard not named is read from its oldest record.
// Records older than Floor (unix seconds: a subscription's start) are
// passed over. Table is the logical table's id: a table created again
// under the name is another table.
type hookPos struct {
	Table  uint64            `json:"t"`
	Floor  int64             `json:"f,omitempty"`
	Shards map[string]string `json:"s,omitempty"`
}

func (p hookPos) String() string {
	v, _ := json.Marshal(p)
	return hookPosPrefix + base64.RawURLEncoding.EncodeToString(v)
}

func (p hookPos) clone() hookPos {
	q := p
	q.Shards = make(map[string]string, len(p.Shards)+1)
	for k, v := range p.Shards {
		q.Shards[k] = v
	}
	return q
}

// maxHookPos bounds a position's text (it is stored in one engine item
// with the subscription's state, and given back by clients).
const maxHookPos = 64 << 10

// parseHookPos reads a hookPos.String. Errors: anything else.
func parseHookPos(s string) (hookPos, error) {
	var p hookPos
	if len(s) > maxHookPos || !strings.HasPrefix(s, hookPosPrefix) {
		return p, errors.New("remote: not a position")
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[len(hookPosPrefix):])
	if err != nil {
		return p, errors.New("remote: not a position")
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.Table == 0 {
		return hookPos{}, errors.New("remote: not a position")
	}
	for k, v := range p.Shards {
		if k == "" || len(k) > 65 || v == "" {
			return hookPos{}, errors.New("remote: not a position")
		}
		switch v[0] {
		case 'T', 'D':
			if len(v) != 1 {
				return hookPos{}, errors.New("remote: not a position")
			}
		case 'A', 'F':
			if !seqNumber(v[1:]) {
				return hookPos{}, errors.New("remote: not a position")
			}
		default:
			return hookPos{}, errors.New("remote: not a position")
		}
	}
	return p, nil
}

// seqNumber reports whether s has the shape of a DynamoDB Streams
// sequence number (21 to 40 digits on AWS; the stand-in's are shorter).
func seqNumber(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// seqLess compares two sequence numbers (decimal strings).
func seqLess(a, b string) bool {
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	if x == nil || y == nil {
		return a < b
	}
	return x.Cmp(y) < 0
}

// errHookStreams is why a subscription cannot be created on a gateway
// whose engine serves no stream of its table.
func errHookStreams(err error) error {
	return apierr.Validationf("webhook subscriptions are not available on this gateway: they are delivered from the engine table's DynamoDB stream (%s)", apierr.Message(err))
}

// target resolves table for s (the subscription's tenant environment).
func (f *Follower) target(ctx context.Context, s tenancy.Scope, table string) (resolve.Target, error) {
	if err := check(ctx, s); err != nil {
		return resolve.Target{}, err
	}
	if s.Tenant().IsZero() {
		return resolve.Target{}, apierr.New(apierr.AccessDenied, "subscriptions belong to a tenant")
	}
	return f.b.res.Open(ctx, s, table)
}

// Retain checks that s sees table and that the engine serves the stream
// the deliveries read (enabling it on the engine table, as a logical
// stream's first enable does). The engine stream keeps every change 24
// hours whatever the consumers: nothing is held.
func (f *Follower) Retain(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	if _, err := f.target(ctx, s, table); err != nil {
		return err
	}
	if _, err := f.b.engineStream(ctx); err != nil {
		if apierr.Is(err, apierr.Validation) {
			return errHookStreams(err)
		}
		return err
	}
	return nil
}

// Release does nothing: the engine stream is never disabled by a gateway.
func (f *Follower) Release(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	return nil
}

// Wait waits for the poll interval: the engine's stream says nothing of
// new records but through reads. While records come (a Follow of the
// tenant's table found some lately) it waits half of it, doubling at
// each Wait back to the interval. From a position a Follow left behind
// the shards' ends (its budget spent on other tenants' records) it
// returns at once.
func (f *Follower) Wait(ctx context.Context, s tenancy.Scope, table, from string) error {
	if _, ok := f.behind.LoadAndDelete(from); ok {
		return nil
	}
	d := f.poll
	if v, ok := f.pace.Load(paceOf(s, table)); ok {
		// NB: changes came lately: look again sooner, backing off to the
		// poll while none come (BENCHMARKS.md §36: the lag's median
		// against the engine calls of an idle subscription).
		d = v.(time.Duration)
		if next := 2 * d; next >= f.poll {
			f.pace.Delete(paceOf(s, table))
		} else {
			f.pace.Store(paceOf(s, table), next)
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start returns the position of the changes made at or after t, in whole
// seconds (the engine's record times have whole seconds, so the changes
// of t's second before t are delivered too). Errors: Validation for a
// time the engine stream no longer holds (24 hours).
func (f *Follower) Start(ctx context.Context, s tenancy.Scope, table string, t time.Time) (string, error) {
	tg, err := f.target(ctx, s, table)
	if err != nil {
		return "", err
	}
	if horizon := f.b.opts.Now().Add(-streamRetention); t.Before(horizon) {
		return "", apierr.Validationf("from: %s is older than the engine stream's trim horizon (%s): DynamoDB Streams keep a change 24 hours", t.UTC().Format(time.RFC3339), horizon.UTC().Format(time.RFC3339))
	}
	return hookPos{Table: tg.Table.ID, Floor: t.Unix()}.String(), nil
}

// Seek returns where a replay from `from` starts: a position the
// Follower printed (of this table), or a record's SequenceNumber — that
// record, in its engine shard, and in every other shard the changes made
// from its second on. Errors: Validation for anything else, or a
// sequence number in no shard the engine still has.
func (f *Follower) Seek(ctx context.Context, s tenancy.Scope, table, cur, from string) (string, error) {
	tg, err := f.target(ctx, s, table)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(from, hookPosPrefix) {
		p, err := parseHookPos(from)
		if err != nil {
			return "", apierr.Validationf("from: %s is not a cursor of this gateway", apierr.Clip(from))
		}
		if p.Table != tg.Table.ID {
			return "", apierr.Validationf("from: the cursor is of another table")
		}
		return p.String(), nil
	}
	if !seqNumber(from) {
		return "", apierr.Validationf("from must be an RFC 3339 time (2026-01-02T15:04:05Z), a record's SequenceNumber or a cursor, not %q", apierr.Clip(from))
	}
	arn, err := f.b.engineStream(ctx)
	if err != nil {
		return "", err
	}
	shards, err := f.list(ctx, arn)
	if err != nil {
		return "", err
	}
	for _, sh := range shards {
		if seqLess(from, sh.start) || sh.end != "" && seqLess(sh.end, from) {
			continue
		}
		it, err := f.b.engineIterator(ctx, arn, iterPos{shard: sh.id, kind: posAt, arg: from})
		if err != nil {
			return "", err
		}
		res, err := f.b.st.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(1)})
		if err != nil {
			return "", streamEngineErr(err)
		}
		if len(res.Records) == 0 || res.Records[0].Dynamodb == nil || aws.ToString(res.Records[0].Dynamodb.SequenceNumber) != from {
			break
		}
		at := aws.ToTime(res.Records[0].Dynamodb.ApproximateCreationDateTime)
		return hookPos{Table: tg.Table.ID, Floor: at.Unix(), Shards: map[string]string{sh.id: "A" + from}}.String(), nil
	}
	return "", apierr.Validationf("from: sequence number %s names no record the engine's stream still holds", apierr.Clip(from))
}

// list returns the engine stream's shards, listed at most listEvery ago.
func (f *Follower) list(ctx context.Context, arn string) ([]engineShard, error) {
	f.mu.Lock()
	if f.shards != nil && time.Since(f.listedAt) < listEvery {
		out := f.shards
		f.mu.Unlock()
		return out, nil
	}
	f.mu.Unlock()
	var out []engineShard
	var last *string
	for {
		d, err := f.b.st.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &arn, ExclusiveStartShardId: last, Limit: aws.Int32(100)})
		if err != nil {
			return nil, streamEngineErr(err)
		}
		for _, sh := range d.StreamDescription.Shards {
			e := engineShard{id: aws.ToString(sh.ShardId), parent: aws.ToString(sh.ParentShardId)}
			if r := sh.SequenceNumberRange; r != nil {
				e.start, e.end = aws.ToString(r.StartingSequenceNumber), aws.ToString(r.EndingSequenceNumber)
			}
			out = append(out, e)
		}
		last = d.StreamDescription.LastEvaluatedShardId
		if last == nil {
			break
		}
	}
	f.mu.Lock()
	f.shards, f.listedAt = out, time.Now()
	f.mu.Unlock()
	return out, nil
}

// Follow reads the engine stream's shards after from, parents before
// children, and returns the first records of s's collection of table it
// finds (from one shard), at most limit, mapped as GetRecords maps them
// (logical keys and images, no changes of the gateway's own attributes
// alone). It reads at most followPages engine pages; caughtUp says it
// read every shard it may read to its present end and found nothing.
func (f *Follower) Follow(ctx context.Context, s tenancy.Scope, table, from string, limit int) ([]changelog.Entry, string, bool, func(int) string, error) {
	tg, err := f.target(ctx, s, table)
	if err != nil {
		return nil, "", false, nil, err
	}
	var p hookPos
	if from != "" {
		if p, err = parseHookPos(from); err != nil {
			return nil, "", false, nil, apierr.Validationf("the subscription's cursor is not a cursor of this gateway")
		}
	}
	if p.Table == 0 {
		p.Table = tg.Table.ID
	}
	if p.Table != tg.Table.ID {
		return nil, "", false, nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found: Table: %s was deleted", table)
	}
	arn, err := f.b.engineStream(ctx)
	if err != nil {
		return nil, "", false, nil, err
	}
	shards, err := f.list(ctx, arn)
	if err != nil {
		return nil, "", false, nil, err
	}
	p = p.clone()
	listed := make(map[string]bool, len(shards))
	for _, sh := range shards {
		listed[sh.id] = true
	}
	for k := range p.Shards {
		if !listed[k] {
			delete(p.Shards, k) // trimmed away by the engine
		}
	}
	stream := tg.Table.LatestStream
	if stream == 0 {
		stream = uint64(tg.Table.Created.UnixMilli())
	}
	rd := &recordReader{b: f.b, tg: tg, coll: collBase(tg.Namespace, tg.Table.ID), limit: limit,
		r: &streamRec{table: tg.Table.ID, view: "NEW_AND_OLD_IMAGES", engine: arn, withTable: true}}
	place := placeOf(tg, layout{})
	pages := 0
	caughtUp := true
	n := len(shards)
	first := 0
	if n > 0 {
		first = int(f.turn.Add(1) % uint32(n))
	}
	for j := 0; j < n; j++ {
		sh := shards[(first+j)%n]
		state := p.Shards[sh.id]
		if state == "D" {
			continue
		}
		if sh.parent != "" && listed[sh.parent] && p.Shards[sh.parent] != "D" {
			continue // NB: a child is read after its parent: an item's changes stay in order
		}
		if pages >= followPages {
			caughtUp = false
			break
		}
		before := p.clone()
		out, state, used, ended, err := f.readShard(ctx, rd, place, arn, sh.id, state, p.Floor, followPages-pages, stream)
		pages += used
		if err != nil {
			return nil, "", false, nil, err
		}
		if state != "" {
			p.Shards[sh.id] = state
		}
		if !ended {
			caughtUp = false
		}
		if len(out) > 0 {
			id := sh.id
			after := func(i int) string {
				q := before.clone()
				q.Shards[id] = "F" + out[i].SequenceNumber
				return q.String()
			}
			f.pace.Store(paceOf(s, table), f.poll/paceDivisor)
			return out, p.String(), false, after, nil
		}
		if state == "D" {
			j = -1 // a child may be readable now: look again from the start
			first = 0
			n = len(shards)
		}
	}
	next := p.String()
	if !caughtUp {
		f.behind.Store(next, struct{}{})
	}
	return nil, next, caughtUp, func(int) string { return next }, nil
}

// readShard reads shard id from state (T, A<seq>, F<seq>; "" is T) for at
// most budget engine pages and returns the records of rd's collection
// (at most rd.limit), the shard's new state ("" if unchanged), the pages
// read, and whether it reached the shard's present end.
func (f *Follower) readShard(ctx context.Context, rd *recordReader, place place, arn, id, state string, floor int64, budget int, stream uint64) ([]changelog.Entry, string, int, bool, error) {
	ip := iterPos{shard: id, kind: posTrim}
	if state != "" && state != "T" {
		ip.kind, ip.arg = posAfter, state[1:]
		if state[0] == 'A' {
			ip.kind = posAt
		}
	}
	iter, err := f.b.engineIterator(ctx, arn, ip)
	if apierr.Is(err, apierr.TrimmedDataAccess) {
		// NB: the engine trimmed records after the position (a
		// subscription paused or failing for longer than the stream's 24
		// hours): they are gone; go on from the oldest one kept.
		f.b.log.Warn("webhook: changes were trimmed from the engine stream before they were delivered", "shard", id)
		ip = iterPos{shard: id, kind: posTrim}
		iter, err = f.b.engineIterator(ctx, arn, ip)
	}
	if apierr.Is(err, apierr.ResourceNotFound) {
		return nil, "D", 0, true, nil // the shard is gone
	}
	if err != nil {
		return nil, "", 0, false, err
	}
	var out []changelog.Entry
	newState := ""
	pages := 0
	for pages < budget {
		res, err := f.b.st.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
		if err != nil {
			return nil, "", pages, false, streamEngineErr(err)
		}
		pages++
		for _, er := range res.Records {
			sr := er.Dynamodb
			if sr == nil {
				continue
			}
			seq := aws.ToString(sr.SequenceNumber)
			if aws.ToTime(sr.ApproximateCreationDateTime).Unix() >= floor {
				w, ok, err := rd.record(place, er)
				if err != nil {
					return nil, "", pages, false, err
				}
				if ok {
					out = append(out, hookEntry(w, stream))
				}
			}
			newState = "F" + seq
			if len(out) == rd.limit {
				return out, newState, pages, false, nil
			}
		}
		if res.NextShardIterator == nil {
			return out, "D", pages, true, nil // a closed shard, read to its end
		}
		iter = res.NextShardIterator
		if len(res.Records) == 0 {
			return out, newState, pages, true, nil // its present end
		}
		if len(out) > 0 {
			return out, newState, pages, false, nil
		}
	}
	return out, newState, pages, false, nil
}

// hookEntry is the change log entry of a logical record w.
func hookEntry(w wire.Record, stream uint64) changelog.Entry {
	e := changelog.Entry{
		Record: changelog.Record{
			Time: time.Unix(int64(w.Dynamodb.ApproximateCreationDateTime), 0).UTC(),
			Keys: w.Dynamodb.Keys, Old: w.Dynamodb.OldImage, New: w.Dynamodb.NewImage,
		},
		Stream:         stream,
		EventID:        w.EventID,
		SequenceNumber: w.Dynamodb.SequenceNumber,
	}
	switch w.EventName {
	case string(stypes.OperationTypeInsert):
		e.Event = changelog.Insert
	case string(stypes.OperationTypeRemove):
		e.Event = changelog.Remove
	default:
		e.Event = changelog.Modify
	}
	if w.UserIdentity != nil && w.UserIdentity.Type == "Service" {
		e.Expired = true
	}
	return e
}
