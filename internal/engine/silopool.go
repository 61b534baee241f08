package engine

import (
	"container/list"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Silo stores: one store per tenant, shared by all of its silo data (its
// items of silo tables and, for a silo-tier tenant, of every table; items
// of different tables are apart by their keys, as in the main store).
// Stores are opened on first use and closed when idle under a bound on
// open stores (Options.MaxOpenSilos): a store is never closed while
// something holds a reference to it (a request through its handle, a
// background job, the change log's trimming), and a closed store opens
// again on its next use. See DESIGN.md ("Silo stores").

// DefaultMaxOpenSilos is Options.MaxOpenSilos when 0.
const DefaultMaxOpenSilos = 256

// DefaultSiloIdle is Options.SiloIdle when 0.
const DefaultSiloIdle = 10 * time.Minute

type siloState uint8

const (
	siloOpening siloState = iota
	siloOpen
	siloClosing // closing for eviction or drop; gone from e.silos when done
)

// silo is one tenant's store while it is in e.silos: opening, open or
// closing. Its fields are guarded by e.mu, except db, which is set before
// the state becomes siloOpen and never changes after.
type silo struct {
	tenant tenancy.TenantID
	db     *storage.DB
	state  siloState
	refs   int           // holders of the store (see acquire)
	done   chan struct{} // closed when the opening or closing ends
	err    error         // the failed open's error
	idle   *list.Element // in e.idle while open with no holder
	used   time.Time     // when the last holder released it
	// counted says its WAL syncs are in the metrics' closed stores'
	// (silometrics.go); guarded by e.silom.mu.
	counted bool
}

// releaser gives back a reference to a store; the main store's is a no-op.
type releaser func()

func noRelease() {}

// acquireSilo returns tenant's store with a reference held, opening it if
// it is not open (waiting for an open or close in flight). allowed runs
// under e.mu before an open starts and vetoes it with its error (a
// dropped tenant or table, or a store that does not exist when it must
// not be created). The caller releases the reference exactly once with
// e.releaseSilo.
//
// The open itself (Pebble creating the store or replaying its WAL, and
// migrating stores of the old layout) runs outside e.mu, which every
// request takes to find its store: one tenant's first request after a
// restart must not stall every other tenant for as long as the open takes.
func (e *Engine) acquireSilo(tenant tenancy.TenantID, allowed func() error) (*silo, error) {
	e.mu.Lock()
	for {
		s := e.silos[tenant]
		if s == nil && e.holdOpens != nil { // a checkpoint's moment (checkpoint.go)
			wait := e.holdOpens
			e.mu.Unlock()
			<-wait
			e.mu.Lock()
			continue
		}
		if s == nil {
			break
		}
		if s.state == siloOpen {
			s.refs++
			if s.idle != nil {
				e.idle.Remove(s.idle)
				s.idle = nil
			}
			e.mu.Unlock()
			return s, nil
		}
		opening, done := s.state == siloOpening, s.done
		e.mu.Unlock()
		<-done
		if opening && s.err != nil {
			return nil, s.err
		}
		e.mu.Lock() // NB: look again: evicted, dropped or reopened since
	}
	select {
	case <-e.closed:
		e.mu.Unlock()
		return nil, apierr.New(apierr.Internal, "the engine is shutting down")
	default:
	}
	if err := allowed(); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	s := &silo{tenant: tenant, state: siloOpening, refs: 1, done: make(chan struct{})}
	e.silos[tenant] = s
	victims := e.evictLocked()
	e.mu.Unlock()
	e.closeInBackground(victims)

	// NB: deferred so that a panic in the open (the server recovers a
	// request's panic and carries on) still ends it: otherwise the store
	// stays opening and its waiters, drops and Close block forever.
	var err error = apierr.New(apierr.Internal, "opening silo store: panicked")
	var db *storage.DB
	defer func() {
		e.mu.Lock()
		if err != nil {
			delete(e.silos, tenant)
			s.err = err
		} else {
			s.db, s.state = db, siloOpen
			e.silom.opens.Add(1)
		}
		close(s.done)
		e.mu.Unlock()
	}()
	db, err = e.openTenantStore(tenant)
	if err != nil {
		err = apierr.Wrap(apierr.Internal, err, "opening silo store")
		return nil, err
	}
	return s, nil
}

// releaseSilo gives back a reference acquireSilo returned. touch marks the
// store used now (a request or job on the tenant's behalf); the change
// log's trimming, which visits every open store, does not, so that it
// does not keep idle stores open.
func (e *Engine) releaseSilo(s *silo, touch bool) {
	e.mu.Lock()
	s.refs--
	if s.refs < 0 {
		e.mu.Unlock()
		panic("engine: silo store released more often than acquired")
	}
	var victims []*silo
	if s.refs == 0 && s.state == siloOpen {
		if touch || s.used.IsZero() {
			s.used = e.opts.Now()
			s.idle = e.idle.PushFront(s)
		} else {
			// NB: keep the idle list ordered by last use, most recent first.
			at := e.idle.Front()
			for at != nil && at.Value.(*silo).used.After(s.used) {
				at = at.Next()
			}
			if at == nil {
				s.idle = e.idle.PushBack(s)
			} else {
				s.idle = e.idle.InsertBefore(s, at)
			}
		}
		victims = e.evictLocked()
	}
	e.mu.Unlock()
	e.closeInBackground(victims)
}

// closeInBackground closes stores evictLocked chose without making the
// request that chose them wait (a flush and a close take several fsyncs;
// that tenant's own first request should not pay for another's store).
// A user of such a store waits for its close before reopening it, and
// Engine.Close waits for every close.
func (e *Engine) closeInBackground(victims []*silo) {
	if len(victims) > 0 {
		go e.closeSilos(victims)
	}
}

// releaseAndClose gives back a reference and closes the store at once if
// nobody else holds it (background work that opened a store only for
// itself).
func (e *Engine) releaseAndClose(s *silo) {
	e.mu.Lock()
	s.refs--
	if s.refs != 0 || s.state != siloOpen {
		e.mu.Unlock()
		return
	}
	s.state, s.done = siloClosing, make(chan struct{})
	e.nclosing++
	e.mu.Unlock()
	e.closeSilos([]*silo{s})
}

// evictLocked marks closing, and returns, the least recently used idle
// stores while more stores are open (or opening, or closing) than
// Options.MaxOpenSilos. A store in use is never chosen: when every open
// store is in use the bound is exceeded until some are released.
// REQUIRES: e.mu held.
func (e *Engine) evictLocked() []*silo {
	var out []*silo
	// NB: a closing store stays in e.silos until closed (a new open of
	// the tenant's store must wait for the close: the directory is locked
	// while open) but no longer counts against the bound.
	for len(e.silos)-e.nclosing > e.opts.MaxOpenSilos && e.idle.Len() > 0 {
		s := e.idle.Remove(e.idle.Back()).(*silo)
		s.idle = nil
		s.state, s.done = siloClosing, make(chan struct{})
		e.nclosing++
		e.silom.evictions.Add(1)
		out = append(out, s)
	}
	return out
}

// evictIdle closes the stores nobody used for Options.SiloIdle.
func (e *Engine) evictIdle() {
	cutoff := e.opts.Now().Add(-e.opts.SiloIdle)
	e.mu.Lock()
	var victims []*silo
	for el := e.idle.Back(); el != nil; {
		s := el.Value.(*silo)
		if s.used.After(cutoff) {
			break
		}
		prev := el.Prev()
		e.idle.Remove(el)
		s.idle = nil
		s.state, s.done = siloClosing, make(chan struct{})
		e.nclosing++
		victims = append(victims, s)
		el = prev
	}
	e.mu.Unlock()
	e.closeSilos(victims)
}

// closeSilos closes stores evictLocked marked closing: flushed, so that
// a closed store keeps no WAL to replay and little disk (storage.DB
// CloseIdle), then removed from e.silos.
func (e *Engine) closeSilos(victims []*silo) {
	for _, s := range victims {
		e.clog.CloseStore(s.db)
		e.silom.closing(s)
		if err := s.db.CloseIdle(); err != nil {
			e.log.Warn("engine: closing an idle silo store", "tenant", s.tenant.String(), "err", err)
		}
		e.mu.Lock()
		delete(e.silos, s.tenant)
		e.nclosing--
		close(s.done)
		e.mu.Unlock()
	}
}

// dropSilo closes tenant's store now, whether or not it is in use (the
// tenant is being deleted: a request of it still running fails with the
// store closed), after waiting for an open or close in flight. The caller
// has made sure no new open can start.
func (e *Engine) dropSilo(tenant tenancy.TenantID) {
	for {
		e.mu.Lock()
		s := e.silos[tenant]
		if s == nil {
			e.mu.Unlock()
			return
		}
		if s.state != siloOpen {
			done := s.done
			e.mu.Unlock()
			<-done
			continue
		}
		if s.idle != nil {
			e.idle.Remove(s.idle)
			s.idle = nil
		}
		s.state, s.done = siloClosing, make(chan struct{})
		delete(e.silos, tenant)
		e.mu.Unlock()
		e.clog.CloseStore(s.db)
		e.silom.closing(s)
		if err := s.db.Close(); err != nil {
			e.log.Warn("engine: closing silo store of dropped tenant", "tenant", tenant.String(), "err", err)
		}
		close(s.done)
		return
	}
}

// closeAllSilos closes every store (Engine.Close), waiting for opens and
// closes in flight.
func (e *Engine) closeAllSilos() error {
	var first error
	for {
		e.mu.Lock()
		var wait chan struct{}
		var open []*silo
		for _, s := range e.silos {
			if s.state != siloOpen {
				wait = s.done
				break
			}
			open = append(open, s)
		}
		if wait != nil {
			e.mu.Unlock()
			<-wait
			continue
		}
		for _, s := range open {
			delete(e.silos, s.tenant)
		}
		e.idle.Init()
		e.mu.Unlock()
		// NB: closed as when idle (flushed, the WAL Pebble keeps to reuse
		// removed): a plain close leaves 1.1 MB of preallocated WAL per
		// store on disk until it is next opened, and most never are soon.
		// Four at a time: each is a few fsyncs.
		var mu sync.Mutex
		var wg sync.WaitGroup
		work := make(chan *silo)
		for range min(4, len(open)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := range work {
					e.silom.closing(s)
					if err := s.db.CloseIdle(); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
					}
				}
			}()
		}
		for _, s := range open {
			work <- s
		}
		close(work)
		wg.Wait()
		return first
	}
}

// holdOpenSilos returns the open stores, each with a reference held
// (released with releaseSilo(s, false)), without opening any.
func (e *Engine) holdOpenSilos() []*silo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*silo
	for _, s := range e.silos {
		if s.state != siloOpen {
			continue
		}
		s.refs++
		if s.idle != nil {
			e.idle.Remove(s.idle)
			s.idle = nil
		}
		out = append(out, s)
	}
	return out
}

// holdIfOpen returns tenant's store with a reference held (released with
// releaseSilo(s, false)) if it is open, else nil; it never opens one.
func (e *Engine) holdIfOpen(tenant tenancy.TenantID) *silo {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.silos[tenant]
	if s == nil || s.state != siloOpen {
		return nil
	}
	s.refs++
	if s.idle != nil {
		e.idle.Remove(s.idle)
		s.idle = nil
	}
	return s
}

// OpenSilos returns how many silo stores are open or opening (closing
// ones not counted) and how many of them are in use.
func (e *Engine) OpenSilos() (open, inUse int) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, s := range e.silos {
		if s.refs > 0 {
			inUse++
		}
	}
	return len(e.silos) - e.nclosing, inUse
}
