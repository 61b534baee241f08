package aggregate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// worker maintains one aggregate. It is the only writer of the
// aggregate's groups and progress while it runs.
type worker struct {
	svc    *Service
	ns     []byte
	tenant tenancy.TenantID
	env    string
	def    *Definition
	c      *compiled

	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // a rebuild was requested

	rebuildMu  sync.Mutex
	rebuildReq chan chan error // requestRebuild's acknowledgements

	scanned atomic.Uint64 // items read by the running rebuild

	groups groupCache // owned by follow

	mu          sync.Mutex
	caughtUp    bool
	behindSince time.Time // commit time of the oldest change read but not yet folded in
	lastErr     string
	waitCancel  context.CancelFunc
}

// status returns how far behind the worker is (ms) and its last error.
func (w *worker) status(now time.Time) (int64, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.caughtUp || w.behindSince.IsZero() {
		return 0, w.lastErr
	}
	return max(0, now.Sub(w.behindSince).Milliseconds()), w.lastErr
}

func (w *worker) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.lastErr = ""
	} else {
		w.lastErr = apierr.Message(err)
	}
}

// rebuildWait bounds how long requestRebuild waits for the worker.
const rebuildWait = 10 * time.Second

// requestRebuild makes the worker rebuild; it returns once the request is
// persisted (a restart resumes it).
func (w *worker) requestRebuild(ctx context.Context) error {
	ack := make(chan error, 1)
	w.rebuildMu.Lock()
	if w.rebuildReq == nil {
		w.rebuildReq = make(chan chan error, 1)
	}
	req := w.rebuildReq
	w.rebuildMu.Unlock()
	// NB: a worker that is failing (its table gone, say) never takes
	// the request; say so instead of holding the caller.
	busy := time.NewTimer(rebuildWait)
	defer busy.Stop()
	select {
	case req <- ack:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return apierr.New(apierr.ServiceUnavailable, "the aggregate is stopping")
	case <-busy.C:
		_, last := w.status(time.Now())
		return apierr.New(apierr.ServiceUnavailable, "the aggregate's worker did not take the rebuild within %s (last error: %q); try again", rebuildWait, last)
	}
	w.mu.Lock()
	if w.waitCancel != nil {
		w.waitCancel()
	}
	w.mu.Unlock()
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return apierr.New(apierr.ServiceUnavailable, "the aggregate is stopping")
	}
}

func (w *worker) pendingRebuild() chan error {
	w.rebuildMu.Lock()
	if w.rebuildReq == nil {
		w.rebuildReq = make(chan chan error, 1)
	}
	req := w.rebuildReq
	w.rebuildMu.Unlock()
	select {
	case ack := <-req:
		return ack
	default:
		return nil
	}
}

