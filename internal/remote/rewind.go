package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// In-place restore of one tenant environment to a past time (`tenantdb
// tenant restore`, internal/rewind's Engine) on a gateway, built on the
// engine's point-in-time recovery of the engine table (see DESIGN.md,
// "In-place tenant restore"):
//
//  1. BeginRewind checks each table's window (the caller's recovery
//     setting on its collection's registry entry, as pitr.go), writes the
//     restore's marker (meta#bkjob, kind 'w': the scratch table it names
//     is spared by the sweep) and its record — JSON in the namespace's
//     registry entry (table 0), with the lease of backupjob.go — and
//     fences each table's collection: attrRewind on its registry entry,
//     which every gateway reads with the layout (at most layoutTTL old)
//     and refuses the collection's reads and writes for (open).
//  2. RunRewind waits until UndoTo: the fence seen by every gateway
//     (the settle) and every write admitted before it ended (the write
//     fence, fence.go). It then restores the engine table to the time
//     into one scratch engine table, and per table makes the live
//     collection equal to the scratch's: pass 0 reads the collection at
//     the time and puts each item that differs or is missing; pass 1
//     reads the live collection and deletes each item that did not exist
//     then. Position and counts are saved in the record after every page.
//  3. The fences are lifted, the settle waited, the scratch table
//     deleted, the record marked done, the marker deleted.

const (
	jobRewind byte = 'w'
	// Attributes of a collection's registry entry while a restore fences it.
	attrRewind   = "rwid" // S: the restore's id
	attrRewindAt = "rwat" // N: the time it restores to, Unix ms
	// Attributes of the namespace's registry entry (table 0).
	rwRecord = "rwd"   // B: the last restore's record (JSON rwState)
	rwRun    = "rwrun" // S: the id of the restore not finished
)

// RewindPoll is how often a gateway looks for restores another gateway
// left (rewind.Options.Poll).
const RewindPoll = backupPoll

// errRewinding refuses a request on a collection being restored.
func errRewinding(name string, lay layout) error {
	return apierr.New(apierr.ResourceInUse, "Table %s is being restored to %s for this tenant (tenant restore %s): its items cannot be read or written until the restore finishes",
		apierr.Clip(name), time.UnixMilli(lay.fenceAt).UTC().Format(time.RFC3339Nano), lay.fence)
}

// rwState is a restore's record.
type rwState struct {
	engine.Rewind
	Scratch string    `json:"scratch"`
	Fenced  time.Time `json:"fenced,omitzero"`
	// Writable is when the restore may write: no write admitted before
	// the fence can reach the engine after it (UndoTo unless it replaced
	// an unfinished restore, whose UndoTo it keeps).
	Writable time.Time `json:"writable,omitzero"`
	Steps    []rwStep  `json:"steps"`
}

// rwStep is where the restore of one table (Tables[i]) is.
type rwStep struct {
	// Pass 0 puts the items at the time; pass 1 deletes the live items
	// that did not exist then.
	Pass int    `json:"pass"`
	Pos  int    `json:"pos"` // the partition being read
	Last []byte `json:"last,omitempty"`
	Lay  []byte `json:"lay,omitempty"` // the live layout the passes run under
}

// rewinds are the restores this gateway holds the lease of, and runs.
type rewinds struct {
	mu     sync.Mutex
	held   map[string][]byte // namespace -> lease token
	active map[string]bool   // namespace -> RunRewind running
}

// begin marks ns's restore as run by this gateway: false if it is
// already.
func (r *rewinds) begin(ns []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	if r.active[string(ns)] {
		return false
	}
	r.active[string(ns)] = true
	return true
}

func (r *rewinds) end(ns []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, string(ns))
}

func (r *rewinds) init() {
	if r.held == nil {
		r.held, r.active = map[string][]byte{}, map[string]bool{}
	}
}

func (r *rewinds) hold(ns []byte, me []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	if me == nil {
		delete(r.held, string(ns))
	} else {
		r.held[string(ns)] = me
	}
}

// rewindJob is the job of namespace ns's restore (its entry: the
// namespace's registry entry).
func rewindJob(ns []byte, me []byte) *bkJob {
	j := newJob(jobRewind, ns, 0)
	if me != nil {
		j.me = me
	}
	return j
}

