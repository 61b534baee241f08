// Package rewind runs in-place restores of one tenant environment to a
// past time (`tenantdb tenant restore`, POST /v1/tenants/{id}/restore):
// the engine fences the tables and rewinds them from their change log
// (engine/rewind.go), or, on a gateway over a remote engine, from that
// engine's point-in-time recovery (remote/rewind.go, where any gateway
// may resume a restore another left: Claimer, Options.Poll); this
// package starts the work in the background,
// shows its progress, resumes the restores a previous process left
// unfinished, and audits the start, the end and every failure in the
// tenant's audit log and in the platform log.
package rewind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Engine restores a tenant environment's items in place (the embedded
// engine, or the remote backend).
type Engine interface {
	BeginRewind(ctx context.Context, s tenancy.Scope, at time.Time, tables []string, actor string) (engine.Rewind, error)
	RunRewind(ctx context.Context, s tenancy.Scope, progress func(engine.Rewind)) (engine.Rewind, error)
	RewindStatus(ctx context.Context, s tenancy.Scope) (engine.Rewind, bool, error)
	PendingRewinds() ([]engine.Rewind, error)
}

// Claimer is an Engine whose restores any of several processes may run
// (gateways over a remote engine, internal/remote): ClaimRewind takes the
// scope's unfinished restore for this process, false if another runs it.
// Such an engine's PendingRewinds returns only the restores it claimed.
type Claimer interface {
	ClaimRewind(ctx context.Context, s tenancy.Scope) (bool, error)
}

// Options name what a restore touches. Audit is required; Engine nil
// means a server whose items live where restores cannot be made in
// place, where they are refused.
type Options struct {
	Engine Engine
	Audit  *audit.Log
	Logger *slog.Logger
	// Poll, if positive, is how often the service looks for restores
	// another process left unfinished (Resume), besides at its start: a
	// fleet of gateways, where the process that ran one may have been
	// killed while this one runs.
	Poll time.Duration
}

// Service runs in-place tenant restores.
type Service struct {
	o      Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// running holds the restores being run in this process (tenant/env ->
	// their latest progress).
	running map[string]engine.Rewind
}

// New returns the restore service.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{o: o, ctx: ctx, cancel: cancel, running: map[string]engine.Rewind{}}
	if o.Poll > 0 && o.Engine != nil {
		s.wg.Add(1)
		go s.poll()
	}
	return s
}

// poll runs Resume every Options.Poll until Close.
func (s *Service) poll() {
	defer s.wg.Done()
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.Resume(); err != nil && s.ctx.Err() == nil {
				s.o.Logger.Warn("rewind: looking for restores to resume", "err", err)
			}
		}
	}
}

func nsKey(t, env string) string { return t + "/" + env }

// dataScope refuses the operator, which has no access to tenant data.
func (s *Service) dataScope(sc tenancy.Scope) error {
	if sc.IsOperator() || sc.Tenant().IsZero() {
		return apierr.New(apierr.AccessDenied, "the operator credential has no access to tenant data: restore with an admin key of the tenant (the tenantdb CLI mints a short-lived one when given the operator's)")
	}
	if s.o.Engine == nil {
		return apierr.Validationf("in-place tenant restore is not available on this server")
	}
	return nil
}

