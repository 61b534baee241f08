package engine

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/crashpoint"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Online moves of a tenant's data of a shared table between the pool (the
// main store) and the tenant's silo store, while the tenant reads and
// writes. See DESIGN.md ("Moves between pool and silo").
//
//  1. The move is recorded (s mov/, phase copy) and holds the table's
//     change log (a log consumer), so every later change is logged.
//  2. Copy: per namespace of the tenant, from one snapshot, the items,
//     index entries, counters and change records of the table go to the
//     destination as they are stored (sealed under the same keys), with
//     the log position of the snapshot.
//  3. Catch-up: the log after that position names the keys changed since;
//     for each, the destination is made to hold the source's current item
//     (with its index entries and counter deltas, as a write would), and
//     the records are copied.
//  4. Cutover: the tenant's writers of the table are held (movegate.go),
//     the rest of the log is caught up, the destination's sequence numbers
//     raised above the source's, and the placement switched and the
//     record set to phase cleanup in one batch. Writers go on in the
//     destination.
//  5. Cleanup: once no request opened before the cutover is running, the
//     source's copy is deleted and the record removed.
//
// A crash before the switch restarts the move from the copy (the
// destination's partial copy is cleared first); after it, the cleanup is
// finished. A move that cannot finish (the table or tenant is dropped)
// clears the destination and leaves the data where it was.

const (
	storePool = "pool"
	storeSilo = "silo"

	// moveConsumer holds a moving table's change log.
	moveConsumer = "tenantdb:move"

	// moveRoundMax is how many changes the catch-up applies per round;
	// cutoverMax is the most the cutover catches up with writers held
	// (beyond, it lets them go and catches up again).
	moveRoundMax = 1000
	cutoverMax   = 5000
	// moveRestarts bounds copies restarted by definition changes.
	moveRestarts = 5
	// moveBatchBytes bounds one batch of the copy.
	moveBatchBytes = 256 << 10
	// moveRecent is how many finished moves per tenant Moves reports.
	moveRecent = 32
)

// moveRecord is a move in progress as persisted (s mov/).
type moveRecord struct {
	Tenant  string    `json:"tenant"`
	Table   uint64    `json:"table"`
	Name    string    `json:"name"`
	To      string    `json:"to"`
	Phase   string    `json:"phase"` // "copy" (source authoritative) or "cleanup"
	Started time.Time `json:"started"`
	// NS are the namespaces (hex) whose data the move copies or copied.
	NS        []string `json:"ns,omitempty"`
	BlockedMS float64  `json:"blocked_ms,omitempty"`
	Attempts  int      `json:"attempts,omitempty"`
}

const (
	phaseCopy    = "copy"
	phaseCleanup = "cleanup"
)

func (r *moveRecord) tenant() tenancy.TenantID {
	t, _ := tenancy.ParseTenantID(r.Tenant)
	return t
}

func (r *moveRecord) namespaces() [][]byte {
	var out [][]byte
	for _, s := range r.NS {
		if ns, err := hex.DecodeString(s); err == nil {
			out = append(out, ns)
		}
	}
	return out
}

// mover holds the moves running in this process.
type mover struct {
	mu    sync.Mutex
	runs  map[tenantTable]*moveRun
	tiers map[tenancy.TenantID]*moveRun // tier moves (movetier.go)
	// logMu serializes writes of the finished moves (movelog.go).
	logMu sync.Mutex
}

type moveRun struct {
	mu sync.Mutex
	st schema.MoveStatus
}

func (r *moveRun) update(fn func(*schema.MoveStatus)) {
	r.mu.Lock()
	fn(&r.st)
	r.mu.Unlock()
}

func (r *moveRun) status() schema.MoveStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

func storeName(silo bool) string {
	if silo {
		return storeSilo
	}
	return storePool
}