// readRewind reads namespace ns's restore record (nil: none) and its
// registry entry.
func (b *Backend) readRewind(ctx context.Context, ns []byte) (*rwState, map[string]types.AttributeValue, error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: regKey(regSK(ns, 0)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, nil, engineErr(err, strip)
	}
	v, ok := out.Item[rwRecord].(*types.AttributeValueMemberB)
	if !ok {
		return nil, out.Item, nil
	}
	var st rwState
	if err := json.Unmarshal(v.Value, &st); err != nil {
		return nil, nil, apierr.Wrap(apierr.Internal, err, "decoding the tenant restore record")
	}
	if _, run := out.Item[rwRun]; !run && st.State == engine.RewindRunning {
		st.State = engine.RewindDone // NB: never: the record and rwrun change together
	}
	return &st, out.Item, nil
}

// leaseLive reports whether a runner holds entry it's lease.
func leaseLive(it map[string]types.AttributeValue) bool {
	if _, ok := it[jobOwner]; !ok {
		return false
	}
	beat := num64Attr(it, jobBeat)
	return beat != 0 && time.Since(time.UnixMilli(beat)) < backupLease
}

// settleLayouts is how long a change of a collection's registry entry
// takes to reach every gateway's layout cache (none when this gateway
// is alone).
func (b *Backend) settleLayouts(ctx context.Context) time.Duration {
	if b.Alone(ctx) {
		return 0
	}
	return b.layoutTTL() + b.layoutTTL()/10
}

