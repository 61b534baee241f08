package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// In-place restore of one tenant environment ("rewind"): the scope's
// items of some tables — its own view of shared tables, its own tables —
// are put back as they were at a past time, in place, while every other
// namespace keeps working.
//
//  1. BeginRewind checks that every table's change log holds the history
//     (old images of every change since the time, not trimmed), fences
//     the tables for the namespace, passes the lock barrier (so no write
//     of the namespace is in flight), takes UndoTo (the moment before the
//     restore's first write) and persists the record `s rwd/<ns>`.
//  2. RunRewind, per table: one snapshot, the state at the time from the
//     log (history.go), and for every key changed since, the item then is
//     written back (or the item deleted) through locked/commit — index
//     entries, counters and change records follow, as for any write. So
//     the restore is itself in the log: restoring to UndoTo undoes it.
//  3. The record is marked done and the fence lifted.
//
// While fenced, the namespace's reads and writes of those tables are
// refused (ResourceInUseException saying so): nobody sees a half-restored
// table, and no write races the restore. Other namespaces, including
// other tenants of the same shared tables, are untouched (their fence
// check is one atomic load while no restore runs, one map lookup while
// one does).
//
// Crash safety: the record is durable before the first write. Open
// fences the namespaces of running records again, so after kill -9 the
// tables stay refused until RunRewind finishes them. Running again is
// exact: the first change after the time of each key is unchanged by the
// restore's own later records, so the state at the time is recomputed the
// same, and keys already put back are skipped (equal items are not
// written). So the restore's batches are not synced one by one (an
// fsync each would stall the other tenants' writers behind it): the
// table's store is synced once at the end, before the record says done.

// Rewind states.
const (
	RewindRunning = "running"
	RewindDone    = "done"
)

// Rewind is an in-place restore of a tenant environment, as persisted.
type Rewind struct {
	ID     string    `json:"id"`
	Tenant string    `json:"tenant"`
	Env    string    `json:"env"`
	At     time.Time `json:"at"`
	// UndoTo is the moment just before the restore's first write:
	// restoring to it undoes the restore.
	UndoTo   time.Time     `json:"undo_to"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished,omitzero"`
	State    string        `json:"state"`
	Actor    string        `json:"actor,omitempty"`
	Tables   []RewindTable `json:"tables"`
	// Skipped are the tables asked for (or seen) that the namespace never
	// held an item of: nothing to restore.
	Skipped []string `json:"skipped,omitempty"`
	// Error is why the last attempt stopped (the restore stays running
	// and fenced until an attempt finishes it).
	Error string `json:"error,omitempty"`
}

// RewindTable is one table of a Rewind and its progress.
type RewindTable struct {
	Name string `json:"name"`
	ID   uint64 `json:"id"`
	// Keys is the number of item keys changed since the time (known once
	// the table's log is read), Checked how many of them are done,
	// Changed how many needed a write.
	Keys    int64 `json:"keys"`
	Checked int64 `json:"checked"`
	Changed int64 `json:"changed"`
	Done    bool  `json:"done"`
}

// rewindFence is the set of tables of a namespace being restored.
type rewindFence struct {
	id     string
	at     time.Time
	tables map[uint64]bool
}

// fenced returns the error of an operation of namespace ns on table t
// while t is being restored for ns, or nil.
func (e *Engine) fenced(ns []byte, t *schema.Table) error {
	if e.nfences.Load() == 0 {
		return nil
	}
	v, ok := e.fences.Load(string(ns))
	if !ok {
		return nil
	}
	f := v.(*rewindFence)
	if !f.tables[t.ID] {
		return nil
	}
	return apierr.New(apierr.ResourceInUse, "Table %s is being restored to %s for this tenant (tenant restore %s): its items cannot be read or written until the restore finishes",
		apierr.Clip(t.Name), f.at.UTC().Format(time.RFC3339Nano), f.id)
}

func (e *Engine) fence(ns []byte, r *Rewind) {
	f := &rewindFence{id: r.ID, at: r.At, tables: map[uint64]bool{}}
	for _, t := range r.Tables {
		f.tables[t.ID] = true
	}
	if _, loaded := e.fences.Swap(string(ns), f); !loaded {
		e.nfences.Add(1)
	}
}