// StartMove moves scope s's tenant's data of the shared table named
// table ("" for every shared table that is not silo) to its silo store
// (to "silo") or to the pool (to "pool"), online, and returns at once
// with each table's move status; Moves reports progress. Only the
// operator may move a tenant. A table already where it is asked to be
// reports "unchanged"; one already moving to the same place reports its
// move. Errors: AccessDeniedException (not the operator),
// ValidationException (to, a silo table), ResourceNotFoundException,
// ResourceInUseException (moving the other way).
func (e *Engine) StartMove(ctx context.Context, s tenancy.Scope, table, to string) ([]schema.MoveStatus, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := resolve.CheckPlacement(s); err != nil {
		return nil, err
	}
	tenant := s.Tenant()
	if to != storePool && to != storeSilo {
		return nil, apierr.Validationf("move destination %q is not pool or silo", apierr.Clip(to))
	}
	if e.isDropped(tenant) {
		return nil, apierr.New(apierr.NotFound, "tenant not found")
	}
	var err error
	var tables []*schema.Table
	for _, t := range e.res.Shared() {
		if table == "" && t.Isolation != tenancy.Silo || t.Name == table {
			tables = append(tables, t)
		}
	}
	if table != "" && len(tables) == 0 {
		return nil, resolve.NotFound(table)
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i].Name < tables[j].Name })
	var tier *tierRecord
	var tierRun *moveRun
	if table == "" {
		// NB: recorded before the table moves start: a crash after them
		// still sets the tier (movetier.go).
		e.mover.mu.Lock()
		tier, tierRun, err = e.startTierMove(ctx, tenant, tables, to)
		e.mover.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	var out []schema.MoveStatus
	for _, t := range tables {
		if t.Isolation == tenancy.Silo {
			return nil, apierr.Validationf("table %s is a silo table: every tenant's data of it lives in the tenant's own store", t.Name)
		}
		st, err := e.startMove(ctx, tenant, t, to)
		if err != nil {
			if tier != nil {
				e.mover.mu.Lock()
				e.launchTierMove(*tier) // it ends as failed, with the reason
				e.mover.mu.Unlock()
			}
			return nil, err
		}
		out = append(out, st)
	}
	switch {
	case tier != nil:
		e.mover.mu.Lock()
		out = append(out, e.launchTierMove(*tier))
		e.mover.mu.Unlock()
	case tierRun != nil:
		out = append(out, tierRun.status())
	}
	return out, nil
}

func (e *Engine) startMove(ctx context.Context, tenant tenancy.TenantID, t *schema.Table, to string) (schema.MoveStatus, error) {
	tt := tenantTable{tenant, t.ID}
	e.mover.mu.Lock()
	defer e.mover.mu.Unlock()
	if r := e.mover.runs[tt]; r != nil {
		st := r.status()
		if st.To != to {
			return st, apierr.New(apierr.ResourceInUse, "the tenant's data of table %s is being moved to %s", t.Name, st.To)
		}
		return st, nil
	}
	silo, err := e.inSilo(ctx, tenant, t)
	if err != nil {
		return schema.MoveStatus{}, err
	}
	if err := e.moveFenced(tenant, t); err != nil {
		return schema.MoveStatus{}, err
	}
	now := e.opts.Now().UTC()
	if storeName(silo) == to {
		return schema.MoveStatus{Table: t.Name, From: to, To: to, Phase: "unchanged", Started: now, Finished: now}, nil
	}
	rec := moveRecord{Tenant: tenant.String(), Table: t.ID, Name: t.Name, To: to, Phase: phaseCopy, Started: now}
	if err := e.saveMove(&rec); err != nil {
		return schema.MoveStatus{}, err
	}
	return e.launchMove(rec), nil
}

// launchMove starts running rec. REQUIRES: e.mover.mu held.
func (e *Engine) launchMove(rec moveRecord) schema.MoveStatus {
	tt := tenantTable{rec.tenant(), rec.Table}
	from := storePool
	if rec.To == storePool {
		from = storeSilo
	}
	phase := "copying"
	if rec.Phase == phaseCleanup {
		phase = "cleaning"
	}
	r := &moveRun{st: schema.MoveStatus{Table: rec.Name, From: from, To: rec.To, Phase: phase, Started: rec.Started,
		Attempts: rec.Attempts, BlockedMS: rec.BlockedMS}}
	if e.mover.runs == nil {
		e.mover.runs = map[tenantTable]*moveRun{}
	}
	e.mover.runs[tt] = r
	e.wg.Add(1)
	go e.runMove(r, rec)
	return r.status()
}

