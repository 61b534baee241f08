package changelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// leaseSize is how many sequence numbers a namespace takes per persisted
// ceiling: one synced write per leaseSize appends, and a restart skips at
// most leaseSize numbers.
const leaseSize = 1 << 16

// store is the log's in-memory state for one storage.DB.
type store struct {
	db *storage.DB

	mu  sync.Mutex
	nss map[string]*nsState

	// registered holds the ChangeLogEntry keys known to be persisted.
	registered sync.Map
}

func newStore(db *storage.DB) *store { return &store{db: db, nss: map[string]*nsState{}} }

// ns returns the state of namespace ns, creating it (unloaded) if needed.
func (s *store) ns(ns []byte) *nsState {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nss[string(ns)]
	if n == nil {
		n = &nsState{db: s.db, ns: slices.Clone(ns), streams: map[streamKey]*streamState{}}
		s.nss[string(ns)] = n
	}
	return n
}

// dropTenant forgets the state of every namespace of tenant t.
func (s *store) dropTenant(t tenancy.TenantID) {
	p := string(keyspace.Tenant(t))
	s.mu.Lock()
	for k := range s.nss {
		if strings.HasPrefix(k, p) {
			delete(s.nss, k)
		}
	}
	s.mu.Unlock()
	entries := string(keyspace.ChangeLogEntry(keyspace.Tenant(t), 0, 0))
	entries = entries[:len(entries)-16]
	s.registered.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), entries) {
			s.registered.Delete(k)
		}
		return true
	})
}

type streamKey struct{ table, stream uint64 }

// nsState allocates one namespace's sequence numbers and tracks the
// allocations whose batches are not yet applied.
//
// NB: its mutex is per namespace: writers of different tenants (or
// environments) never wait for each other here. Allocation happens while
// the caller holds the item's lock, so two changes of one item get
// increasing sequence numbers in their commit order.
type nsState struct {
	db *storage.DB
	ns []byte

	mu     sync.Mutex
	loaded bool
	next   uint64 // the next sequence number to hand out
	ceil   uint64 // numbers below ceil are covered by the persisted ceiling
	clock  int64  // the last time (ms) handed out: never goes backwards
	// inflight are the allocations not yet released, in sequence order.
	inflight []*alloc
	streams  map[streamKey]*streamState
	// wake, if not nil, is closed (and cleared) when an allocation is
	// released: Log.Changed's waiters.
	wake chan struct{}
}

// streamState is what a namespace knows of one stream's records.
type streamState struct {
	lastShard uint32 // the shard of the newest record (shards never go backwards)
}

// alloc is one allocated sequence number whose batch is not yet applied.
type alloc struct {
	n     *nsState
	key   streamKey
	seq   uint64
	shard uint32
}

// load reads the namespace's persisted ceiling. REQUIRES: n.mu held.
func (n *nsState) load() error {
	if n.loaded {
		return nil
	}
	v, err := n.db.Get(keyspace.ChangeCeiling(n.ns))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		n.next = 1
	case err != nil:
		return fmt.Errorf("changelog: reading sequence ceiling: %w", err)
	case len(v) != 8:
		return errors.New("changelog: malformed sequence ceiling")
	default:
		// NB: every number below the ceiling may have been used before
		// the restart; none at or above it was.
		n.next = binary.BigEndian.Uint64(v)
	}
	n.ceil = n.next
	n.loaded = true
	return nil
}

// stream returns the namespace's state of stream s, loading the shard of
// its newest record. REQUIRES: n.mu held and n loaded.
func (n *nsState) stream(s Stream) (*streamState, error) {
	k := streamKey{s.Table, s.ID}
	if st := n.streams[k]; st != nil {
		return st, nil
	}
	st := &streamState{}
	lo, hi := keyspace.ChangeStreamRange(n.ns, s.Table, s.ID)
	it := n.db.NewIter(lo, hi)
	defer it.Close()
	if it.Last() {
		key := it.Key()
		st.lastShard = binary.BigEndian.Uint32(key[len(key)-12:])
		ms, err := recordTime(it.Value())
		if err != nil {
			return nil, fmt.Errorf("changelog: reading newest record: %w", err)
		}
		n.clock = max(n.clock, ms)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("changelog: reading newest record: %w", err)
	}
	n.streams[k] = st
	return st, nil
}

