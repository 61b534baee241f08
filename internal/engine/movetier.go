package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// A move of all of a tenant's shared tables (StartMove with no table)
// also changes the tenant's tier to where they went, so that the shared
// tables created later put its data there from the start: the tier move.
//
//  1. Its record (s mvt/: destination, the tables being moved) is saved
//     before the tables' moves start.
//  2. Once none of them runs, each must have ended in the destination;
//     otherwise the tier move fails and the tier stays. A shared table
//     created meanwhile (not in the destination) is moved too, a few
//     rounds at most.
//  3. With table creation held (e.ddl), every table of the tenant that
//     has no placement of its own yet (shared, or its own in any
//     environment) is pinned where its data is now, durably; then the
//     tier is set (the tier hook: the catalog, audited). From then on the
//     tier decides only for tables created later, which hold no data of
//     the tenant in either store.
//  4. The record is removed and the result kept with the finished moves.
//
// A crash anywhere resumes from the record: the table moves resume on
// their own; pinning again pins only tables created since (where the
// tier, old or new, put them), and setting the tier again is idempotent.

// tierRecord is a tier move in progress as persisted (s mvt/).
type tierRecord struct {
	Tenant  string    `json:"tenant"`
	To      string    `json:"to"`
	From    string    `json:"from"`
	Tables  []uint64  `json:"tables"`
	Started time.Time `json:"started"`
	Rounds  int       `json:"rounds,omitempty"`
}

func (r *tierRecord) tenant() tenancy.TenantID {
	t, _ := tenancy.ParseTenantID(r.Tenant)
	return t
}

// SetTierHook makes the engine call fn to set tenant's tier ("pool" or
// "silo") at the end of a tier move, once every table's placement is
// pinned: the catalog records it and the audit log says so. fn must be
// idempotent (a resumed tier move may call it again). A tier move waits
// for the hook to be set.
func (e *Engine) SetTierHook(fn func(ctx context.Context, tenant tenancy.TenantID, tier string) error) {
	e.mover.mu.Lock()
	e.tierHook = fn
	e.mover.mu.Unlock()
}

// startTierMove records a tier move of tenant to to, if its tier is not
// to already, and returns its record (nil: none is needed) or the tier
// move already running (run). The caller starts the table moves, then
// launches the record. REQUIRES: e.mover.mu.
func (e *Engine) startTierMove(ctx context.Context, tenant tenancy.TenantID, tables []*schema.Table, to string) (rec *tierRecord, run *moveRun, err error) {
	if r := e.mover.tiers[tenant]; r != nil {
		if st := r.status(); st.To != to {
			return nil, nil, apierr.New(apierr.ResourceInUse, "the tenant's tier is being changed to %s", st.To)
		}
		return nil, r, nil
	}
	if e.opts.Tiers == nil {
		return nil, nil, nil
	}
	silo, err := e.opts.Tiers.SiloTier(ctx, tenant)
	if err != nil {
		return nil, nil, apierr.Wrap(apierr.Internal, err, "reading the tenant's tier")
	}
	if storeName(silo) == to {
		return nil, nil, nil
	}
	rec = &tierRecord{Tenant: tenant.String(), To: to, From: storeName(silo), Started: e.opts.Now().UTC()}
	for _, t := range tables {
		rec.Tables = append(rec.Tables, t.ID)
	}
	if err := e.saveTierMove(rec); err != nil {
		return nil, nil, err
	}
	return rec, nil, nil
}

func (e *Engine) saveTierMove(rec *tierRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "encoding a tier move")
	}
	b := e.db.NewBatch()
	defer b.Close()
	b.Set(keyspace.TierMove(rec.tenant()), v)
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "saving a tier move")
	}
	return nil
}

// launchTierMove starts running rec. REQUIRES: e.mover.mu.
func (e *Engine) launchTierMove(rec tierRecord) schema.MoveStatus {
	r := &moveRun{st: schema.MoveStatus{Tier: rec.To, From: rec.From, To: rec.To, Phase: "waiting", Started: rec.Started}}
	if e.mover.tiers == nil {
		e.mover.tiers = map[tenancy.TenantID]*moveRun{}
	}
	e.mover.tiers[rec.tenant()] = r
	e.wg.Add(1)
	go e.runTierMove(r, rec)
	return r.status()
}

// resumeTierMoves starts again the tier moves recorded (Open, after
// resumeMoves).
func (e *Engine) resumeTierMoves() {
	lo, hi := keyspace.TierMoves()
	it := e.db.NewIter(lo, hi)
	var recs []tierRecord
	for ok := it.First(); ok; ok = it.Next() {
		var r tierRecord
		if err := json.Unmarshal(it.Value(), &r); err != nil || r.tenant().IsZero() {
			e.log.Error("engine: unreadable tier move record", "err", err)
			continue
		}
		recs = append(recs, r)
	}
	if err := it.Close(); err != nil {
		e.log.Error("engine: reading tier move records", "err", err)
	}
	e.mover.mu.Lock()
	defer e.mover.mu.Unlock()
	for _, r := range recs {
		e.log.Info("engine: resuming a tenant's tier move", "tenant", r.Tenant, "to", r.To)
		e.launchTierMove(r)
	}
}