func (e *Engine) saveMove(rec *moveRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "encoding a move record")
	}
	b := e.db.NewBatch()
	defer b.Close()
	b.Set(keyspace.TableMove(rec.tenant(), rec.Table), v)
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "saving a move record")
	}
	return nil
}

// resumeMoves starts again the moves the process was running when it
// stopped (Open).
func (e *Engine) resumeMoves() {
	lo, hi := keyspace.TableMoves()
	it := e.db.NewIter(lo, hi)
	var recs []moveRecord
	for ok := it.First(); ok; ok = it.Next() {
		var r moveRecord
		if err := json.Unmarshal(it.Value(), &r); err != nil || r.tenant().IsZero() {
			e.log.Error("engine: unreadable move record", "key", hex.EncodeToString(it.Key()), "err", err)
			continue
		}
		recs = append(recs, r)
	}
	if err := it.Close(); err != nil {
		e.log.Error("engine: reading move records", "err", err)
	}
	e.mover.mu.Lock()
	defer e.mover.mu.Unlock()
	for _, r := range recs {
		e.log.Info("engine: resuming a tenant move", "tenant", r.Tenant, "table", r.Name, "to", r.To, "phase", r.Phase)
		e.launchMove(r)
	}
}

// Moves returns scope s's tenant's moves: those running (its tier move
// last), then the last moveRecent finished ones (kept durably), newest
// first. Only the operator may see them.
func (e *Engine) Moves(ctx context.Context, s tenancy.Scope) ([]schema.MoveStatus, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := resolve.CheckPlacement(s); err != nil {
		return nil, err
	}
	tenant := s.Tenant()
	e.mover.mu.Lock()
	defer e.mover.mu.Unlock()
	var out []schema.MoveStatus
	for tt, r := range e.mover.runs {
		if tt.tenant == tenant {
			out = append(out, r.status())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	if r := e.mover.tiers[tenant]; r != nil {
		out = append(out, r.status())
	}
	done, err := e.moveLog(tenant)
	if err != nil {
		return nil, err
	}
	return append(out, done...), nil
}

// moveStatus returns the status of a running move of tenant's data of
// table.
func (e *Engine) moveStatus(tenant tenancy.TenantID, table uint64) (schema.MoveStatus, bool) {
	e.mover.mu.Lock()
	r := e.mover.runs[tenantTable{tenant, table}]
	e.mover.mu.Unlock()
	if r == nil {
		return schema.MoveStatus{}, false
	}
	return r.status(), true
}

// errMoveGone ends a move whose table or tenant is gone.
var errMoveGone = errors.New("engine: the table or tenant is gone")

// untilClosed returns a context that ends when the engine closes (or
// cancel is called), for background work that outlives its request.
func (e *Engine) untilClosed() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-e.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (e *Engine) runMove(r *moveRun, rec moveRecord) {
	defer e.wg.Done()
	tenant := rec.tenant()
	tt := tenantTable{tenant, rec.Table}
	ctx, cancel := e.untilClosed()
	defer cancel()
	err := e.move(ctx, r, &rec)
	if errors.Is(err, errClosing) || e.stopping() {
		// NB: the record stays: the move resumes when the engine opens.
		e.mover.mu.Lock()
		delete(e.mover.runs, tt)
		e.mover.mu.Unlock()
		return
	}
	if err != nil {
		e.log.Warn("engine: tenant move failed; rolling back", "tenant", rec.Tenant, "table", rec.Name, "to", rec.To, "err", err)
		r.update(func(st *schema.MoveStatus) {
			st.Phase, st.Error, st.Finished = "failed", err.Error(), e.opts.Now().UTC()
		})
		if rerr := e.rollbackMove(&rec, r.status()); rerr != nil {
			e.log.Error("engine: rolling back a tenant move", "tenant", rec.Tenant, "table", rec.Name, "err", rerr)
		}
	}
	st := r.status()
	e.log.Info("engine: tenant move ended", "tenant", rec.Tenant, "table", rec.Name, "to", rec.To, "phase", st.Phase,
		"items", st.Items, "changes", st.Changes, "blocked_ms", st.BlockedMS, "attempts", st.Attempts)
	e.mover.mu.Lock()
	delete(e.mover.runs, tt)
	hook := e.moveHook
	e.mover.mu.Unlock()
	if hook != nil {
		hook(tenant, st)
	}
}

// SetMoveHook makes the engine call fn when a move ends (done or failed),
// for the audit log.
func (e *Engine) SetMoveHook(fn func(tenant tenancy.TenantID, st schema.MoveStatus)) {
	e.mover.mu.Lock()
	e.moveHook = fn
	e.mover.mu.Unlock()
}

// move runs rec to its end.
func (e *Engine) move(ctx context.Context, r *moveRun, rec *moveRecord) error {
	tenant := rec.tenant()
	toSilo := rec.To == storeSilo
	src, relS, err := e.storeOf(tenant, !toSilo)
	if err != nil {
		return err
	}
	defer relS()
	if rec.Phase == phaseCleanup {
		return e.cleanupMove(ctx, r, rec, src)
	}
	dst, relD, err := e.storeOf(tenant, toSilo)
	if err != nil {
		return err
	}
	defer relD()
	if err := e.holdMoveLog(rec.Table, tenant, true); err != nil {
		return err
	}
	for restart := 0; ; restart++ {
		if restart == moveRestarts {
			return errors.New("engine: the table's definition kept changing during the move")
		}
		done, err := e.moveOnce(ctx, r, rec, src, dst)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	return e.cleanupMove(ctx, r, rec, src)
}

// nsCopy is one namespace's progress: the log position its copy has
// caught up to.
type nsCopy struct {
	ns  []byte
	cur changelog.Cursor
}

// moveOnce copies, catches up and cuts over. done is false when the copy
// must start again (the table's indexes changed).
func (e *Engine) moveOnce(ctx context.Context, r *moveRun, rec *moveRecord, src, dst *storage.DB) (done bool, err error) {
	tenant := rec.tenant()
	tt := tenantTable{tenant, rec.Table}
	t, err := e.moveTable(rec)
	if err != nil {
		return false, err
	}
	sig := indexSignature(t)
	r.update(func(st *schema.MoveStatus) { st.Phase, st.Items, st.ItemsTotal, st.Changes = "copying", 0, 0, 0 })
	var copies []*nsCopy
	copied := map[string]bool{}
	addNew := func() error {
		nss, err := e.tenantNamespaces(tenant, rec.Table)
		if err != nil {
			return err
		}
		for _, ns := range nss {
			if copied[string(ns)] {
				continue
			}
			c, err := e.copyNamespace(ctx, r, rec, t, ns, src, dst)
			if err != nil {
				return err
			}
			copied[string(ns)] = true
			copies = append(copies, c)
		}
		return nil
	}
	if err := addNew(); err != nil {
		return false, err
	}
	r.update(func(st *schema.MoveStatus) { st.Phase = "catching-up" })
	for {
		// Catch up until a round finds little to do, then cut over.
		for {
			n := 0
			for _, c := range copies {
				k, err := e.catchUp(ctx, r, t, c, src, dst, false, moveRoundMax)
				if err != nil {
					return false, err
				}
				n += k
			}
			if err := ctx.Err(); err != nil {
				return false, errClosing
			}
			if n < moveRoundMax/10 {
				break
			}
		}
		if e.moveFenced(tenant, t) != nil {
			// A restore in place runs: catch up, and cut over after it.
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return false, errClosing
			}
			continue
		}
		ok, restart, err := e.cutover(ctx, r, rec, tt, sig, &copies, addNew, src, dst)
		if err != nil || restart {
			return false, err
		}
		if ok {
			return true, nil
		}
		// Too much to catch up with writers held: catch up more.
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return false, errClosing
		}
	}
}

// moveTable returns rec's table as now published, or errMoveGone.
func (e *Engine) moveTable(rec *moveRecord) (*schema.Table, error) {
	t := e.res.ByID(rec.Table)
	if t == nil || e.isDropped(rec.tenant()) {
		return nil, errMoveGone
	}
	return t, nil
}

// indexSignature says which indexes t has and whether any is being
// backfilled: a copy made under one signature is complete only under it.
func indexSignature(t *schema.Table) string {
	var b bytes.Buffer
	for _, ix := range t.Indexes {
		fmt.Fprintf(&b, "%d:%t;", ix.No, ix.Backfilling)
	}
	return b.String()
}

// tenantNamespaces returns tenant's namespaces holding data of table.
func (e *Engine) tenantNamespaces(tenant tenancy.TenantID, table uint64) ([][]byte, error) {
	pairs, err := e.registryPairs()
	if err != nil {
		return nil, err
	}
	prefix := keyspace.Tenant(tenant)
	var out [][]byte
	for _, p := range pairs {
		if p.id == table && bytes.HasPrefix(p.ns, prefix) {
			out = append(out, p.ns)
		}
	}
	return out, nil
}

// clearNamespace deletes table's data and log of ns in db. point names
// the crash point (crashpoint) between the two, if any.
func (e *Engine) clearNamespace(db *storage.DB, ns []byte, table uint64, point string) error {
	b := db.NewBatch()
	for _, rg := range keyspace.TableRanges(ns, table) {
		b.DeleteRange(rg[0], rg[1])
	}
	err := db.Apply(b)
	b.Close()
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "clearing a moved table's data")
	}
	if point != "" {
		crashpoint.Hit(point)
	}
	if err := e.clog.Forget(db, ns, table); err != nil {
		return apierr.Wrap(apierr.Internal, err, "clearing a moved table's log")
	}
	return nil
}