// BeginRewind starts an in-place restore of s's items of tables (every
// table s sees when empty) to time at, as engine.BeginRewind does, and
// returns its record; RunRewind does the work. From the moment it
// returns, s's reads and writes of those tables are refused on every
// gateway within the layout cache's bound. Errors: as
// engine.BeginRewind's, and ValidationException where the engine has no
// point-in-time recovery (dynalite); InvalidRestoreTime also for a time
// after the engine's latest restorable time; ResourceInUse for a table
// whose shard count is changing.
func (b *Backend) BeginRewind(ctx context.Context, s tenancy.Scope, at time.Time, names []string, actor string) (engine.Rewind, error) {
	if err := check(ctx, s); err != nil {
		return engine.Rewind{}, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return engine.Rewind{}, err
	}
	if at.IsZero() {
		return engine.Rewind{}, apierr.Validationf("the restore time is required")
	}
	if now := b.opts.Now(); at.After(now) {
		return engine.Rewind{}, apierr.Validationf("the restore time %s is in the future (now is %s)", at.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	w, err := b.enginePITR(ctx) // NB: an engine without it (dynalite) says why here
	if err != nil {
		return engine.Rewind{}, err
	}
	ns := resolve.Namespace(s)
	prev, pit, err := b.readRewind(ctx, ns)
	if err != nil {
		return engine.Rewind{}, err
	}
	if prev != nil && prev.State != engine.RewindRunning {
		prev = nil
	}
	if prev != nil && leaseLive(pit) {
		return engine.Rewind{}, apierr.New(apierr.ResourceInUse, "a restore of this tenant to %s (id %s) is running; wait for it to finish (tenant restore-status)",
			prev.At.UTC().Format(time.RFC3339Nano), prev.ID)
	}
	if len(names) == 0 {
		if names, err = b.res.Visible(ctx, s); err != nil {
			return engine.Rewind{}, err
		}
	}
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	if prev != nil {
		var missing []string
		for _, t := range prev.Tables {
			if _, ok := slices.BinarySearch(names, t.Name); !ok {
				missing = append(missing, t.Name)
			}
		}
		if len(missing) > 0 {
			return engine.Rewind{}, apierr.New(apierr.ResourceInUse, "a restore of this tenant to %s (id %s) is not finished; a new restore must include its table(s) %s",
				prev.At.UTC().Format(time.RFC3339Nano), prev.ID, apierr.Clip(strings.Join(missing, ", ")))
		}
	}
	env, _ := resolve.EnvOf(s.Tenant(), ns)
	st := rwState{Rewind: engine.Rewind{Tenant: s.Tenant().String(), Env: env, At: at, State: engine.RewindRunning, Actor: actor}}
	var noPITR, early, late []string
	var fences [][]byte
	now := b.opts.Now()
	for _, name := range names {
		if err := schema.ValidateTableName(name); err != nil {
			return engine.Rewind{}, err
		}
		// NB: the resolver decides what s sees and its namespace; the
		// collection is the Target's, as every data-plane request's.
		tg, err := b.res.Open(ctx, s, name)
		if err != nil {
			return engine.Rewind{}, err
		}
		sk := regSK(tg.Namespace, tg.Table.ID)
		out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: regKey(sk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return engine.Rewind{}, engineErr(err, strip)
		}
		if out.Item == nil {
			st.Skipped = append(st.Skipped, name) // never held an item
			continue
		}
		if layoutFrom(out.Item).moving() {
			return engine.Rewind{}, apierr.New(apierr.ResourceInUse, "the shard count of table %s is changing for this tenant; restore once the change ends (tenant shard)", apierr.Clip(name))
		}
		p := pitrSetting{}
		if _, ok := out.Item[pitrSince]; ok {
			p = pitrSetting{on: true, since: time.UnixMilli(num64Attr(out.Item, pitrSince)), days: num64Attr(out.Item, pitrDays)}
		}
		lo, hi, ok := p.window(w, now)
		switch {
		case !p.on || !w.on:
			noPITR = append(noPITR, name)
		case !ok || at.Before(lo):
			early = append(early, fmt.Sprintf("%s (earliest restorable time %s)", name, lo.UTC().Format(time.RFC3339Nano)))
		case at.After(hi):
			late = append(late, fmt.Sprintf("%s (latest restorable time %s)", name, hi.UTC().Format(time.RFC3339Nano)))
		default:
			st.Tables = append(st.Tables, engine.RewindTable{Name: name, ID: tg.Table.ID})
			st.Steps = append(st.Steps, rwStep{})
			fences = append(fences, sk)
		}
	}
	switch {
	case len(noPITR) > 0:
		return engine.Rewind{}, apierr.New(apierr.PointInTimeRecoveryUnavailable, "cannot restore to %s: point-in-time recovery is not enabled for this tenant on table(s) %s; enable it (UpdateContinuousBackups), or name the tables to restore with --table",
			at.UTC().Format(time.RFC3339Nano), apierr.Clip(strings.Join(noPITR, ", ")))
	case len(early) > 0:
		return engine.Rewind{}, apierr.New(apierr.InvalidRestoreTime, "cannot restore to %s: it is before the history of table(s) %s",
			at.UTC().Format(time.RFC3339Nano), apierr.Clip(strings.Join(early, "; ")))
	case len(late) > 0:
		return engine.Rewind{}, apierr.New(apierr.InvalidRestoreTime, "cannot restore to %s: the engine cannot restore table(s) %s to it yet; retry later",
			at.UTC().Format(time.RFC3339Nano), apierr.Clip(strings.Join(late, "; ")))
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	st.ID = hex.EncodeToString(id[:])
	st.Scratch = b.table + "-pitr-rw" + st.ID
	st.Started = b.opts.Now()
	if prev != nil {
		st.UndoTo = prev.UndoTo // NB: the tenant has been fenced since the first one began
	}
	j := rewindJob(ns, nil)
	// NB: the marker before the scratch table can be asked for, and
	// before the record (a marker without a running record is cleaned
	// up by PendingRewinds).
	if err := b.putMarker(ctx, j, map[string]types.AttributeValue{rsScratch: &types.AttributeValueMemberS{Value: st.Scratch}}); err != nil {
		return engine.Rewind{}, err
	}
	if err := b.register(ctx, ns, 0); err != nil {
		return engine.Rewind{}, err
	}
	rec, err := json.Marshal(&st)
	if err != nil {
		return engine.Rewind{}, apierr.Wrap(apierr.Internal, err, "encoding the tenant restore record")
	}
	in := &dynamodb.UpdateItemInput{TableName: &b.table, Key: j.entryKey(),
		UpdateExpression:         aws.String("SET #r = :r, #run = :id, #own = :me, #beat = :now"),
		ConditionExpression:      aws.String("attribute_not_exists(#run)"),
		ExpressionAttributeNames: map[string]string{"#r": rwRecord, "#run": rwRun, "#own": jobOwner, "#beat": jobBeat},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberB{Value: rec}, ":id": &types.AttributeValueMemberS{Value: st.ID},
			":me": &types.AttributeValueMemberB{Value: j.me}, ":now": num64(time.Now().UnixMilli())},
	}
	if prev != nil {
		// NB: replaces the unfinished one only if nobody claimed it since.
		in.ConditionExpression = aws.String("#run = :prev AND (attribute_not_exists(#own) OR #beat = :pbeat)")
		in.ExpressionAttributeValues[":prev"] = &types.AttributeValueMemberS{Value: prev.ID}
		in.ExpressionAttributeValues[":pbeat"] = num64(num64Attr(pit, jobBeat))
	}
	if _, err := b.db.UpdateItem(ctx, in); err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return engine.Rewind{}, apierr.New(apierr.ResourceInUse, "another restore of this tenant began meanwhile; wait for it to finish (tenant restore-status)")
		}
		return engine.Rewind{}, engineErr(err, strip)
	}
	b.rw.hold(ns, j.me)
	if err := b.fenceRewind(ctx, j, &st); err != nil {
		return st.Rewind, err // NB: RunRewind fences again
	}
	return st.Rewind, nil
}