func (e *Engine) unfence(ns []byte) {
	if _, loaded := e.fences.LoadAndDelete(string(ns)); loaded {
		e.nfences.Add(-1)
	}
}

func (e *Engine) loadRewind(ns []byte) (*Rewind, error) {
	v, err := e.db.Get(keyspace.Rewind(ns))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading the tenant restore record")
	}
	var r Rewind
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "decoding the tenant restore record")
	}
	return &r, nil
}

func (e *Engine) saveRewind(ns []byte, r *Rewind) error {
	v, err := json.Marshal(r)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "encoding the tenant restore record")
	}
	b := e.db.NewBatch()
	defer b.Close()
	b.Set(keyspace.Rewind(ns), v)
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "saving the tenant restore record")
	}
	return nil
}

// loadRewindFences fences the namespaces of the restores a previous
// process left running. REQUIRES: before any request is served.
func (e *Engine) loadRewindFences() error {
	lo, hi := keyspace.Rewinds()
	it := e.db.NewIter(lo, hi)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var r Rewind
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			return apierr.Wrap(apierr.Internal, err, "decoding a tenant restore record")
		}
		if r.State == RewindRunning {
			e.fence(slices.Clone(keyspace.RewindNamespace(it.Key())), &r)
		}
	}
	return it.Error()
}

// PendingRewinds returns the restores not finished (running, or left by
// a previous process), for the caller to run them (RunRewind).
func (e *Engine) PendingRewinds() ([]Rewind, error) {
	lo, hi := keyspace.Rewinds()
	it := e.db.NewIter(lo, hi)
	defer it.Close()
	var out []Rewind
	for ok := it.First(); ok; ok = it.Next() {
		var r Rewind
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "decoding a tenant restore record")
		}
		if r.State == RewindRunning {
			out = append(out, r)
		}
	}
	return out, it.Error()
}

// RewindStatus returns the scope's namespace's restore: the running one
// or the last finished; ok is false if there has been none.
func (e *Engine) RewindStatus(ctx context.Context, s tenancy.Scope) (r Rewind, ok bool, err error) {
	if err := check(ctx, s); err != nil {
		return Rewind{}, false, err
	}
	if err := tenantOnly(s); err != nil {
		return Rewind{}, false, err
	}
	// NB: under rewindMu: RunRewind saves the done record and lifts the
	// fence under it, so a restore read as done has no fence left.
	e.rewindMu.Lock()
	defer e.rewindMu.Unlock()
	p, err := e.loadRewind(resolve.Namespace(s))
	if err != nil || p == nil {
		return Rewind{}, false, err
	}
	return *p, true, nil
}

// historyFrom returns the earliest time s's point-in-time recovery of
// h's table can restore h's namespace to: ok is false if s has not
// enabled it (or it is still being enabled).
//
// NB: only the scope's own recovery counts, never the log's coverage
// from another tenant's consumer of a shared table: that a restore works
// without it would tell that some other tenant keeps the log.
func (e *Engine) historyFrom(s tenancy.Scope, h *handle) (earliest time.Time, ok bool, err error) {
	c, ok := pitrOf(s, h.Table)
	if !ok {
		return time.Time{}, false, nil
	}
	since, _, ok := restoreWindow(c, e.opts.Now())
	if !ok {
		return time.Time{}, false, nil
	}
	trimmed, err := e.clog.TrimmedUntil(h.db, h.Namespace, h.Table.ID)
	if err != nil {
		return time.Time{}, false, apierr.Wrap(apierr.Internal, err, "reading the change log")
	}
	if trimmed.After(since) {
		since = trimmed
	}
	return since, true, nil
}