// copyNamespace copies ns's data of t from a snapshot of src into dst
// (cleared first) and returns the log position of the snapshot.
func (e *Engine) copyNamespace(ctx context.Context, r *moveRun, rec *moveRecord, t *schema.Table, ns []byte, src, dst *storage.DB) (*nsCopy, error) {
	h := hex.EncodeToString(ns)
	if !slices.Contains(rec.NS, h) {
		// NB: recorded before anything is copied: a rollback clears every
		// namespace the destination may hold.
		rec.NS = append(rec.NS, h)
		if err := e.saveMove(rec); err != nil {
			return nil, err
		}
	}
	if err := e.clearNamespace(dst, ns, t.ID, ""); err != nil {
		return nil, err
	}
	snap, at, _, err := e.clog.SnapshotAt(src, ns, t.ID)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "opening a snapshot to move")
	}
	defer snap.Close()
	total, _ := snap.Counter(keyspace.Counter(ns, t.ID, 0, counterItems))
	r.update(func(st *schema.MoveStatus) { st.ItemsTotal += total })
	b := dst.NewBatch()
	defer func() { b.Close() }()
	began := time.Now()
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		// NB: unsynced: the cutover's synced batches (Adopt, then the
		// switch in the main store) come after and make it durable; a
		// crash before the switch copies again.
		if err := dst.ApplyNoSync(b); err != nil {
			return apierr.Wrap(apierr.Internal, err, "copying a moved table's data")
		}
		b.Close()
		b = dst.NewBatch()
		// The copy rests as long as it worked: it takes at most half of
		// the machine from the writers of every tenant.
		select {
		case <-time.After(time.Since(began)):
		case <-ctx.Done():
		}
		began = time.Now()
		return ctx.Err()
	}
	items := keyspace.Items(ns, t.ID)
	for _, rg := range keyspace.TableRanges(ns, t.ID) {
		isItems := bytes.Equal(rg[0], items)
		it := snap.NewIter(rg[0], rg[1])
		var n int64
		for ok := it.First(); ok; ok = it.Next() {
			b.Set(it.Key(), it.Value())
			if isItems {
				n++
			}
			if b.Size() >= moveBatchBytes {
				r.update(func(st *schema.MoveStatus) { st.Items += n })
				n = 0
				if err := flush(); err != nil {
					it.Close()
					return nil, moveCtxErr(err)
				}
			}
		}
		if err := it.Close(); err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading a moved table's data")
		}
		r.update(func(st *schema.MoveStatus) { st.Items += n })
	}
	if err := e.clog.CopyTable(snap, b, ns, t.ID, flush); err != nil {
		return nil, moveCtxErr(err)
	}
	if err := flush(); err != nil {
		return nil, moveCtxErr(err)
	}
	return &nsCopy{ns: ns, cur: at}, nil
}

func moveCtxErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return errClosing
	}
	return err
}

// catchUp applies to dst up to limit logged changes of c's namespace
// after its cursor and returns how many it applied. settled says the
// table's writers are held (the cutover): every record is then read,
// whatever else of the namespace is committing.
func (e *Engine) catchUp(ctx context.Context, r *moveRun, t *schema.Table, c *nsCopy, src, dst *storage.DB, settled bool, limit int) (int, error) {
	var page changelog.FollowPage
	var err error
	if settled {
		page, err = e.clog.FollowSettled(src, c.ns, t.ID, c.cur, limit)
	} else {
		page, err = e.clog.Follow(src, c.ns, t.ID, c.cur, limit)
	}
	if err != nil {
		return 0, apierr.Wrap(apierr.Internal, err, "reading the change log of a moving table")
	}
	if len(page.Entries) == 0 {
		return 0, nil
	}
	b := dst.NewBatch()
	defer b.Close()
	seen := map[string]bool{}
	h := &handle{Target: resolve.Background(t, c.ns), db: dst, vals: e.vals}
	for _, en := range page.Entries {
		if err := e.clog.CopyRecord(src, b, c.ns, t.ID, en); err != nil {
			return 0, apierr.Wrap(apierr.Internal, err, "copying a change record")
		}
		pk := itemKey(t, c.ns, en.Keys)
		if seen[string(pk)] {
			continue // NB: one write per key and batch: stage reads dst's current item
		}
		seen[string(pk)] = true
		if err := e.copyItem(b, h, src, en.Keys, pk); err != nil {
			return 0, err
		}
	}
	if err := dst.ApplyNoSync(b); err != nil {
		return 0, apierr.Wrap(apierr.Internal, err, "applying a moving table's changes")
	}
	c.cur = page.Next
	n := len(page.Entries)
	r.update(func(st *schema.MoveStatus) { st.Changes += int64(n) })
	return n, ctx.Err()
}

