package engine

import (
	"fmt"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// siloOpen is a silo store being opened; done is closed when db or err is
// set and the store (if any) is in e.silos.
type siloOpen struct {
	done chan struct{}
	db   *storage.DB
	err  error
}

// siloKey is the key of tenant's store of silo table id in e.silos.
func siloKey(tenant tenancy.TenantID, id uint64) string {
	return tenant.String() + "/" + fmt.Sprint(id)
}

// openSilo returns the open store under key, opening it at dir ("" for
// in memory) if it is not open. allowed runs under e.mu before an open
// starts and vetoes it with its error (a dropped tenant or table).
//
// The open itself (Pebble creating the store or replaying its WAL) runs
// outside e.mu, which every request takes to resolve its table: under the
// lock, one tenant's first touch of a silo table after a restart stalled
// every tenant for as long as the replay took. Concurrent callers for the
// same key wait for the one open; the drop paths wait for opens in flight
// (waitSiloOpens) before they close what e.silos holds.
func (e *Engine) openSilo(key, dir string, allowed func() error) (*storage.DB, error) {
	e.mu.Lock()
	for {
		if db, ok := e.silos[key]; ok {
			e.mu.Unlock()
			return db, nil
		}
		op := e.opening[key]
		if op == nil {
			break
		}
		e.mu.Unlock()
		<-op.done
		if op.err != nil {
			return nil, op.err
		}
		e.mu.Lock() // NB: look again: a drop may have closed it since
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
	op := &siloOpen{done: make(chan struct{})}
	e.opening[key] = op
	e.mu.Unlock()

	// NB: deferred so that a panic in the open (the server recovers a
	// request's panic and carries on) still ends it: otherwise the key
	// stays in e.opening and its waiters, drops and Close block forever.
	var db *storage.DB
	var err error = apierr.New(apierr.Internal, "opening silo store: panicked")
	defer func() {
		e.mu.Lock()
		delete(e.opening, key)
		if err == nil {
			e.silos[key] = db
		}
		op.db, op.err = db, err
		close(op.done)
		e.mu.Unlock()
	}()
	db, err = e.openStore(dir, storage.Options{InMemory: dir == "", Logger: e.log})
	if err != nil {
		err = apierr.Wrap(apierr.Internal, err, "opening silo store")
	}
	return db, err
}

// waitSiloOpens returns once no open of a store whose key match accepts
// is in flight. The caller has already made sure no new such open can
// start (the tenant is marked dropped, the table unpublished, the engine
// closed), so what those opens publish in e.silos is there to be closed
// when it returns.
func (e *Engine) waitSiloOpens(match func(key string) bool) {
	for {
		var wait []*siloOpen
		e.mu.Lock()
		for key, op := range e.opening {
			if match(key) {
				wait = append(wait, op)
			}
		}
		e.mu.Unlock()
		if len(wait) == 0 {
			return
		}
		for _, op := range wait {
			<-op.done
		}
	}
}
