package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// What the rest of the engine sees of moves (move.go): where a tenant's
// data of a table lives once moved (placement overrides), the gate that
// holds one tenant's writers of one table during a cutover, and the
// placement generation with which writers notice that their handle points
// at the store the data has left.
//
//   - A handle records the generation when it is opened. A cutover bumps
//     it. A writer compares the two with its stripes held (locked, via
//     moveCheck): if they differ it re-checks the placement and, if its
//     store is no longer the table's, releases the stripes, re-points the
//     handle and starts again. So after a cutover no write lands in the
//     store the data left, whenever its handle was opened.
//   - The gate: a cutover closes it for (tenant, table), then passes the
//     lock barrier. A writer holding its stripes that finds its gate closed
//     releases them and waits for the gate outside them: the wait never
//     holds a stripe, so other tenants (whose keys share stripes) never
//     wait for a cutover, and the cutover waits only for writes already
//     committing.
//   - Request handles are counted per generation, so that a move deletes
//     the data it left only once every request that could read it (opened
//     before the cutover) is done.

type tenantTable struct {
	tenant tenancy.TenantID
	table  uint64
}

type moveGates struct {
	// placed is the placement overrides: true = silo. Copy on write.
	placed atomic.Pointer[map[tenantTable]bool]
	gen    atomic.Uint64
	ngates atomic.Int32

	// cur counts the open request handles of the current generation;
	// old holds earlier generations' counts until they drain.
	cur atomic.Pointer[genCount]

	mu    sync.Mutex
	gates map[tenantTable]chan struct{} // closed gates; the channel closes when it opens
	old   []*genCount
}

// placedIn returns the placement override of tenant's data of table.
func (e *Engine) placedIn(tenant tenancy.TenantID, table uint64) (silo, ok bool) {
	m := e.moves.placed.Load()
	if m == nil {
		return false, false
	}
	silo, ok = (*m)[tenantTable{tenant, table}]
	return silo, ok
}

// setPlaced sets (del: removes) an override in memory.
func (e *Engine) setPlaced(tt tenantTable, silo, del bool) {
	e.moves.mu.Lock()
	defer e.moves.mu.Unlock()
	m := map[tenantTable]bool{}
	if old := e.moves.placed.Load(); old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	if del {
		delete(m, tt)
	} else {
		m[tt] = silo
	}
	e.moves.placed.Store(&m)
}

// setPlacedAll sets the overrides in m in memory.
func (e *Engine) setPlacedAll(m map[tenantTable]bool) {
	e.moves.mu.Lock()
	defer e.moves.mu.Unlock()
	n := map[tenantTable]bool{}
	if old := e.moves.placed.Load(); old != nil {
		for k, v := range *old {
			n[k] = v
		}
	}
	for k, v := range m {
		n[k] = v
	}
	e.moves.placed.Store(&n)
}

// loadPlacements reads the persisted placement overrides (Open).
func (e *Engine) loadPlacements() error {
	lo, hi := keyspace.TablePlacements()
	it := e.db.NewIter(lo, hi)
	m := map[tenantTable]bool{}
	for ok := it.First(); ok; ok = it.Next() {
		t, table, ok := keyspace.ParseTenantTable(it.Key())
		if !ok {
			continue
		}
		m[tenantTable{t, table}] = string(it.Value()) == storeSilo
	}
	if err := it.Close(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading table placements")
	}
	e.moves.placed.Store(&m)
	return nil
}

// genCount counts the open request handles of one generation.
type genCount struct {
	gen uint64
	n   atomic.Int64
	// opened counts the handles ever opened in the generation: requests
	// served (an in-place restore backs off when it grows: rewindpace.go).
	opened atomic.Uint64
}