// BeginRewind starts an in-place restore of the scope's items of tables
// (every table the scope sees when empty) to time at, and returns its
// record; RunRewind does the work. From the moment it returns, the
// scope's reads and writes of those tables are refused until the restore
// finishes. Tables the namespace never held an item of are left alone
// (Skipped). Errors: ValidationException (a time in the future),
// ResourceNotFoundException (a table), PointInTimeRecoveryUnavailable
// (a table without the scope's point-in-time recovery), InvalidRestoreTime
// (a time before a table's history; the message names each such table
// and its earliest restorable time), ResourceInUse (another restore of
// the namespace is running, or is unfinished and this one does not cover
// its tables: an unfinished restore that is not running is replaced, and
// its UndoTo kept), AccessDenied (the operator).
func (e *Engine) BeginRewind(ctx context.Context, s tenancy.Scope, at time.Time, names []string, actor string) (Rewind, error) {
	if err := check(ctx, s); err != nil {
		return Rewind{}, err
	}
	if err := tenantOnly(s); err != nil {
		return Rewind{}, err
	}
	if at.IsZero() {
		return Rewind{}, apierr.Validationf("the restore time is required")
	}
	if now := e.opts.Now(); at.After(now) {
		return Rewind{}, apierr.Validationf("the restore time %s is in the future (now is %s)", at.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	ns := resolve.Namespace(s)
	e.rewindMu.Lock()
	defer e.rewindMu.Unlock()
	prev, err := e.loadRewind(ns)
	if err != nil {
		return Rewind{}, err
	}
	if prev != nil && prev.State != RewindRunning {
		prev = nil
	}
	if prev != nil {
		if _, active := e.rewinding.Load(string(ns)); active {
			return Rewind{}, apierr.New(apierr.ResourceInUse, "a restore of this tenant to %s (id %s) is running; wait for it to finish (tenant restore-status)",
				prev.At.UTC().Format(time.RFC3339Nano), prev.ID)
		}
	}
	if len(names) == 0 {
		if names, err = e.res.Visible(ctx, s); err != nil {
			return Rewind{}, err
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if prev != nil {
		// NB: an unfinished restore (stopped by an error) may be replaced
		// by another, to any time: the state at a time is computed from
		// the log whatever the current state. Its tables stay fenced, so
		// the new one must cover them.
		var missing []string
		for _, t := range prev.Tables {
			if _, ok := slices.BinarySearch(names, t.Name); !ok {
				missing = append(missing, t.Name)
			}
		}
		if len(missing) > 0 {
			return Rewind{}, apierr.New(apierr.ResourceInUse, "a restore of this tenant to %s (id %s) is not finished; a new restore must include its table(s) %s",
				prev.At.UTC().Format(time.RFC3339Nano), prev.ID, apierr.Clip(strings.Join(missing, ", ")))
		}
	}
	r := Rewind{Tenant: s.Tenant().String(), Env: s.Env(), At: at, State: RewindRunning, Actor: actor}
	var noPITR, early []string
	for _, name := range names {
		if err := schema.ValidateTableName(name); err != nil {
			return Rewind{}, err
		}
		h, err := e.openLog(ctx, s, name) // NB: an unfinished restore's fence is ours
		if err != nil {
			return Rewind{}, err
		}
		held, err := e.heldBy(h)
		if err != nil {
			h.close()
			return Rewind{}, err
		}
		if !held {
			h.close()
			r.Skipped = append(r.Skipped, name)
			continue
		}
		earliest, ok, err := e.historyFrom(s, h)
		h.close()
		switch {
		case err != nil:
			return Rewind{}, err
		case !ok:
			noPITR = append(noPITR, name)
		case at.Before(earliest):
			early = append(early, fmt.Sprintf("%s (earliest restorable time %s)", name, earliest.UTC().Format(time.RFC3339Nano)))
		default:
			r.Tables = append(r.Tables, RewindTable{Name: name, ID: h.Table.ID})
		}
	}
	switch {
	case len(noPITR) > 0:
		return Rewind{}, apierr.New(apierr.PointInTimeRecoveryUnavailable, "cannot restore to %s: point-in-time recovery is not enabled for this tenant on table(s) %s; enable it (UpdateContinuousBackups), or name the tables to restore with --table",
			at.UTC().Format(time.RFC3339Nano), apierr.Clip(strings.Join(noPITR, ", ")))
	case len(early) > 0:
		return Rewind{}, apierr.New(apierr.InvalidRestoreTime, "cannot restore to %s: it is before the history of table(s) %s",
			at.UTC().Format(time.RFC3339Nano), apierr.Clip(strings.Join(early, "; ")))
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	r.ID = hex.EncodeToString(id[:])

	// NB: fence, then the barrier: every write of the namespace to these
	// tables that got its stripes before the fence has committed, and
	// every later one sees the fence under its stripes (locked). UndoTo is
	// taken after, so every change it precedes is the restore's own.
	e.fence(ns, &r)
	e.locks.barrier()
	r.Started = e.opts.Now()
	r.UndoTo = r.Started.Truncate(time.Millisecond)
	if prev != nil {
		// NB: the tenant has been fenced since the first one began.
		r.UndoTo = prev.UndoTo
	}
	if err := e.saveRewind(ns, &r); err != nil {
		e.unfence(ns)
		return Rewind{}, err
	}
	// NB: the restore's first change record must be later than UndoTo
	// (records have millisecond times).
	for i := 0; i < 50 && e.opts.Now().UnixMilli() <= r.UndoTo.UnixMilli(); i++ {
		time.Sleep(time.Millisecond)
	}
	return r, nil
}

// heldBy reports whether h's namespace ever held an item of h's table.
func (e *Engine) heldBy(h *handle) (bool, error) {
	k := regKey(h.Table.ID, h.Namespace)
	if _, ok := e.registered.Load(string(k)); ok {
		return true, nil
	}
	_, err := e.db.Get(k)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return false, nil
	case err != nil:
		return false, apierr.Wrap(apierr.Internal, err, "reading the namespace registry")
	}
	return true, nil
}

// keyOf returns the key attributes of item, an item of t.
func keyOf(t *schema.Table, item attr.Item) attr.Item {
	k := attr.Item{t.Hash.Name: item[t.Hash.Name]}
	if t.Range.Name != "" {
		k[t.Range.Name] = item[t.Range.Name]
	}
	return k
}

// rewindChunk is how many keys one restore batch writes back: a short
// step (rewindpace.go), one WAL sync.
const rewindChunk = 25

// rewindOp is the operation a restore's writes are metered as.
const rewindOp = "RestoreTableToPointInTime"

// DefaultRewindPause is Options.RewindPause's default: a restore spends
// at most a third of its time working (rewindpace.go).
const DefaultRewindPause = 2.0

// RunRewind runs the scope's namespace's unfinished restore to its end
// and returns its final record; progress, if not nil, gets the record
// after each batch. It may be called again after an error or a crash.
// Errors: ValidationException (no unfinished restore), those of the
// change log (InvalidRestoreTime if trimming deleted history the restore
// needs), ctx's. On error the restore stays unfinished and fenced.
func (e *Engine) RunRewind(ctx context.Context, s tenancy.Scope, progress func(Rewind)) (Rewind, error) {
	if err := check(ctx, s); err != nil {
		return Rewind{}, err
	}
	if err := tenantOnly(s); err != nil {
		return Rewind{}, err
	}
	ns := resolve.Namespace(s)
	e.rewindMu.Lock()
	p, err := e.loadRewind(ns)
	if err == nil && p != nil && p.State == RewindRunning {
		if _, active := e.rewinding.LoadOrStore(string(ns), true); active {
			err = apierr.New(apierr.ResourceInUse, "the restore of this tenant (id %s) is running already", p.ID)
		} else {
			defer e.rewinding.Delete(string(ns))
		}
	}
	e.rewindMu.Unlock()
	if err != nil {
		return Rewind{}, err
	}
	if p == nil || p.State != RewindRunning {
		return Rewind{}, apierr.Validationf("this tenant has no unfinished restore")
	}
	r := *p
	r.Tables = slices.Clone(p.Tables)
	if _, ok := e.fences.Load(string(ns)); !ok {
		e.fence(ns, &r) // NB: Open fenced it; never run unfenced
	}
	err = e.runRewind(ctx, s, &r, progress)
	e.rewindMu.Lock()
	defer e.rewindMu.Unlock()
	if err != nil {
		r.Error = apierr.Clip(apierr.Message(err))
		if serr := e.saveRewind(ns, &r); serr != nil {
			e.log.Error("engine: saving a tenant restore's error", "err", serr)
		}
		return r, err
	}
	r.State, r.Error, r.Finished = RewindDone, "", e.opts.Now()
	if err := e.saveRewind(ns, &r); err != nil {
		return r, err
	}
	e.unfence(ns)
	if progress != nil {
		progress(r)
	}
	return r, nil
}

func (e *Engine) runRewind(ctx context.Context, s tenancy.Scope, r *Rewind, progress func(Rewind)) error {
	for i := range r.Tables {
		rt := &r.Tables[i]
		rt.Keys, rt.Checked, rt.Changed, rt.Done = 0, 0, 0, false
		tg, err := e.res.Open(ctx, s, rt.Name)
		if apierr.Is(err, apierr.ResourceNotFound) || err == nil && tg.Table.ID != rt.ID {
			// NB: the table was deleted (or replaced) since: nothing of
			// it to restore any more.
			rt.Done = true
			continue
		}
		if err != nil {
			return err
		}
		db, rel, err := e.storeFor(ctx, s, tg.Table)
		if err != nil {
			return err
		}
		h := &handle{Target: tg, db: db, vals: e.vals, release: rel}
		err = e.rewindTable(ctx, s, h, r, rt, progress)
		h.close()
		if err != nil {
			return err
		}
		rt.Done = true
	}
	return nil
}

// rewindTable puts every item of h's namespace changed since r.At back
// as it was then.
func (e *Engine) rewindTable(ctx context.Context, s tenancy.Scope, h *handle, r *Rewind, rt *RewindTable, progress func(Rewind)) error {
	pace := e.rewindPacer(ctx)
	if err := pace.start(); err != nil {
		return err
	}
	snap := h.db.NewSnapshot()
	past, err := e.stateAt(snap, h, r.At, pace.step)
	snap.Close()
	if perr := pace.end(); err == nil {
		err = perr
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, ErrHistoryTrimmed):
		return apierr.New(apierr.InvalidRestoreTime, "table %s's change log no longer reaches back to %s", apierr.Clip(h.Table.Name), r.At.UTC().Format(time.RFC3339Nano))
	case errors.Is(err, ErrHistoryIncomplete):
		return apierr.New(apierr.PointInTimeRecoveryUnavailable, "table %s's change log lacks the old image of a change after %s", apierr.Clip(h.Table.Name), r.At.UTC().Format(time.RFC3339Nano))
	case err != nil:
		return apierr.Wrap(apierr.Internal, err, "reading the change log")
	}
	rt.Keys = int64(len(past))
	keys := make([]string, 0, len(past))
	for k := range past {
		keys = append(keys, k)
	}
	slices.Sort(keys) // NB: key order: neighbouring keys share blocks
	t := h.Table
	for len(keys) > 0 {
		if err := pace.start(); err != nil {
			return err
		}
		n := min(rewindChunk, len(keys))
		chunk := make([]*itemWrite, 0, n)
		for _, k := range keys[:n] {
			then := past[k]
			w := &itemWrite{h: h, pk: []byte(k), rewind: true}
			if then != nil {
				w.key = keyOf(t, then)
			}
			w.new = then
			chunk = append(chunk, w)
		}
		keys = keys[n:]
		var changed int64
		err := e.locked(chunk, nil, func() error {
			for _, w := range chunk {
				switch {
				case attr.EqualItems(w.old, w.new) || w.old == nil && w.new == nil:
					// already as it was (restored before a crash, or
					// changed back since)
				case w.new == nil:
					w.del = true
					w.key = keyOf(t, w.old) // NB: the change record's keys
					changed++
				default:
					w.put = true
					changed++
				}
			}
			var staged bool // NB: charged to the tenant as its own writes
			return e.commit(chunk, e.metered(s, rewindOp, chunk, 1, &staged, nil))
		})
		if err != nil {
			return err
		}
		rt.Checked += int64(n)
		rt.Changed += changed
		if progress != nil {
			progress(*r)
		}
		if err := pace.end(); err != nil {
			return err
		}
	}
	// NB: the batches were not synced (commit): they must be durable
	// before the record saying the restore is done, and a silo store's
	// WAL is not the main store's.
	if err := h.db.SyncWAL(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "syncing the restored items")
	}
	return nil
}

// dropRewinds forgets the restores of every namespace under prefix (a
// deleted tenant's): their records and fences.
func (e *Engine) dropRewinds(prefix []byte) error {
	e.rewindMu.Lock()
	defer e.rewindMu.Unlock()
	lo := keyspace.Rewind(prefix)
	hi := keyspace.PrefixEnd(lo)
	b := e.db.NewBatch()
	defer b.Close()
	b.DeleteRange(lo, hi)
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "dropping tenant restore records")
	}
	e.fences.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), string(prefix)) {
			e.unfence([]byte(k.(string)))
		}
		return true
	})
	return nil
}
