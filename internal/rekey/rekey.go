// Package rekey rotates a tenant's data key: a new key version becomes
// current at once (every new value is sealed under it), then, in the
// background, every stored value of the tenant — items, index entries,
// change records, audit records — is re-encrypted under it, and the old
// version is destroyed. The rotation's state and progress live in the
// tenant's key file (package tenantkey), so a rotation interrupted by a
// crash is resumed when the server starts again (Resume), from the last
// table it finished. Start and finish are audited in the tenant's log.
//
// On a fleet of gateways over a DynamoDB-API engine (Options.Fleet) the
// items are the engine's and not sealed by tenantdb; what a tenant's data
// key seals there is its audit log, kept in the engine. The rotation's
// state lives in the tenant's key record in the engine, worked on by one
// gateway at a time (tenantkey.Keyring.Claim); any gateway takes over a
// rotation whose worker stopped renewing its claim (fleet.go).
package rekey

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// Data is the store of a tenant's items, index entries and change
// records (the embedded engine).
type Data interface {
	// ResealTenant re-encrypts every value of the scope's tenant not
	// sealed under the current key version, resuming after cursor from,
	// and reports progress after each table.
	ResealTenant(ctx context.Context, s tenancy.Scope, from string, progress func(done int64, cursor string) error) error
}

// Options name what a rotation touches. Keys and Audit are required;
// Data may be nil for a server whose items live elsewhere (the remote
// backend), where rotation is refused unless Fleet is set.
type Options struct {
	Keys   *tenantkey.Keyring
	Data   Data
	Audit  *audit.Log
	Logger *slog.Logger
	Now    func() time.Time
	// Fleet, for a gateway of a fleet sharing the keys in an engine,
	// says how rotations are shared between gateways (fleet.go).
	Fleet *Fleet
}

// Service runs tenant key rotations.
type Service struct {
	o      Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[tenancy.TenantID]bool
	failed  map[tenancy.TenantID]string // the last run's error, until the next
}

// New returns the rotation service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{o: o, ctx: ctx, cancel: cancel, running: map[tenancy.TenantID]bool{}, failed: map[tenancy.TenantID]string{}}
}

// Status is a tenant's encryption state, as the admin API shows it.
type Status struct {
	// Algorithm is the cipher of the tenant's values.
	Algorithm string `json:"algorithm"`
	// Version is the data key version new values are sealed under.
	Version uint32 `json:"version"`
	// Legacy says values written before encryption may still be stored
	// in plaintext (until a rotation re-encrypts them).
	Legacy bool `json:"legacy,omitempty"`
	// Rotation is the rotation in progress, if any.
	Rotation *tenantkey.RotationInfo `json:"rotation,omitempty"`
	// Running says a rotation is being worked on in this process.
	Running bool `json:"running"`
	// Error is why the last attempt of the rotation in progress stopped.
	Error string `json:"error,omitempty"`
}

// Algorithm names the cipher of every tenant's values.
const Algorithm = "AES-256-GCM"