func (g *moveGates) current() *genCount {
	if gc := g.cur.Load(); gc != nil {
		return gc
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur.Load() == nil {
		g.cur.Store(&genCount{})
	}
	return g.cur.Load()
}

// trackHandle counts a request handle in the current generation and
// returns the generation and the function that ends the count. NB: no
// lock: every request opens a handle.
func (e *Engine) trackHandle() (uint64, func()) {
	g := &e.moves
	for {
		gc := g.current()
		gc.n.Add(1)
		gc.opened.Add(1)
		if g.cur.Load() == gc {
			return gc.gen, func() { gc.n.Add(-1) }
		}
		gc.n.Add(-1) // a new generation began meanwhile: count in it
	}
}

// bumpGen begins a new placement generation (a cutover switched a
// placement): writers with handles of older ones re-check their store.
func (e *Engine) bumpGen() {
	g := &e.moves
	old := g.current()
	g.mu.Lock()
	next := &genCount{gen: old.gen + 1}
	g.old = append(g.old, old)
	g.cur.Store(next)
	g.gen.Store(next.gen)
	g.mu.Unlock()
}

// waitHandles returns once no request handle opened in a generation
// before gen is open, or ctx ends.
func (e *Engine) waitHandles(ctx context.Context, gen uint64) error {
	g := &e.moves
	for {
		g.mu.Lock()
		busy := false
		keep := g.old[:0]
		for _, gc := range g.old {
			if gc.n.Load() > 0 {
				keep = append(keep, gc)
				busy = busy || gc.gen < gen
			}
		}
		g.old = keep
		g.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		case <-e.closed:
			return errClosing
		}
	}
}

var errClosing = errors.New("engine: closing")

// closeGate holds the writers of tenant's data of table until openGate.
func (e *Engine) closeGate(tt tenantTable) {
	g := &e.moves
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates == nil {
		g.gates = map[tenantTable]chan struct{}{}
	}
	if g.gates[tt] == nil {
		g.gates[tt] = make(chan struct{})
		g.ngates.Add(1)
	}
}

func (e *Engine) openGate(tt tenantTable) {
	g := &e.moves
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch := g.gates[tt]; ch != nil {
		delete(g.gates, tt)
		g.ngates.Add(-1)
		close(ch)
	}
}

func (e *Engine) gate(tt tenantTable) chan struct{} {
	g := &e.moves
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gates[tt]
}

// moveCheck runs in locked with ws's stripes held. It returns nil when
// the writes may go on; otherwise the stripes must be released, the
// returned function run (it waits for a cutover, or re-points handles at
// their table's new store) and the write started again.
func (e *Engine) moveCheck(ws []*itemWrite) func() error {
	gates := e.moves.ngates.Load() > 0
	gen := e.moves.gen.Load()
	var stale []*handle
	for _, w := range ws {
		h := w.h
		if gates {
			if ch := e.gate(tenantTable{tenantOfNS(h.Namespace), h.Table.ID}); ch != nil {
				return func() error {
					select {
					case <-ch:
						return nil
					case <-e.closed:
						return apierr.New(apierr.Internal, "the server is shutting down")
					}
				}
			}
		}
		if h.gen != gen && h.db != nil {
			stale = append(stale, h)
		}
	}
	var repoint []*handle
	for _, h := range stale {
		if h.gen == gen {
			continue // seen (one handle, several items)
		}
		silo, err := e.inSilo(context.Background(), tenantOfNS(h.Namespace), h.Table)
		if err != nil {
			return func() error { return err }
		}
		if silo == (h.db != e.db) {
			h.gen = gen
			continue
		}
		repoint = append(repoint, h)
	}
	if len(repoint) == 0 {
		return nil
	}
	return func() error {
		for _, h := range repoint {
			if err := e.repoint(h); err != nil {
				return err
			}
		}
		return nil
	}
}

// repoint points h at the store now holding its table's data.
func (e *Engine) repoint(h *handle) error {
	if h.release == nil {
		// NB: background work holds its store itself; it runs again
		// later and finds the new store then.
		return apierr.New(apierr.Internal, "the table's data moved to another store; retry")
	}
	gen := e.moves.gen.Load()
	db, rel, err := e.siloStore(context.Background(), tenantOfNS(h.Namespace), h.Table, false)
	if err != nil {
		return err
	}
	old := h.release
	h.db, h.release, h.gen = db, rel, gen
	old()
	return nil
}

// storeOf returns the store of placement silo (true) or the pool for
// tenant, with a reference.
func (e *Engine) storeOf(tenant tenancy.TenantID, silo bool) (*storage.DB, releaser, error) {
	if !silo {
		return e.db, noRelease, nil
	}
	s, err := e.acquireSilo(tenant, func() error {
		if e.isDropped(tenant) {
			return apierr.New(apierr.NotFound, "tenant not found")
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return s.db, func() { e.releaseSilo(s, true) }, nil
}
