package engine

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Checkpoint directories, inside the dir given to Checkpoint.
const (
	// CheckpointMain is the main store's copy.
	CheckpointMain = "db"
	// CheckpointSilos holds the silo stores' copies, one directory per
	// tenant as in Options.SiloDir.
	CheckpointSilos = "silos"
)

// checkpointParallel bounds the stores Checkpoint copies at once.
const checkpointParallel = 8

// CheckpointStats says what Checkpoint copied.
type CheckpointStats struct {
	// Open and Closed count the silo stores copied open (a Pebble
	// checkpoint) and closed (their files); Dropped the stores of tenants
	// being deleted, left out.
	Open, Closed, Dropped int
	// Held is how long item writes were held off.
	Held time.Duration
}

// Checkpoint copies the main store and every silo store into dir (which
// must not exist; its parent must be on the data directory's file system
// for sstables to be hard-linked) as of one moment: every item write
// committed before it, in whichever stores, and none after. hold runs at
// that moment with item writes held off; it must call do, which copies
// the stores, and may copy around it what must agree with them (the
// tenants' keys: see package backup).
//
// How the moment is held: open silo stores are referenced so that they
// stay open, closed ones are marked opening so that nobody opens them
// until their files are copied — which happens after hold returns and
// writes resume (other tenants write on; that tenant's first request
// waits for its copy) — and no other store opens until hold returns.
// If a silo store is open, every stripe is locked too (a write holds its
// stripes from its reads to the end of its last store's batch, so none
// is half committed in one store and not in another); if none is, no
// write can touch two stores, the main store's checkpoint is one moment
// by itself and writes go on. Writes the engine does not commit under stripes
// (usage counters, audit records, tenants' records) are in each store's
// copy as of that store's copy. A silo store closed by a tenant's
// deletion meanwhile is left out (its key is destroyed: nothing of it
// could be read).
func (e *Engine) Checkpoint(dir string, hold func(do func() error) error) (CheckpointStats, error) {
	var st CheckpointStats
	e.checkpointMu.Lock()
	defer e.checkpointMu.Unlock()
	if e.opts.InMemory {
		return st, errors.New("engine: a store in memory has no files to checkpoint")
	}
	if err := os.MkdirAll(filepath.Join(dir, CheckpointSilos), 0o700); err != nil {
		return st, err
	}
	var tenants []tenancy.TenantID
	if !e.inMemorySilos() {
		ents, err := os.ReadDir(e.opts.SiloDir)
		if err != nil && !os.IsNotExist(err) {
			return st, err
		}
		for _, d := range ents {
			if t, err := tenancy.ParseTenantID(d.Name()); err == nil && d.IsDir() {
				tenants = append(tenants, t)
			}
		}
	}

	// NB: a flush first, outside the moment, so that the copy's WAL (copied
	// whole, every backup) holds only the writes since.
	if err := e.db.Flush(); err != nil {
		return st, err
	}
	open, closed, err := e.pinSilos(tenants)
	if err != nil {
		return st, err
	}
	defer func() {
		for _, s := range open {
			e.releaseSilo(s, false)
		}
		for _, s := range closed { // NB: only those not copied yet (on error)
			e.unpinClosed(s)
		}
	}()
	// NB: with no silo store open (and none opening until the main store
	// is copied) no write touches two stores, and the main store's
	// checkpoint is itself one moment: writes need not be held.
	heldSince := time.Now()
	unlock, locked := func() {}, false
	if len(open) > 0 {
		unlock, locked = e.locks.lockAll(), true
		heldSince = time.Now()
	}
	defer func() {
		if locked {
			unlock()
		}
		e.resumeOpens()
	}()

	err = hold(func() error {
		// NB: the stores are copied in parallel: each checkpoint is a few
		// fsyncs, and writes may be held for all of them.
		var mu sync.Mutex
		var first error
		sem := make(chan struct{}, checkpointParallel)
		var wg sync.WaitGroup
		run := func(f func() error) {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := f(); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}()
		}
		run(func() error { return e.db.Checkpoint(filepath.Join(dir, CheckpointMain)) })
		for _, s := range open {
			run(func() error {
				to := filepath.Join(dir, CheckpointSilos, s.tenant.String())
				if err := os.MkdirAll(to, 0o700); err != nil {
					return err
				}
				err := s.db.Checkpoint(filepath.Join(to, siloStoreName))
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, storage.ErrClosed) { // the tenant's deletion closed it
					st.Dropped++
					os.RemoveAll(to)
					return nil
				}
				if err != nil {
					return fmt.Errorf("silo store of tenant %s: %w", s.tenant, err)
				}
				st.Open++
				return nil
			})
		}
		wg.Wait()
		return first
	})
	e.resumeOpens()
	if locked {
		unlock()
		locked = false
		st.Held = time.Since(heldSince)
	}
	if err != nil {
		return st, err
	}
	for len(closed) > 0 {
		s := closed[0]
		src := e.tenantSiloDir(s.tenant)
		if _, err := os.Stat(src); os.IsNotExist(err) {
			st.Dropped++
		} else if err := storage.CopyClosed(src, filepath.Join(dir, CheckpointSilos, s.tenant.String())); err != nil {
			return st, fmt.Errorf("silo store of tenant %s: %w", s.tenant, err)
		} else {
			st.Closed++
		}
		closed = closed[1:]
		e.unpinClosed(s)
	}
	return st, nil
}

// pinSilos takes a reference to every open silo store, marks every
// closed one of tenants opening (placeholders without a store) and holds
// off the opening of any other until resumeOpens, waiting for opens and
// closes in flight. REQUIRES: not e.mu.
func (e *Engine) pinSilos(tenants []tenancy.TenantID) (open, closed []*silo, err error) {
	for {
		e.mu.Lock()
		var wait chan struct{}
		for _, s := range e.silos {
			if s.state != siloOpen && !slices.Contains(closed, s) {
				wait = s.done
				break
			}
		}
		if wait != nil {
			e.mu.Unlock()
			<-wait
			continue
		}
		for _, s := range e.silos {
			if s.state == siloOpen && !slices.Contains(open, s) {
				s.refs++
				if s.idle != nil {
					e.idle.Remove(s.idle)
					s.idle = nil
				}
				open = append(open, s)
			}
		}
		for _, t := range tenants {
			if e.silos[t] != nil {
				continue
			}
			s := &silo{tenant: t, state: siloOpening, done: make(chan struct{})}
			e.silos[t] = s
			e.nclosing++ // NB: a placeholder does not count against the bound
			closed = append(closed, s)
		}
		e.holdOpens = make(chan struct{})
		e.mu.Unlock()
		return open, closed, nil
	}
}

// unpinClosed removes a placeholder pinSilos put for a closed store; the
// requests waiting for it open the store themselves.
func (e *Engine) unpinClosed(s *silo) {
	e.mu.Lock()
	delete(e.silos, s.tenant)
	e.nclosing--
	close(s.done)
	e.mu.Unlock()
}

// resumeOpens ends pinSilos' hold on opening stores. Idempotent.
func (e *Engine) resumeOpens() {
	e.mu.Lock()
	if e.holdOpens != nil {
		close(e.holdOpens)
		e.holdOpens = nil
	}
	e.mu.Unlock()
}