// allocate hands out the next sequence number for a change of stream s at
// time nowMS, and the shard it belongs to, leasing a new ceiling first if
// needed. It returns the allocation and the record's time.
func (n *nsState) allocate(s Stream, nowMS int64) (*alloc, int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.load(); err != nil {
		return nil, 0, err
	}
	st, err := n.stream(s)
	if err != nil {
		return nil, 0, err
	}
	if n.next >= n.ceil {
		// NB: the new ceiling is durable before any number under it is
		// used, so a restart never hands out a number twice. Only this
		// namespace's writers wait for the sync, once per leaseSize.
		ceil := n.next + leaseSize
		b := n.db.NewBatch()
		b.Set(keyspace.ChangeCeiling(n.ns), binary.BigEndian.AppendUint64(nil, ceil))
		err := n.db.Apply(b)
		b.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("changelog: leasing sequence numbers: %w", err)
		}
		n.ceil = ceil
	}
	ms := max(n.clock, nowMS)
	n.clock = ms
	a := &alloc{n: n, key: streamKey{s.Table, s.ID}, seq: n.next}
	n.next++
	a.shard = max(s.shardAt(ms), st.lastShard)
	st.lastShard = a.shard
	n.inflight = append(n.inflight, a)
	return a, ms, nil
}

// release ends an allocation (its batch applied or abandoned).
func (a *alloc) release() {
	n := a.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if i := slices.Index(n.inflight, a); i >= 0 {
		n.inflight = slices.Delete(n.inflight, i, i+1)
	}
	if n.wake != nil {
		close(n.wake)
		n.wake = nil
	}
}

// view is a reader's snapshot of a namespace's state for one stream.
type view struct {
	// limit: records with seq >= limit may not be committed yet and must
	// not be read (0: no limit).
	limit uint64
	// minShard: no allocation in flight is in a shard below it
	// (maxShard+1 if none is in flight).
	minShard uint32
	// lastShard: the newest shard holding (or about to hold) a record.
	lastShard uint32
	// next: the sequence number the next allocation will get.
	next  uint64
	clock int64
}

// view returns the reader's view of stream s in the namespace.
func (n *nsState) view(s Stream) (view, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.load(); err != nil {
		return view{}, err
	}
	st, err := n.stream(s)
	if err != nil {
		return view{}, err
	}
	v := view{minShard: maxShard + 1, lastShard: st.lastShard, next: n.next, clock: n.clock}
	k := streamKey{s.Table, s.ID}
	for _, a := range n.inflight {
		if a.key != k {
			continue
		}
		if v.limit == 0 {
			v.limit = a.seq // the first in flight has the lowest number
		}
		v.minShard = min(v.minShard, a.shard)
	}
	return v, nil
}

// shardsSeen tracks, per stream, one more than the highest shard any
// namespace appended to in this process (for DisableStream).
type shardsSeen struct{ m sync.Map }

func (l *Log) noteShard(s Stream, k uint32) {
	v, _ := l.seen.m.LoadOrStore(streamKey{s.Table, s.ID}, new(atomic.Uint64))
	c := v.(*atomic.Uint64)
	for {
		cur := c.Load()
		if cur >= uint64(k)+1 || c.CompareAndSwap(cur, uint64(k)+1) {
			return
		}
	}
}

func (l *Log) maxShardSeen(s Stream) (uint32, bool) {
	v, ok := l.seen.m.Load(streamKey{s.Table, s.ID})
	if !ok {
		return 0, false
	}
	c := v.(*atomic.Uint64).Load()
	return uint32(c - 1), c > 0
}

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