// copyItem stages into b (of h's store) the write that makes h's store
// hold src's current item at pk: the item, its index entries and the
// counter deltas, as any write; no change record (the source's are
// copied).
func (e *Engine) copyItem(b *storage.Batch, h *handle, src *storage.DB, key attr.Item, pk []byte) error {
	cur, err := readItem(e.vals, src, pk)
	if err != nil {
		return err
	}
	old, err := readItem(e.vals, h.db, pk)
	if err != nil {
		return err
	}
	if cur == nil && old == nil {
		return nil
	}
	w := &itemWrite{h: h, key: key, pk: pk, found: old != nil, old: old, put: cur != nil, del: cur == nil, new: cur}
	if old != nil {
		w.oldSize = attr.ItemSize(old)
	}
	return e.stage(b, w)
}

// cutover holds the tenant's writers of the table, catches up the rest of
// the log and switches the placement. ok false: too much was left with
// writers held (they were let go; catch up more and try again); restart:
// the table's indexes changed, copy again.
func (e *Engine) cutover(ctx context.Context, r *moveRun, rec *moveRecord, tt tenantTable, sig string, copies *[]*nsCopy,
	addNew func() error, src, dst *storage.DB) (ok, restart bool, err error) {
	r.update(func(st *schema.MoveStatus) { st.Phase, st.Attempts = "cutover", st.Attempts+1 })
	rec.Attempts++
	start := time.Now()
	e.closeGate(tt)
	defer e.openGate(tt)
	// NB: after the barrier no write of the tenant's data of the table is
	// committing, and none starts until the gate opens (moveCheck).
	e.locks.barrier()
	t, err := e.moveTable(rec)
	if err != nil {
		return false, false, err
	}
	if indexSignature(t) != sig {
		return false, true, nil
	}
	if e.moveFenced(tt.tenant, t) != nil {
		// NB: a restore in place runs: cut over once it is done (its
		// changes are in the log the catch-up follows).
		r.update(func(st *schema.MoveStatus) { st.Phase = "catching-up" })
		return false, false, nil
	}
	// A namespace that began writing the table since: copied now (small).
	if err := addNew(); err != nil {
		return false, false, err
	}
	left := cutoverMax
	for _, c := range *copies {
		for {
			n, err := e.catchUp(ctx, r, t, c, src, dst, true, moveRoundMax)
			if err != nil {
				return false, false, err
			}
			if n == 0 {
				break
			}
			if left -= n; left <= 0 {
				r.update(func(st *schema.MoveStatus) { st.Phase = "catching-up" })
				return false, false, nil
			}
		}
	}
	for _, c := range *copies {
		if err := e.clog.Adopt(src, dst, c.ns, t.ID); err != nil {
			return false, false, apierr.Wrap(apierr.Internal, err, "moving a table's change log")
		}
	}
	// The switch: placement and phase in one synced batch of the main
	// store, after the destination's last (synced) batch.
	blocked := time.Since(start)
	rec.Phase = phaseCleanup
	rec.BlockedMS = float64(blocked.Microseconds()) / 1000
	v, err := json.Marshal(rec)
	if err != nil {
		return false, false, apierr.Wrap(apierr.Internal, err, "encoding a move record")
	}
	b := e.db.NewBatch()
	defer b.Close()
	b.Set(keyspace.TablePlacement(tt.tenant, tt.table), []byte(rec.To))
	b.Set(keyspace.TableMove(tt.tenant, tt.table), v)
	if err := e.db.Apply(b); err != nil {
		rec.Phase = phaseCopy
		return false, false, apierr.Wrap(apierr.Internal, err, "switching a moved table's placement")
	}
	crashpoint.Hit(crashpoint.MoveCutover)
	e.setPlaced(tt, rec.To == storeSilo, false)
	e.bumpGen()
	for _, c := range *copies {
		e.clog.Wake(src, c.ns)
	}
	blocked = time.Since(start)
	r.update(func(st *schema.MoveStatus) {
		st.Phase, st.BlockedMS = "cleaning", float64(blocked.Microseconds())/1000
	})
	return true, false, nil
}