// fenceRewind fences st's tables' collections (idempotent) and, the
// first time, sets when and UndoTo: the moment every gateway refuses the
// tenant's requests on them and every engine call of one admitted before
// has ended.
func (b *Backend) fenceRewind(ctx context.Context, j *bkJob, st *rwState) error {
	for _, t := range st.Tables {
		sk := regSK(j.ns, t.ID)
		_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: regKey(sk),
			UpdateExpression:         aws.String("SET #f = :f, #fa = :fa"),
			ConditionExpression:      aws.String("attribute_exists(#p)"),
			ExpressionAttributeNames: map[string]string{"#f": attrRewind, "#fa": attrRewindAt, "#p": attrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":f": &types.AttributeValueMemberS{Value: st.ID},
				":fa": num64(st.At.UnixMilli())},
		})
		if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) { // gone: the tenant is being deleted
			return engineErr(err, strip)
		}
		b.lays.m.Delete(string(sk))
	}
	if !st.Fenced.IsZero() {
		return nil
	}
	st.Fenced = b.opts.Now()
	st.Writable = st.Fenced.Truncate(time.Millisecond).Add(time.Millisecond)
	if len(st.Tables) > 0 { // NB: nothing fenced, nothing to wait for
		st.Writable = st.Writable.Add(b.settleLayouts(ctx) + b.fenceWait())
	}
	if st.UndoTo.IsZero() {
		st.UndoTo = st.Writable
	}
	return b.saveRewind(ctx, j, st, "", nil)
}

// saveRewind saves st in j's entry on condition of j's lease, with more
// SET clauses (after the record's) and a REMOVE list.
func (b *Backend) saveRewind(ctx context.Context, j *bkJob, st *rwState, remove string, names map[string]string) error {
	rec, err := json.Marshal(st)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "encoding the tenant restore record")
	}
	if names == nil {
		names = map[string]string{}
	}
	names["#r"] = rwRecord
	return b.jobSave(ctx, j, "#r = :r", remove, names, map[string]types.AttributeValue{":r": &types.AttributeValueMemberB{Value: rec}})
}