func (e *Engine) runTierMove(r *moveRun, rec tierRecord) {
	defer e.wg.Done()
	tenant := rec.tenant()
	ctx, cancel := e.untilClosed()
	defer cancel()
	err := e.tierMove(ctx, r, &rec)
	if errors.Is(err, errClosing) || e.stopping() {
		// NB: the record stays: the tier move resumes when the engine opens.
		e.mover.mu.Lock()
		delete(e.mover.tiers, tenant)
		e.mover.mu.Unlock()
		return
	}
	r.update(func(st *schema.MoveStatus) {
		st.Phase, st.Finished = "done", e.opts.Now().UTC()
		if err != nil {
			st.Phase, st.Error = "failed", err.Error()
		}
	})
	st := r.status()
	if ferr := e.finishMove(tenant, 0, keyspace.TierMove(tenant), st); ferr != nil {
		e.log.Error("engine: ending a tier move", "tenant", rec.Tenant, "err", ferr)
	}
	e.log.Info("engine: tenant tier move ended", "tenant", rec.Tenant, "to", rec.To, "phase", st.Phase, "err", err)
	e.mover.mu.Lock()
	delete(e.mover.tiers, tenant)
	hook := e.moveHook
	e.mover.mu.Unlock()
	if hook != nil && !errors.Is(err, errMoveGone) {
		hook(tenant, st)
	}
}

// tierMove waits for rec's table moves, then pins placements and sets
// the tier.
func (e *Engine) tierMove(ctx context.Context, r *moveRun, rec *tierRecord) error {
	tenant := rec.tenant()
	for {
		if err := e.waitTableMoves(ctx, tenant, rec.Tables); err != nil {
			return err
		}
		if e.isDropped(tenant) {
			return errMoveGone
		}
		r.update(func(st *schema.MoveStatus) { st.Phase = "checking" })
		for _, id := range rec.Tables {
			t := e.res.ByID(id)
			if t == nil {
				continue // dropped since
			}
			in, err := e.inSilo(ctx, tenant, t)
			if err != nil {
				return err
			}
			if storeName(in) != rec.To {
				return fmt.Errorf("the tenant's data of table %s is in the %s, not the %s: the tier stays %s", t.Name, storeName(in), rec.To, rec.From)
			}
		}
		hook, err := e.waitTierHook(ctx)
		if err != nil {
			return err
		}
		e.ddl.Lock()
		var more []*schema.Table
		for _, t := range e.res.Shared() {
			if t.Isolation == tenancy.Silo || slices.Contains(rec.Tables, t.ID) {
				continue
			}
			in, err := e.inSilo(ctx, tenant, t)
			if err != nil {
				e.ddl.Unlock()
				return err
			}
			if storeName(in) != rec.To {
				more = append(more, t)
			}
		}
		if len(more) > 0 && rec.Rounds < moveRestarts {
			// Shared tables created since the move began: move them too.
			e.ddl.Unlock()
			rec.Rounds++
			for _, t := range more {
				rec.Tables = append(rec.Tables, t.ID)
			}
			if err := e.saveTierMove(rec); err != nil {
				return err
			}
			r.update(func(st *schema.MoveStatus) { st.Phase = "waiting" })
			for _, t := range more {
				if _, err := e.startMove(ctx, tenant, t, rec.To); err != nil {
					return err
				}
			}
			continue
		}
		r.update(func(st *schema.MoveStatus) { st.Phase = "setting" })
		err = e.pinPlacements(ctx, tenant)
		if err == nil {
			err = hook(ctx, tenant, rec.To)
		}
		e.ddl.Unlock()
		return err
	}
}

// waitTableMoves returns once none of tenant's moves of tables runs.
func (e *Engine) waitTableMoves(ctx context.Context, tenant tenancy.TenantID, tables []uint64) error {
	for {
		e.mover.mu.Lock()
		busy := false
		for _, id := range tables {
			busy = busy || e.mover.runs[tenantTable{tenant, id}] != nil
		}
		e.mover.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return errClosing
		}
	}
}

// waitTierHook returns the tier hook once it is set (the server sets it
// when it starts, after the engine resumed its moves).
func (e *Engine) waitTierHook(ctx context.Context) (func(context.Context, tenancy.TenantID, string) error, error) {
	for {
		e.mover.mu.Lock()
		hook := e.tierHook
		e.mover.mu.Unlock()
		if hook != nil {
			return hook, nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, errClosing
		}
	}
}

// pinPlacements gives every table of tenant that has no placement of its
// own (the shared tables and its own, in every environment; silo tables
// aside) the placement its tier gives it now, durably, so that a change
// of the tier moves none of its data. REQUIRES: e.ddl (no table is
// created meanwhile).
func (e *Engine) pinPlacements(ctx context.Context, tenant tenancy.TenantID) error {
	owned, err := e.ownedTablesOf(tenant)
	if err != nil {
		return err
	}
	b := e.db.NewBatch()
	defer b.Close()
	pins := map[tenantTable]bool{}
	for _, t := range append(slices.Clone(e.res.Shared()), owned...) {
		if t.Isolation == tenancy.Silo {
			continue
		}
		if _, ok := e.placedIn(tenant, t.ID); ok {
			continue
		}
		in, err := e.inSilo(ctx, tenant, t)
		if err != nil {
			return err
		}
		b.Set(keyspace.TablePlacement(tenant, t.ID), []byte(storeName(in)))
		pins[tenantTable{tenant, t.ID}] = in
	}
	if len(pins) == 0 {
		return nil
	}
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "pinning a tenant's table placements")
	}
	e.setPlacedAll(pins)
	return nil
}