// Start starts an in-place restore of the scope's tenant environment and
// returns at once; the rewind runs in the background (Status shows its
// progress). An unfinished restore asked for again with the same time
// and tables is resumed; one stopped by an error may be replaced by
// another (to its undo_to, say), which keeps its undo_to. actor and role name who asked, for the audit
// records. Errors: those of engine.BeginRewind; AccessDenied for the
// operator.
func (s *Service) Start(ctx context.Context, sc tenancy.Scope, req client.RestoreRequest, actor, role string) (client.TenantRestore, error) {
	if err := s.dataScope(sc); err != nil {
		return client.TenantRestore{}, err
	}
	s.mu.Lock()
	cur, running := s.running[nsKey(sc.Tenant().String(), sc.Env())]
	s.mu.Unlock()
	if running {
		if cur.At.Equal(req.ToTime) && sameTables(cur, req.Tables) {
			return s.Status(ctx, sc) // the same restore, being run
		}
		return client.TenantRestore{}, apierr.New(apierr.ResourceInUse, "a restore of this tenant to %s (id %s) is running; wait for it to finish (tenant restore-status)",
			cur.At.UTC().Format(time.RFC3339Nano), cur.ID)
	}
	if p, ok, err := s.o.Engine.RewindStatus(ctx, sc); err != nil {
		return client.TenantRestore{}, err
	} else if ok && p.State == engine.RewindRunning && p.At.Equal(req.ToTime) && sameTables(p, req.Tables) {
		if c, fleet := s.o.Engine.(Claimer); fleet {
			if mine, err := c.ClaimRewind(ctx, sc); err != nil {
				return client.TenantRestore{}, err
			} else if !mine {
				return s.Status(ctx, sc) // the same restore, run by another process
			}
		}
		s.event(ctx, sc, audit.Event{Actor: actor, Role: role, Action: "tenant.restore.resume", Target: target(p), Source: audit.Source(ctx)})
		s.start(sc, p)
		return s.Status(ctx, sc)
	}
	r, err := s.o.Engine.BeginRewind(ctx, sc, req.ToTime, req.Tables, actor)
	if err != nil {
		s.event(ctx, sc, audit.Event{Actor: actor, Role: role, Action: "tenant.restore", Outcome: audit.OutcomeError,
			Target: "to " + req.ToTime.UTC().Format(time.RFC3339Nano), Reason: apierr.Clip(apierr.Message(err)), Source: audit.Source(ctx)})
		return client.TenantRestore{}, err
	}
	s.event(ctx, sc, audit.Event{Actor: actor, Role: role, Action: "tenant.restore", Target: target(r), Source: audit.Source(ctx)})
	s.start(sc, r)
	return s.Status(ctx, sc)
}

func sameTables(r engine.Rewind, asked []string) bool {
	if len(asked) == 0 {
		return true
	}
	var have []string
	for _, t := range r.Tables {
		have = append(have, t.Name)
	}
	have = append(have, r.Skipped...)
	asked = slices.Clone(asked)
	slices.Sort(asked)
	slices.Sort(have)
	return slices.Equal(slices.Compact(asked), have)
}

// target is what the audit records say of r.
func target(r engine.Rewind) string {
	var names []string
	for _, t := range r.Tables {
		names = append(names, t.Name)
	}
	return apierr.Clip(fmt.Sprintf("restore %s to %s: tables %s; undo with --to-time %s", r.ID,
		r.At.UTC().Format(time.RFC3339Nano), strings.Join(names, ","), r.UndoTo.UTC().Format(time.RFC3339Nano)))
}

// Status returns the scope's tenant environment's restore: the running
// one or the last. Errors: NotFound if there has been none;
// AccessDenied for the operator.
func (s *Service) Status(ctx context.Context, sc tenancy.Scope) (client.TenantRestore, error) {
	if err := s.dataScope(sc); err != nil {
		return client.TenantRestore{}, err
	}
	r, ok, err := s.o.Engine.RewindStatus(ctx, sc)
	if err != nil {
		return client.TenantRestore{}, err
	}
	if !ok {
		return client.TenantRestore{}, apierr.New(apierr.NotFound, "this tenant has not been restored")
	}
	s.mu.Lock()
	p, running := s.running[nsKey(sc.Tenant().String(), sc.Env())]
	if running && p.ID == r.ID && r.State == engine.RewindRunning {
		r = p // NB: fresher progress than the record
	}
	s.mu.Unlock()
	return view(r, running), nil
}

func view(r engine.Rewind, running bool) client.TenantRestore {
	out := client.TenantRestore{ID: r.ID, Tenant: r.Tenant, Env: r.Env, ToTime: r.At, UndoTo: r.UndoTo, Started: r.Started,
		State: r.State, Running: running && r.State == engine.RewindRunning, Skipped: r.Skipped, Error: r.Error, Tables: []client.RestoreTable{}}
	if !r.Finished.IsZero() {
		f := r.Finished
		out.Finished = &f
	}
	for _, t := range r.Tables {
		out.Tables = append(out.Tables, client.RestoreTable{Name: t.Name, Keys: t.Keys, Checked: t.Checked, Changed: t.Changed, Done: t.Done})
	}
	return out
}