// claimRewind takes the lease of ns's unfinished restore for this
// gateway if no live runner holds it; ok false if one does.
func (b *Backend) claimRewind(ctx context.Context, ns []byte) (j *bkJob, st *rwState, ok bool, err error) {
	st, it, err := b.readRewind(ctx, ns)
	if err != nil || st == nil || st.State != engine.RewindRunning {
		return nil, st, false, err
	}
	b.rw.mu.Lock()
	me := b.rw.held[string(ns)]
	b.rw.mu.Unlock()
	if own, _ := it[jobOwner].(*types.AttributeValueMemberB); me != nil && own != nil && string(own.Value) == string(me) {
		return rewindJob(ns, me), st, true, nil
	}
	if leaseLive(it) {
		return nil, st, false, nil
	}
	j = rewindJob(ns, nil)
	cond := "#run = :id AND (attribute_not_exists(#own) OR #beat = :beat)"
	_, err = b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: j.entryKey(),
		UpdateExpression:         aws.String("SET #own = :me, #beat = :now"),
		ConditionExpression:      &cond,
		ExpressionAttributeNames: map[string]string{"#own": jobOwner, "#beat": jobBeat, "#run": rwRun},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": &types.AttributeValueMemberB{Value: j.me}, ":now": num64(time.Now().UnixMilli()),
			":id": &types.AttributeValueMemberS{Value: st.ID}, ":beat": num64(num64Attr(it, jobBeat))},
	})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return nil, st, false, nil // another gateway claimed it first
		}
		return nil, st, false, engineErr(err, strip)
	}
	b.rw.hold(ns, j.me)
	return j, st, true, nil
}

// ClaimRewind takes s's unfinished restore for this gateway to run
// (rewind.Claimer): false if another gateway runs it.
func (b *Backend) ClaimRewind(ctx context.Context, s tenancy.Scope) (bool, error) {
	if err := check(ctx, s); err != nil {
		return false, err
	}
	_, _, ok, err := b.claimRewind(ctx, resolve.Namespace(s))
	return ok, err
}

// RewindStatus returns s's restore: the unfinished one or the last; ok
// is false if there has been none. A restore read as done is unfenced
// on every gateway.
func (b *Backend) RewindStatus(ctx context.Context, s tenancy.Scope) (engine.Rewind, bool, error) {
	if err := check(ctx, s); err != nil {
		return engine.Rewind{}, false, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return engine.Rewind{}, false, err
	}
	st, _, err := b.readRewind(ctx, resolve.Namespace(s))
	if err != nil || st == nil {
		return engine.Rewind{}, false, err
	}
	return st.Rewind, true, nil
}

