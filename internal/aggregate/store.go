package aggregate

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// progress is an aggregate's consumer state, persisted beside its groups
// and written in the same batch as every change to them.
type progress struct {
	// State is "building" until the first (or a requested) rebuild has
	// committed, then "ready".
	State string `json:"state"`
	// Cursor is the log position after the last change folded in.
	Cursor string `json:"cursor"`
	// Skip lists sequence numbers after Cursor whose changes the last
	// rebuild's snapshot already contains (changes that committed out of
	// sequence order around it): they are passed over, not folded twice.
	Skip []uint64 `json:"skip,omitempty"`
	// Applied counts the changes folded in since the last rebuild.
	Applied uint64 `json:"applied"`
	// Last is the commit time (Unix ms) of the last change folded in.
	Last int64 `json:"last,omitempty"`
	// Rebuilt is when the last rebuild committed; Rebuilds counts them.
	Rebuilt  time.Time `json:"rebuilt,omitzero"`
	Rebuilds uint64    `json:"rebuilds"`
	// Scanned is the number of items the last rebuild read.
	Scanned uint64 `json:"scanned"`

	// On a gateway (gateway.go): Gen names the generation of groups the
	// progress counts (a build writes a new one, Next, and makes it the
	// aggregate's with the progress); Holder works the aggregate until
	// Expires (its lease) and last read the feed at Seen; LagMS is the
	// lag the holder last wrote; Reason says why it is building.
	Gen     string    `json:"gen,omitempty"`
	Next    string    `json:"next,omitempty"`
	Holder  string    `json:"holder,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
	Seen    time.Time `json:"seen,omitzero"`
	LagMS   int64     `json:"lag_ms,omitempty"`
	Reason  string    `json:"reason,omitempty"`
}

const (
	stateBuilding = "building"
	stateReady    = "ready"
)

func (p *progress) marshal() []byte {
	b, _ := json.Marshal(p)
	return b
}

func (p *progress) cursor() (Cursor, error) {
	if p.Cursor == "" {
		return Cursor{}, nil
	}
	return ParseCursor(p.Cursor)
}

// store reads and writes aggregates in the main store, inside the owning
// namespace.
type store struct{ db *storage.DB }

var errNoAggregate = errors.New("aggregate: no such aggregate")

func (st store) definition(ns []byte, name string) (*Definition, error) {
	b, err := st.db.Get(keyspace.AggregateDefinition(ns, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errNoAggregate
	}
	if err != nil {
		return nil, err
	}
	return unmarshalDefinition(b)
}

// reader is what info reads: the store, or one snapshot of it.
type reader interface {
	Get(key []byte) ([]byte, error)
	NewIter(lower, upper []byte) *storage.Iter
}

func (st store) progress(ns []byte, name string) (*progress, error) {
	return progressIn(st.db, ns, name)
}

func progressIn(r reader, ns []byte, name string) (*progress, error) {
	b, err := r.Get(keyspace.AggregateProgress(ns, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errNoAggregate
	}
	if err != nil {
		return nil, err
	}
	p := new(progress)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("aggregate: decode progress: %w", err)
	}
	return p, nil
}

func (st store) group(ns []byte, name, key string) (*groupState, error) {
	b, err := st.db.Get(keyspace.AggregateGroup(ns, name, []byte(key)))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return unmarshalGroup(b)
}

// groups returns all groups of an aggregate by key.
func (st store) groups(ns []byte, name string) (map[string]*groupState, error) {
	return groupsIn(st.db, ns, name)
}

func groupsIn(r reader, ns []byte, name string) (map[string]*groupState, error) {
	lo, hi := keyspace.AggregateGroups(ns, name)
	it := r.NewIter(lo, hi)
	defer it.Close()
	out := map[string]*groupState{}
	for ok := it.First(); ok; ok = it.Next() {
		g, err := unmarshalGroup(it.Value())
		if err != nil {
			return nil, err
		}
		out[string(it.Key()[len(lo):])] = g
	}
	return out, it.Error()
}

// names returns the names of the aggregates of namespace ns.
func (st store) names(ns []byte) ([]string, error) {
	lo, hi := keyspace.Aggregates(ns)
	it := st.db.NewIter(lo, hi)
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		name, ok := keyspace.AggregateName(ns, it.Key())
		if !ok {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != name {
			out = append(out, name)
		}
	}
	return out, it.Error()
}

// create writes a new aggregate's definition, its initial progress and
// its registry entry in one batch.
func (st store) create(ns []byte, d *Definition) error {
	b := st.db.NewBatch()
	defer b.Close()
	b.Set(keyspace.AggregateDefinition(ns, d.Name), d.marshal())
	b.Set(keyspace.AggregateProgress(ns, d.Name), (&progress{State: stateBuilding}).marshal())
	b.Set(keyspace.AggregateRegistry(ns, d.Name), nil)
	return st.db.Apply(b)
}

// remove deletes everything of an aggregate and its registry entry.
func (st store) remove(ns []byte, name string) error {
	b := st.db.NewBatch()
	defer b.Close()
	lo, hi := keyspace.AggregateRange(ns, name)
	b.DeleteRange(lo, hi)
	b.Delete(keyspace.AggregateRegistry(ns, name))
	return st.db.Apply(b)
}

// setProgress writes p alone (to mark a rebuild requested).
func (st store) setProgress(ns []byte, name string, p *progress) error {
	b := st.db.NewBatch()
	defer b.Close()
	b.Set(keyspace.AggregateProgress(ns, name), p.marshal())
	return st.db.Apply(b)
}

// commit writes the groups a fold touched and the progress after it in
// one atomic batch, synced only with sync. With replace, every other
// group is removed first (a rebuild).
//
// NB: this one batch is what makes the aggregate exactly once: the
// groups never move without the cursor, nor the cursor without them.
// It need not be synced for that: a crash keeps a prefix of the store's
// batches (the WAL is replayed in order, and any later synced write
// syncs this one too), so it loses the groups and the cursor together
// and the restarted worker folds the same changes again from the older
// cursor; the changes themselves are in the log, which the writers
// synced. Only a rebuild, which cannot be redone from the log, syncs.
func (st store) commit(ns []byte, name string, touched map[string]*groupState, p *progress, replace, sync bool) error {
	b := st.db.NewBatch()
	defer b.Close()
	if replace {
		lo, hi := keyspace.AggregateGroups(ns, name)
		b.DeleteRange(lo, hi)
	}
	for k, g := range touched {
		key := keyspace.AggregateGroup(ns, name, []byte(k))
		if g.empty() {
			b.Delete(key)
		} else {
			b.Set(key, g.marshal())
		}
	}
	b.Set(keyspace.AggregateProgress(ns, name), p.marshal())
	if !sync {
		return st.db.ApplyNoSync(b)
	}
	return st.db.Apply(b)
}

// registry returns every (namespace, name) with an aggregate.
func (st store) registry() ([][]byte, []string, error) {
	lo, hi := keyspace.AggregateRegistryRange()
	it := st.db.NewIter(lo, hi)
	defer it.Close()
	var nss [][]byte
	var names []string
	for ok := it.First(); ok; ok = it.Next() {
		ns, name, ok := keyspace.SplitAggregateRegistry(it.Key())
		if !ok {
			continue
		}
		nss, names = append(nss, ns), append(names, name)
	}
	return nss, names, it.Error()
}
