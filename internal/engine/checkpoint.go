package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// CheckpointStats says what Checkpoint copied.
type CheckpointStats struct {
	// Open and Closed count the silo stores copied open (written out of
	// a snapshot taken at the moment) and closed (their files); Dropped
	// the stores of tenants being deleted, left out.
	Open, Closed, Dropped int
	// Keys counts the keys written out of open silo stores.
	Keys int
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
// by itself and writes go on. Held or not, only the main store's Pebble
// checkpoint (hard links, a few fsyncs) and a snapshot of each open silo
// store are taken at the moment; the snapshots are written out into new
// stores after it (so an open silo store's copy is new files every time,
// while the main store's and closed stores' unchanged sstables are the
// same files). Writes the engine does not commit under stripes
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

	// NB: the main store's WAL (up to a memtable) is copied at the moment,
	// so when writes will be held (a silo store is open) the memtable is
	// flushed first, outside it. Not otherwise: the new level-0 sstable is
	// compacted into every sstable of the level below (items are spread by
	// a hash of their key), which the next incremental backup then copies.
	if e.anySiloOpen() {
		if err := e.db.Flush(); err != nil {
			return st, err
		}
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

	// NB: under the hold only what must be at the moment: the main
	// store's checkpoint (a few fsyncs) and a snapshot of each open silo
	// store (memory only); the silo stores are written out from their
	// snapshots once writes resume.
	snaps := make([]*storage.Snapshot, len(open))
	defer func() {
		for _, sn := range snaps {
			if sn != nil {
				sn.Close()
			}
		}
	}()
	err = hold(func() error {
		for i, s := range open {
			snaps[i] = s.db.NewSnapshot()
		}
		return e.db.Checkpoint(filepath.Join(dir, CheckpointMain))
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
	for i, s := range open {
		to := filepath.Join(dir, CheckpointSilos, s.tenant.String())
		n, err := e.exportSnapshot(snaps[i], filepath.Join(to, siloStoreName))
		if errors.Is(err, storage.ErrClosed) { // the tenant's deletion closed it
			st.Dropped++
			os.RemoveAll(to)
			continue
		}
		if err != nil {
			return st, fmt.Errorf("silo store of tenant %s: %w", s.tenant, err)
		}
		st.Open++
		st.Keys += n
		snaps[i].Close()
		snaps[i] = nil
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

// exportSnapshot writes the contents of sn into a new store in dir, key
// by key (a counter's merged value as its value, which a counter may
// have), and closes it flushed: a store opened on dir reads what sn did.
func (e *Engine) exportSnapshot(sn *storage.Snapshot, dir string) (int, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return 0, err
	}
	db, err := storage.Open(dir, storage.Options{Small: true, Shared: e.shared, NoSync: true, Logger: e.log})
	if err != nil {
		return 0, err
	}
	it := sn.NewIter(nil, nil)
	b := db.NewBatch()
	n := 0
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		b.Set(it.Key(), it.Value())
		n++
		if b.Size() >= 1<<20 {
			err = db.Apply(b)
			b.Close()
			b = db.NewBatch()
		}
	}
	if ierr := it.Error(); err == nil {
		err = ierr
	}
	it.Close()
	if err == nil {
		err = db.Apply(b)
	}
	b.Close()
	if err != nil {
		db.Close()
		return n, err
	}
	return n, db.CloseIdle()
}

// anySiloOpen reports whether a silo store is open (or opening).
func (e *Engine) anySiloOpen() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.silos) > e.nclosing
}