// PendingRewinds claims the unfinished restores no live gateway runs
// (their runner was killed or closed; not those an error stopped, which
// wait to be asked for again, as embedded) and returns
// them, for the caller to run (RunRewind); markers of restores that are
// gone or done are cleaned up.
func (b *Backend) PendingRewinds() ([]engine.Rewind, error) {
	ctx := b.bg
	in := &dynamodb.QueryInput{
		TableName:                &b.table,
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :k)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK, "#s": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: markerPK},
			":k": &types.AttributeValueMemberB{Value: []byte{jobRewind}}},
		ConsistentRead: aws.Bool(true),
	}
	var out []engine.Rewind
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return out, engineErr(err, strip)
		}
		for _, mk := range res.Items {
			sk, ok := mk[attrSK].(*types.AttributeValueMemberB)
			if !ok || len(sk.Value) < 9 {
				continue
			}
			ns := sk.Value[1 : len(sk.Value)-8]
			b.rw.mu.Lock()
			running := b.rw.active[string(ns)]
			b.rw.mu.Unlock()
			if running {
				continue
			}
			if st, _, err := b.readRewind(ctx, ns); err != nil {
				return out, err
			} else if st != nil && st.State == engine.RewindRunning && st.Error != "" {
				// NB: stopped by an error: it stays fenced until it is
				// asked for again, as on the embedded server (not
				// retried every poll).
				continue
			}
			_, st, ok, err := b.claimRewind(ctx, ns)
			if err != nil {
				return out, err
			}
			switch {
			case ok:
				out = append(out, st.Rewind)
			case (st == nil || st.State != engine.RewindRunning) && time.Since(time.UnixMilli(num64Attr(mk, "at"))) > backupLease:
				// Done but for its marker, never begun, or its tenant deleted.
				if v, ok := mk[rsScratch].(*types.AttributeValueMemberS); ok {
					if err := b.dropScratch(ctx, v.Value); err != nil {
						return out, err
					}
				}
				if err := b.dropMarker(ctx, rewindJob(ns, nil)); err != nil {
					return out, err
				}
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// RunRewind runs s's unfinished restore to its end and returns its final
// record; progress, if not nil, gets the record after each page. It may
// be called again after an error or on another gateway after a crash.
// Errors: ValidationException (no unfinished restore), ResourceInUse
// (another gateway runs it), the engine's refusal of the time
// (InvalidRestoreTime), ctx's. On error the restore stays unfinished
// and fenced.
func (b *Backend) RunRewind(ctx context.Context, s tenancy.Scope, progress func(engine.Rewind)) (engine.Rewind, error) {
	if err := check(ctx, s); err != nil {
		return engine.Rewind{}, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return engine.Rewind{}, err
	}
	ns := resolve.Namespace(s)
	if !b.rw.begin(ns) {
		return engine.Rewind{}, apierr.New(apierr.ResourceInUse, "the restore of this tenant is running already")
	}
	defer b.rw.end(ns)
	j, st, ok, err := b.claimRewind(ctx, ns)
	switch {
	case err != nil:
		return engine.Rewind{}, err
	case st == nil || st.State != engine.RewindRunning:
		return engine.Rewind{}, apierr.Validationf("this tenant has no unfinished restore")
	case !ok:
		return st.Rewind, apierr.New(apierr.ResourceInUse, "the restore of this tenant (id %s) is running already", st.ID)
	}
	if progress == nil {
		progress = func(engine.Rewind) {}
	}
	err = b.runRewind(ctx, s, j, st, progress)
	if err == nil {
		return st.Rewind, nil
	}
	if errors.Is(err, errJobGone) {
		b.rw.hold(ns, nil)
		return st.Rewind, apierr.New(apierr.ResourceInUse, "the restore of this tenant (id %s) was taken over by another gateway", st.ID)
	}
	bg := context.WithoutCancel(ctx)
	if ctx.Err() == nil {
		st.Error = apierr.Clip(apierr.Message(err))
		if serr := b.saveRewind(bg, j, st, "", nil); serr != nil {
			b.log.Warn("saving a tenant restore's error", "err", serr)
		}
	}
	b.release(bg, j) // NB: another gateway may resume it at once
	b.rw.hold(ns, nil)
	return st.Rewind, err
}

func (b *Backend) runRewind(ctx context.Context, s tenancy.Scope, j *bkJob, st *rwState, progress func(engine.Rewind)) error {
	renew := func(ctx context.Context) error { return b.jobSave(ctx, j, "", "", nil, nil) }
	if err := b.fenceRewind(ctx, j, st); err != nil {
		return err
	}
	st.Error = ""
	progress(st.Rewind)
	// NB: no write of the tenant admitted before the fence is still on
	// its way to the engine after UndoTo, and the restore writes nothing
	// before it: restoring to UndoTo undoes the restore.
	for {
		d := time.Until(st.Writable.Add(time.Millisecond))
		if d <= 0 {
			break
		}
		if err := sleep(ctx, min(d, 2*time.Second)); err != nil {
			return err
		}
		if err := renew(ctx); err != nil {
			return err
		}
	}
	if slices.ContainsFunc(st.Tables, func(t engine.RewindTable) bool { return !t.Done }) {
		refused, err := b.restoreScratch(ctx, st.Scratch, st.At.UnixMilli(), renew)
		if err != nil {
			return err
		}
		if refused != nil {
			k := apierr.InvalidRestoreTime
			if refused.ErrorCode() == "PointInTimeRecoveryUnavailableException" {
				k = apierr.PointInTimeRecoveryUnavailable
			}
			return apierr.New(k, "The engine refused to restore its table to %s: %s", st.At.UTC().Format(time.RFC3339Nano), apierr.Clip(refused.ErrorMessage()))
		}
	}
	for i := range st.Tables {
		if st.Tables[i].Done {
			continue
		}
		if err := b.rewindTable(ctx, s, j, st, i, progress); err != nil {
			return err
		}
	}
	// The end: unfenced on every gateway before the record says done.
	for _, t := range st.Tables {
		sk := regSK(j.ns, t.ID)
		_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: regKey(sk),
			UpdateExpression:          aws.String("REMOVE #f, #fa"),
			ConditionExpression:       aws.String("#f = :f"),
			ExpressionAttributeNames:  map[string]string{"#f": attrRewind, "#fa": attrRewindAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{":f": &types.AttributeValueMemberS{Value: st.ID}},
		})
		if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return engineErr(err, strip)
		}
		b.lays.m.Delete(string(sk))
	}
	if d := b.settleLayouts(ctx); d > 0 {
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
	if err := b.dropScratch(ctx, st.Scratch); err != nil {
		return err
	}
	st.State, st.Error, st.Finished = engine.RewindDone, "", b.opts.Now()
	if err := b.saveRewind(ctx, j, st, "#run, #own, #beat", map[string]string{"#run": rwRun}); err != nil {
		return err
	}
	b.rw.hold(j.ns, nil)
	if err := b.dropMarker(ctx, j); err != nil {
		b.log.Warn("dropping a tenant restore's marker (cleaned up later)", "err", err)
	}
	progress(st.Rewind)
	return nil
}

// rewindTable makes s's collection of st.Tables[i] equal to its
// collection in the scratch table, page by page, saving its position.
func (b *Backend) rewindTable(ctx context.Context, s tenancy.Scope, j *bkJob, st *rwState, i int, progress func(engine.Rewind)) error {
	rt, sp := &st.Tables[i], &st.Steps[i]
	var then *place // the collection in the scratch table (layout at the time)
	for {
		tg, err := b.res.Open(ctx, s, rt.Name)
		if apierr.Is(err, apierr.ResourceNotFound) || err == nil && tg.Table.ID != rt.ID {
			// NB: the table was deleted (or replaced) since: nothing of
			// it to restore any more.
			rt.Done = true
			return b.saveRewind(ctx, j, st, "", nil)
		}
		if err != nil {
			return err
		}
		lay, err := b.layoutOf(ctx, tg.Namespace, tg.Table.ID)
		if err != nil {
			return err
		}
		if lay.moving() {
			// NB: a change of shard count (started by the operator
			// meanwhile) moves items between shards: wait for its end.
			if err := sleep(ctx, time.Second); err != nil {
				return err
			}
			if err := b.jobSave(ctx, j, "", "", nil, nil); err != nil {
				return err
			}
			continue
		}
		if lk := layKey(lay); sp.Lay == nil || string(sp.Lay) != string(lk) {
			*sp = rwStep{Lay: lk} // the shard count changed: both passes again
		}
		live := placeOf(tg, lay)
		if then == nil {
			out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &st.Scratch, Key: regKey(regSK(tg.Namespace, tg.Table.ID)), ConsistentRead: aws.Bool(true)})
			if err != nil {
				return engineErr(err, strip)
			}
			then = &place{tg: tg, base: collBase(tg.Namespace, tg.Table.ID), lay: layoutFrom(out.Item)}
		}
		var pks []string
		var table string
		if sp.Pass == 0 {
			pks, table = then.shardPKs(), st.Scratch
		} else {
			pks, table = live.shardPKs(), b.table
		}
		if sp.Pos >= len(pks) {
			if sp.Pass == 0 {
				sp.Pass, sp.Pos, sp.Last = 1, 0, nil
				continue
			}
			rt.Done = true
			b.meterDrift(tg) // NB: its storage counters are recounted
			return b.saveRewind(ctx, j, st, "", nil)
		}
		var units float64
		raws, next, err := b.readPageOf(ctx, table, pks[sp.Pos], sp.Last, &units)
		if err != nil {
			return err
		}
		var n, changed int64
		if sp.Pass == 0 {
			n, changed, err = b.rewindPuts(ctx, live, raws)
		} else {
			n, changed, err = b.rewindDeletes(ctx, st.Scratch, *then, raws)
		}
		if err != nil {
			return err
		}
		rt.Keys += n
		rt.Checked += n
		rt.Changed += changed
		if sp.Last = next; next == nil {
			sp.Pos++
		}
		if err := b.saveRewind(ctx, j, st, "", nil); err != nil {
			return err
		}
		progress(st.Rewind)
	}
}