// start runs the scope's unfinished restore in the background unless it
// runs already.
func (s *Service) start(sc tenancy.Scope, r engine.Rewind) {
	key := nsKey(sc.Tenant().String(), sc.Env())
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.running[key]; ok || s.ctx.Err() != nil {
		return
	}
	s.running[key] = r
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		final, err := s.o.Engine.RunRewind(s.ctx, sc, func(p engine.Rewind) {
			s.mu.Lock()
			p.Tables = slices.Clone(p.Tables)
			s.running[key] = p
			s.mu.Unlock()
		})
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
		switch {
		case err == nil:
			var changed, keys int64
			for _, t := range final.Tables {
				changed += t.Changed
				keys += t.Keys
			}
			s.event(s.ctx, sc, audit.Event{Actor: "system", Action: "tenant.restore.done",
				Target: apierr.Clip(fmt.Sprintf("restore %s to %s: %d keys changed since, %d items written back or deleted; undo with --to-time %s",
					final.ID, final.At.UTC().Format(time.RFC3339Nano), keys, changed, final.UndoTo.UTC().Format(time.RFC3339Nano)))})
		case errors.Is(err, context.Canceled) && s.ctx.Err() != nil:
			// shutting down: resumed at the next start (or by another gateway)
		case apierr.Is(err, apierr.ResourceInUse):
			// another process runs it (a gateway fleet: its lease)
			s.o.Logger.Info("rewind: the tenant restore is run by another process", "tenant", sc.Tenant().String(), "env", sc.Env(), "err", err)
		default:
			s.o.Logger.Error("rewind: tenant restore stopped; the tenant's tables stay refused until it is run again", "tenant", sc.Tenant().String(), "env", sc.Env(), "err", err)
			s.event(s.ctx, sc, audit.Event{Actor: "system", Action: "tenant.restore.failed", Outcome: audit.OutcomeError,
				Target: apierr.Clip(fmt.Sprintf("restore %s to %s", r.ID, r.At.UTC().Format(time.RFC3339Nano))), Reason: apierr.Clip(apierr.Message(err))})
		}
	}()
}

// event appends ev to the tenant's audit log and, naming the tenant, to
// the platform log.
func (s *Service) event(ctx context.Context, sc tenancy.Scope, ev audit.Event) {
	if ev.Outcome == "" {
		ev.Outcome = audit.OutcomeOK
	}
	if _, err := s.o.Audit.Append(ctx, sc, ev); err != nil {
		s.o.Logger.Error("rewind: audit append failed", "action", ev.Action, "err", err)
	}
	pev := ev
	pev.Target = apierr.Clip("tenant " + sc.Tenant().String() + " env " + sc.Env() + ": " + ev.Target)
	if _, err := s.o.Audit.Append(ctx, platformScope(), pev); err != nil {
		s.o.Logger.Error("rewind: platform audit append failed", "action", ev.Action, "err", err)
	}
}

// Resume restarts, in the background, every restore a previous process
// left unfinished (their tables are fenced since the engine opened).
func (s *Service) Resume() error {
	if s.o.Engine == nil {
		return nil
	}
	rs, err := s.o.Engine.PendingRewinds()
	if err != nil {
		return err
	}
	for _, r := range rs {
		t, err := tenancy.ParseTenantID(r.Tenant)
		if err != nil {
			s.o.Logger.Error("rewind: a restore record names no tenant", "tenant", r.Tenant)
			continue
		}
		sc := resumeScope(t, r.Env)
		s.event(s.ctx, sc, audit.Event{Actor: "system", Action: "tenant.restore.resume", Target: target(r)})
		s.start(sc, r)
	}
	return nil
}

// Close stops the running restores (they resume at the next start) and
// waits for them.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// resumeScope is the scope a restore resumed at start-up works in.
//
// NB: no request admitted it: the restore was admitted (and audited)
// when it began, by an admin of that tenant environment, and the record
// naming the tenant and environment is the server's own.
func resumeScope(t tenancy.TenantID, env string) tenancy.Scope {
	return tenancy.SystemScopeIn(t, env, "tenant.restore")
}

// platformScope is the scope of the platform log's records of restores.
func platformScope() tenancy.Scope {
	return tenancy.SystemScope(keyspace.Platform, "tenant.restore")
}