func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := w.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errRetired) || errors.Is(err, errNoAggregate) {
			// Its tenant is being deleted, or it is gone (with its
			// tenant's range): nothing to maintain.
			w.setErr(err)
			return
		}
		w.setErr(err)
		w.svc.log.Warn("aggregate worker failed; retrying", "aggregate", w.def.Name, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// follow folds the log into the aggregate until ctx ends or an error.
func (w *worker) follow(ctx context.Context) error {
	svc := w.svc
	sc := svc.o.Scope(w.tenant, w.env)
	table := w.def.Table
	if err := svc.o.Log.RetainLog(ctx, sc, table, consumer(w.def.Name)); err != nil {
		return err
	}
	p, err := svc.st.progress(w.ns, w.def.Name)
	if err != nil {
		return err
	}
	if p.State == stateBuilding {
		if err := w.rebuild(ctx, sc, p); err != nil {
			return err
		}
	} else if err := w.materializeAll(ctx, sc, nil); err != nil {
		// NB: after a restart the items may lag the groups (the server
		// stopped between the batch and the item writes): write them all.
		w.setErr(err)
	}
	cur, err := p.cursor()
	if err != nil {
		return err
	}
	w.groups.reset()
	var nextRead time.Time // under load, after a page not full, the next read waits for the window
	pace := changelog.Pacer{Window: svc.o.Window}
	for {
		if ack := w.pendingRebuild(); ack != nil {
			p.State = stateBuilding
			err := w.write(func() error { return svc.st.setProgress(w.ns, w.def.Name, p) })
			ack <- err
			if err != nil {
				return err
			}
			if err := w.rebuild(ctx, sc, p); err != nil {
				return err
			}
			if cur, err = p.cursor(); err != nil {
				return err
			}
			continue
		}
		if d := time.Until(nextRead); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		readAt := time.Now()
		page, err := svc.o.Log.FollowLog(ctx, sc, table, cur, svc.o.PageSize)
		if apierr.Is(err, apierr.TrimmedDataAccess) {
			// NB: the changes after our cursor are gone: only a rebuild
			// from the items can make the groups right again.
			svc.log.Warn("aggregate fell behind the log's retention; rebuilding", "aggregate", w.def.Name)
			if err := w.rebuild(ctx, sc, p); err != nil {
				return err
			}
			if cur, err = p.cursor(); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if len(page.Entries) > 0 {
			w.mu.Lock()
			w.caughtUp = false
			w.behindSince = page.Entries[0].Time
			w.mu.Unlock()
		}
		if len(page.Entries) > 0 || page.Next != cur {
			if err := w.apply(ctx, sc, p, &page); err != nil {
				return err
			}
			cur = page.Next
		}
		w.setErr(nil)
		// NB: a page that is not full folded every change committed so
		// far; under load (changelog.Pacer) the next read waits for the
		// window, so that one batch carries many commits' changes. A
		// full page is a backlog: read on at once.
		full := len(page.Entries) == svc.o.PageSize
		nextRead = pace.Next(readAt, len(page.Entries), full)
		if full {
			continue
		}
		if len(page.Entries) > 0 {
			w.mu.Lock()
			w.caughtUp = page.CaughtUp
			w.mu.Unlock()
			continue
		}
		// NB: an empty page waits for a commit even when not CaughtUp:
		// that only says a change of the namespace (any table) is being
		// committed, and reading again at once would spin while the
		// tenant writes.
		w.mu.Lock()
		w.caughtUp = true
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		w.waitCancel = cancel
		w.mu.Unlock()
		err = svc.o.Log.WaitLog(wctx, sc, table, cur)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
}

// apply folds a page into the groups and commits them with the new
// cursor in one batch, then writes the materialised items it changed.
func (w *worker) apply(ctx context.Context, sc tenancy.Scope, p *progress, page *FollowPage) error {
	svc := w.svc
	read := func(k string) (*groupState, error) { return svc.st.group(w.ns, w.def.Name, k) }
	f := newFold(w.c, w.tenant.String(), func(k string) (*groupState, error) { return w.groups.load(k, read) })
	np := *p
	np.Skip = slices.Clone(p.Skip)
	for i := range page.Entries {
		e := &page.Entries[i]
		if j := slices.Index(np.Skip, e.Seq); j >= 0 {
			// NB: the rebuild's snapshot already holds this change.
			np.Skip = slices.Delete(np.Skip, j, j+1)
			continue
		}
		if err := f.apply(e); err != nil {
			return err
		}
		np.Applied++
		np.Last = e.Time.UnixMilli()
	}
	if n := len(page.Entries); n > 0 {
		// Numbers below the last one read will not come again.
		last := page.Entries[n-1].Seq
		np.Skip = slices.DeleteFunc(np.Skip, func(s uint64) bool { return s <= last })
	}
	np.Cursor = page.Next.String()
	if len(np.Skip) == 0 {
		np.Skip = nil
	}
	if err := w.write(func() error { return svc.st.commit(w.ns, w.def.Name, f.touched, &np, false, false) }); err != nil {
		w.groups.reset()
		return err
	}
	w.groups.committed(f.touched)
	*p = np
	now := svc.o.Now()
	for i := range page.Entries {
		svc.metrics.observe(now.Sub(page.Entries[i].Time))
	}
	if len(w.def.Item) > 0 && len(f.touched) > 0 {
		if err := w.materialize(ctx, sc, f.touched); err != nil {
			w.setErr(err)
			svc.log.Warn("writing an aggregate's items failed", "aggregate", w.def.Name, "err", err)
		}
	}
	return nil
}

// write runs write, a write of the aggregate's state, only while its
// tenant is not retired and its definition exists.
//
// NB: the tenant's deletion retires it (Service.RetireTenant) before
// deleting its range, and the aggregate's deletion stops the worker
// before removing it; the lookup catches a range deleted otherwise. So
// no write of the worker lands in a deleted tenant's range.
func (w *worker) write(write func() error) error {
	return w.svc.fenced(w.tenant, func() error {
		if _, err := w.svc.st.definition(w.ns, w.def.Name); err != nil {
			return err
		}
		return write()
	})
}

// rebuild recomputes the groups from one consistent snapshot of the
// table's items and sets the cursor to the snapshot's log position, all
// in one batch; p becomes the new progress.
func (w *worker) rebuild(ctx context.Context, sc tenancy.Scope, p *progress) error {
	svc := w.svc
	w.groups.reset() // NB: the rebuild replaces every group
	old, err := svc.st.groups(w.ns, w.def.Name)
	if err != nil {
		return err
	}
	f := newFold(w.c, w.tenant.String(), func(string) (*groupState, error) { return nil, nil })
	w.scanned.Store(0)
	at, included, err := svc.o.Log.SnapshotLog(ctx, sc, w.def.Table, func(it attr.Item) error {
		w.scanned.Add(1)
		if w.c.ownItem(w.tenant.String(), project(it, w.def.Item)) {
			return nil
		}
		return f.change(nil, it)
	})
	if err != nil {
		return err
	}
	np := &progress{
		State: stateReady, Cursor: at.String(),
		Rebuilt: svc.o.Now().UTC().Truncate(time.Millisecond), Rebuilds: p.Rebuilds + 1, Scanned: w.scanned.Load(),
	}
	for _, c := range included {
		if c.Seq > at.Seq {
			np.Skip = append(np.Skip, c.Seq)
		}
	}
	slices.Sort(np.Skip)
	if err := w.write(func() error { return svc.st.commit(w.ns, w.def.Name, f.touched, np, true, true) }); err != nil {
		return err
	}
	*p = *np
	if len(w.def.Item) > 0 {
		if err := w.materializeAll(ctx, sc, old); err != nil {
			w.setErr(err)
		}
	}
	return nil
}

// project returns it's attributes named in tmpl (the key attributes of
// materialised items).
func project(it attr.Item, tmpl map[string]string) attr.Item {
	if len(tmpl) == 0 {
		return nil
	}
	k := attr.Item{}
	for a := range tmpl {
		if v, ok := it[a]; ok {
			k[a] = v
		}
	}
	return k
}

// materializeAll writes every group's item and deletes the items of the
// groups in stale that no longer exist.
func (w *worker) materializeAll(ctx context.Context, sc tenancy.Scope, stale map[string]*groupState) error {
	if len(w.def.Item) == 0 {
		return nil
	}
	gs, err := w.svc.st.groups(w.ns, w.def.Name)
	if err != nil {
		return err
	}
	for k := range stale {
		if _, ok := gs[k]; !ok {
			gs[k] = &groupState{}
		}
	}
	return w.materialize(ctx, sc, gs)
}

// materialize writes the items of groups (an empty group's is deleted)
// through the engine, as the application reads them.
func (w *worker) materialize(ctx context.Context, sc tenancy.Scope, groups map[string]*groupState) error {
	tables := w.svc.o.Tables
	var first error
	for k, g := range groups {
		var err error
		if g.empty() {
			_, err = tables.DeleteItem(ctx, sc, &wire.DeleteItemInput{TableName: w.def.Table, Key: w.c.itemKey(w.tenant.String(), k)})
		} else {
			var it attr.Item
			if it, err = w.c.item(w.tenant.String(), k, g); err == nil {
				_, err = tables.PutItem(ctx, sc, &wire.PutItemInput{TableName: w.def.Table, Item: it})
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}