// rewindPuts writes back into live collection p each item of raws (a
// page of the collection at the time) that differs from the live item
// or is missing; n is the keys looked at, changed the items written.
func (b *Backend) rewindPuts(ctx context.Context, p place, raws []map[string]types.AttributeValue) (n, changed int64, err error) {
	t := p.tg.Table
	type cand struct {
		sk   string
		item attr.Item
	}
	var cands []cand
	var keys []map[string]types.AttributeValue
	for _, raw := range raws {
		sk, ok := raw[attrSK].(*types.AttributeValueMemberB)
		item := strip(raw)
		if _, has := item[t.Hash.Name]; !ok || !has {
			continue
		}
		cands = append(cands, cand{string(sk.Value), item})
		for _, pk := range p.keyPKs(item[t.Hash.Name]) {
			keys = append(keys, map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: pk}, attrSK: sk})
		}
	}
	cur, err := b.getAll(ctx, b.table, keys)
	if err != nil {
		return 0, 0, err
	}
	var puts []map[string]types.AttributeValue
	for _, c := range cands {
		if old, ok := cur[c.sk]; ok && attr.EqualItems(old, c.item) {
			continue // as it was then
		}
		m, err := p.physItem(c.item)
		if err != nil {
			// An index created since whose key is too large for the
			// engine: the item stays out, as a restore's would.
			b.log.Warn("tenant restore: an item does not fit the table any more", "table", t.ID, "err", err)
			continue
		}
		puts = append(puts, m)
	}
	if _, err := b.putAll(ctx, puts); err != nil {
		return 0, 0, err
	}
	return int64(len(cands)), int64(len(puts)), nil
}