// Status returns the scope's tenant's encryption state.
func (s *Service) Status(ctx context.Context, sc tenancy.Scope) (Status, error) {
	t, err := tenantOf(sc)
	if err != nil {
		return Status{}, err
	}
	k, err := s.o.Keys.Reload(t) // NB: on a fleet, as another gateway left it
	if err != nil {
		return Status{}, apierr.Wrap(apierr.Internal, err, "loading the tenant's data key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := k.Status()
	return Status{Algorithm: Algorithm, Version: ks.Version, Legacy: ks.Legacy, Rotation: ks.Rotation, Running: s.running[t], Error: s.failed[t]}, nil
}

func tenantOf(sc tenancy.Scope) (tenancy.TenantID, error) {
	if !sc.Valid() || sc.Tenant().IsZero() {
		return tenancy.TenantID{}, apierr.New(apierr.Internal, "rekey: no tenant")
	}
	return sc.Tenant(), nil
}

// Rotate starts a rotation of the scope's tenant's data key, or resumes
// the one in progress, and returns at once; the re-encryption runs in the
// background (Status shows its progress). actor names who asked, for the
// audit record. Errors: Validation on a server whose items the rotation
// cannot reach.
func (s *Service) Rotate(ctx context.Context, sc tenancy.Scope, actor, role string) (Status, error) {
	t, err := tenantOf(sc)
	if err != nil {
		return Status{}, err
	}
	if s.o.Data == nil && s.o.Fleet == nil {
		return Status{}, apierr.Validationf("this server keeps items in a remote engine; their encryption is the engine's, and tenant key rotation is not available")
	}
	r, err := s.o.Keys.StartRotation(t, s.o.Now())
	if err != nil {
		return Status{}, apierr.Wrap(apierr.Internal, err, "starting the key rotation")
	}
	if _, err := s.o.Audit.Append(ctx, sc, audit.Event{Actor: actor, Role: role, Action: "tenant.rotate-key",
		Target: fmt.Sprintf("data key version %d -> %d", r.From, r.To), Source: audit.Source(ctx)}); err != nil {
		return Status{}, apierr.Wrap(apierr.Internal, err, "auditing the key rotation")
	}
	s.start(sc)
	return s.Status(ctx, sc)
}

// Resume restarts, in the background, every rotation a previous process
// left unfinished. scope returns the scope to work on a tenant with.
func (s *Service) Resume(scope func(tenancy.TenantID) tenancy.Scope) error {
	if s.o.Fleet != nil {
		return s.resumeFleet(scope) // fleet.go
	}
	if s.o.Data == nil {
		return nil
	}
	ts, err := s.o.Keys.Tenants()
	if err != nil {
		return err
	}
	for _, t := range ts {
		k, err := s.o.Keys.Key(t)
		if err != nil {
			s.o.Logger.Error("rekey: loading a tenant's key", "tenant", t.String(), "err", err)
			continue
		}
		if k.Status().Rotation != nil {
			s.start(scope(t))
		}
	}
	return nil
}

// start runs the rotation of sc's tenant in the background unless it
// runs already.
func (s *Service) start(sc tenancy.Scope) {
	t := sc.Tenant()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[t] || s.ctx.Err() != nil {
		return
	}
	s.running[t] = true
	delete(s.failed, t)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.run(sc)
		s.mu.Lock()
		delete(s.running, t)
		if err != nil {
			s.failed[t] = err.Error()
		}
		s.mu.Unlock()
		if err != nil && !errors.Is(err, context.Canceled) {
			s.o.Logger.Error("rekey: tenant key rotation stopped; it resumes at the next start or rotate-key", "tenant", t.String(), "err", err)
		}
	}()
}

// run re-encrypts the tenant's values and finishes the rotation.
func (s *Service) run(sc tenancy.Scope) error {
	if s.o.Fleet != nil {
		return s.runFleet(sc) // fleet.go
	}
	t := sc.Tenant()
	k, err := s.o.Keys.Key(t)
	if err != nil {
		return err
	}
	r := k.Status().Rotation
	if r == nil {
		return nil
	}
	base := r.Done
	err = s.o.Data.ResealTenant(s.ctx, sc, r.Cursor, func(done int64, cursor string) error {
		return s.o.Keys.Progress(t, base+done, cursor)
	})
	if err != nil {
		return err
	}
	n, err := s.o.Audit.Reseal(s.ctx, sc)
	if err != nil {
		return err
	}
	st := k.Status()
	if st.Rotation != nil {
		if err := s.o.Keys.Progress(t, st.Rotation.Done+n, st.Rotation.Cursor); err != nil {
			return err
		}
		st = k.Status()
	}
	if err := s.o.Keys.FinishRotation(t); err != nil {
		return err
	}
	var done int64
	if st.Rotation != nil {
		done = st.Rotation.Done
	}
	_, err = s.o.Audit.Append(s.ctx, sc, audit.Event{Actor: "system", Action: "tenant.rotate-key.done",
		Target: fmt.Sprintf("data key version %d; %d values re-encrypted; older versions destroyed", st.Version, done)})
	return err
}

// Close stops the running rotations (they resume at the next start) and
// waits for them.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// SystemScope is the scope a rotation resumed at start-up works in: no
// request admitted it; the rotation was admitted (and audited) when it
// began.
func SystemScope(t tenancy.TenantID) tenancy.Scope {
	return tenancy.SystemScope(t, "tenant.rotate-key")
}
