package rekey

import (
	"context"
	"fmt"
	"time"

	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Fleet configures rotations on a gateway of a fleet (Options.Fleet).
//
// A rotation there: the new version is made current in the tenant's key
// record in the engine (every gateway reads the key again within
// Settle; a gateway that meets a value sealed under a version it has
// not read yet reads the key at once); the gateway that started it
// claims it (Owner in the record) and renews the claim every
// Lease/4; it waits Settle, so that every gateway seals new audit
// records under the new version, re-seals the tenant's audit records
// under it (audit.Log.Reseal, which fences the chain against appends
// prepared under the old version), and ends the rotation, destroying
// the older versions. Any gateway looks every Sweep for rotations whose
// claim was not renewed for Lease (its gateway killed or stopped) and
// takes them over; re-sealing twice is harmless.
type Fleet struct {
	// Owner names this gateway in the claims.
	Owner string
	// Settle is how long after a version becomes current every gateway
	// seals under it (the keyring's MaxStale and a margin).
	Settle time.Duration
	// Lease is how long a claim holds without renewal (0: 10 s).
	Lease time.Duration
	// Sweep is how often the gateway looks for rotations to take over
	// (0: 10 s).
	Sweep time.Duration
}

func (f *Fleet) lease() time.Duration {
	if f.Lease <= 0 {
		return 10 * time.Second
	}
	return f.Lease
}

func (f *Fleet) sweep() time.Duration {
	if f.Sweep <= 0 {
		return 10 * time.Second
	}
	return f.Sweep
}

// resumeFleet takes over the rotations nobody works on now and keeps
// looking for such every Sweep until Close.
func (s *Service) resumeFleet(scope func(tenancy.TenantID) tenancy.Scope) error {
	if err := s.sweepOnce(scope); err != nil {
		return err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(s.o.Fleet.sweep())
		defer tick.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-tick.C:
			}
			if err := s.sweepOnce(scope); err != nil && s.ctx.Err() == nil {
				s.o.Logger.Warn("rekey: looking for key rotations to resume", "err", err)
			}
		}
	}()
	return nil
}

func (s *Service) sweepOnce(scope func(tenancy.TenantID) tenancy.Scope) error {
	rs, err := s.o.Keys.Rotations()
	if err != nil {
		return err
	}
	now := s.o.Now()
	for t, r := range rs {
		if r.Owner == "" || r.Owner == s.o.Fleet.Owner || now.Sub(time.UnixMilli(r.Beat)) >= s.o.Fleet.lease() {
			s.start(scope(t))
		}
	}
	return nil
}

// runFleet works on the rotation of sc's tenant if this gateway holds
// (or can take) its claim.
func (s *Service) runFleet(sc tenancy.Scope) error {
	t := sc.Tenant()
	f := s.o.Fleet
	held, err := s.o.Keys.Claim(t, f.Owner, s.o.Now(), f.lease())
	if err != nil || !held {
		return err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	lost := make(chan struct{})
	go func() { // renew the claim
		tick := time.NewTicker(f.lease() / 4)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if held, err := s.o.Keys.Claim(t, f.Owner, s.o.Now(), f.lease()); err == nil && !held {
				close(lost) // another gateway took it over: leave it the work
				cancel()
				return
			}
		}
	}()
	k, err := s.o.Keys.Key(t)
	if err != nil {
		return err
	}
	r := k.Status().Rotation
	if r == nil {
		return nil
	}
	// NB: until every gateway has read the new version, one may still
	// seal audit records under the old one.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(f.Settle):
	}
	if s.o.Data != nil {
		base := r.Done
		if err := s.o.Data.ResealTenant(ctx, sc, r.Cursor, func(done int64, cursor string) error {
			return s.o.Keys.Progress(t, base+done, cursor)
		}); err != nil {
			return err
		}
	}
	n, err := s.o.Audit.Reseal(ctx, sc)
	if err != nil {
		return err
	}
	select {
	case <-lost:
		return nil
	default:
	}
	st := k.Status()
	done := n
	if st.Rotation != nil {
		done += st.Rotation.Done
		if err := s.o.Keys.Progress(t, done, st.Rotation.Cursor); err != nil {
			return err
		}
	}
	ended, err := s.o.Keys.FinishRotationTo(t, r.To)
	if err != nil || !ended {
		return err
	}
	_, err = s.o.Audit.Append(s.ctx, sc, audit.Event{Actor: "system", Action: "tenant.rotate-key.done",
		Target: fmt.Sprintf("data key version %d; %d values re-encrypted; older versions destroyed", r.To, done)})
	return err
}