// cleanupMove deletes the source's copy once no request that may read it
// is running, releases the log and ends the move.
func (e *Engine) cleanupMove(ctx context.Context, r *moveRun, rec *moveRecord, src *storage.DB) error {
	r.update(func(st *schema.MoveStatus) { st.Phase = "cleaning" })
	if err := e.waitHandles(ctx, e.moves.gen.Load()); err != nil {
		return moveCtxErr(err)
	}
	for _, ns := range rec.namespaces() {
		if err := e.clearNamespace(src, ns, rec.Table, crashpoint.MoveCleanup); err != nil {
			return err
		}
	}
	if err := e.holdMoveLog(rec.Table, rec.tenant(), false); err != nil && !errors.Is(err, errMoveGone) {
		return err
	}
	r.update(func(st *schema.MoveStatus) { st.Phase, st.Finished = "done", e.opts.Now().UTC() })
	return e.endMove(rec, r.status())
}

// endMove removes rec's record and records st, its end, in the tenant's
// history (movelog.go).
func (e *Engine) endMove(rec *moveRecord, st schema.MoveStatus) error {
	return e.finishMove(rec.tenant(), rec.Table, keyspace.TableMove(rec.tenant(), rec.Table), st)
}

// rollbackMove undoes a move that did not switch: the destination's copy
// is deleted, the log released, the record removed. A move that switched
// is finished instead (its data is in the destination).
func (e *Engine) rollbackMove(rec *moveRecord, st schema.MoveStatus) error {
	tenant := rec.tenant()
	if rec.Phase == phaseCleanup {
		return nil // the record stays; the cleanup resumes at the next Open
	}
	if !e.isDropped(tenant) {
		dst, rel, err := e.storeOf(tenant, rec.To == storeSilo)
		if err != nil {
			return err
		}
		defer rel()
		for _, ns := range rec.namespaces() {
			if err := e.clearNamespace(dst, ns, rec.Table, ""); err != nil {
				return err
			}
		}
	}
	if err := e.holdMoveLog(rec.Table, tenant, false); err != nil && !errors.Is(err, errMoveGone) {
		return err
	}
	return e.endMove(rec, st)
}