// rewindDeletes deletes each live item of raws (a page of the live
// collection) whose key did not exist at the time (in collection then
// of scratch table scratch); n and changed are the items deleted.
func (b *Backend) rewindDeletes(ctx context.Context, scratch string, then place, raws []map[string]types.AttributeValue) (n, changed int64, err error) {
	t := then.tg.Table
	type cand struct {
		pk, sk types.AttributeValue
	}
	var cands []cand
	var keys []map[string]types.AttributeValue
	for _, raw := range raws {
		pk, sk := raw[attrPK], raw[attrSK]
		skb, ok := sk.(*types.AttributeValueMemberB)
		item := strip(raw)
		if _, has := item[t.Hash.Name]; !ok || !has {
			continue
		}
		cands = append(cands, cand{pk, sk})
		for _, spk := range then.keyPKs(item[t.Hash.Name]) {
			keys = append(keys, map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: spk}, attrSK: &types.AttributeValueMemberB{Value: skb.Value}})
		}
	}
	was, err := b.getAll(ctx, scratch, keys)
	if err != nil {
		return 0, 0, err
	}
	var dels []types.WriteRequest
	for _, c := range cands {
		if _, ok := was[string(c.sk.(*types.AttributeValueMemberB).Value)]; ok {
			continue
		}
		dels = append(dels, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{attrPK: c.pk, attrSK: c.sk}}})
	}
	if _, err := b.writeAll(ctx, dels); err != nil {
		return 0, 0, err
	}
	return int64(len(dels)), int64(len(dels)), nil
}

// getAll reads keys of engine table table (strongly consistent, 100 a
// call) and returns the logical items found by their physical sort key.
func (b *Backend) getAll(ctx context.Context, table string, keys []map[string]types.AttributeValue) (map[string]attr.Item, error) {
	out := map[string]attr.Item{}
	for start := 0; start < len(keys); start += 100 {
		ka := &types.KeysAndAttributes{Keys: keys[start:min(start+100, len(keys))], ConsistentRead: aws.Bool(true)}
		backoff := 20 * time.Millisecond
		for ka != nil && len(ka.Keys) > 0 {
			res, err := b.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: *ka}})
			if err != nil {
				return nil, engineErr(err, strip)
			}
			for _, raw := range res.Responses[table] {
				sk, ok := raw[attrSK].(*types.AttributeValueMemberB)
				if item := strip(raw); ok && item != nil {
					out[string(sk.Value)] = item
				}
			}
			next, more := res.UnprocessedKeys[table]
			if !more {
				break
			}
			ka = &next
			if err := sleep(ctx, backoff); err != nil {
				return nil, err
			}
			backoff = min(2*backoff, time.Second)
		}
	}
	return out, nil
}