// holdMoveLog adds (hold) or removes the move's consumer of table's log
// (as RetainLog and ReleaseLog do for a scope's consumers).
func (e *Engine) holdMoveLog(table uint64, tenant tenancy.TenantID, hold bool) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	t := e.res.ByID(table)
	if t == nil {
		return errMoveGone
	}
	want := schema.LogConsumer{Tenant: tenant, Env: "", Name: moveConsumer}
	i, found := slices.BinarySearchFunc(t.LogConsumers, want, compareConsumers)
	if !hold {
		if !found {
			return nil
		}
		c := t.Clone()
		c.LogConsumers = slices.Delete(c.LogConsumers, i, i+1)
		if len(c.LogConsumers) == 0 {
			c.LogConsumers = nil
			c.HiddenStream = 0
		}
		return e.publishLog(t, c)
	}
	if found && !t.LogConsumers[i].Since.IsZero() {
		return nil
	}
	c := t.Clone()
	if !found {
		c.LogConsumers = slices.Insert(c.LogConsumers, i, want)
	}
	if logStream(c) == 0 {
		if err := e.newHiddenStream(c); err != nil {
			return err
		}
	}
	if err := e.publishLog(t, c); err != nil {
		return err
	}
	// NB: Since after publishLog's barrier: every later change is logged.
	d := c.Clone()
	d.LogConsumers[i].Since = e.opts.Now()
	return e.persist(d)
}

// forgetPlacements deletes tenant t's placement overrides, move records
// and finished moves (DropTenant): a tenant created again with the same id starts
// where its tier says.
func (e *Engine) forgetPlacements(t tenancy.TenantID) error {
	// NB: with logMu: a move ending now records its end before (deleted
	// here) or not at all (the tenant is marked dropped).
	e.mover.logMu.Lock()
	defer e.mover.logMu.Unlock()
	b := e.db.NewBatch()
	defer b.Close()
	for _, p := range keyspace.TenantMoveKeys(t) {
		b.DeleteRange(p, keyspace.PrefixEnd(p))
	}
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "dropping a tenant's placements")
	}
	e.moves.mu.Lock()
	m := map[tenantTable]bool{}
	if old := e.moves.placed.Load(); old != nil {
		for k, v := range *old {
			if k.tenant != t {
				m[k] = v
			}
		}
	}
	e.moves.placed.Store(&m)
	e.moves.mu.Unlock()
	return nil
}

// moveFenced refuses (ResourceInUse) while a restore in place of the
// table runs in one of tenant's namespaces (rewind.go).
func (e *Engine) moveFenced(tenant tenancy.TenantID, t *schema.Table) error {
	nss, err := e.tenantNamespaces(tenant, t.ID)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		if err := e.fenced(ns, t); err != nil {
			return err
		}
	}
	return nil
}
