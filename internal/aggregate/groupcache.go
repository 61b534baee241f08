package aggregate

// groupCache keeps the groups as the worker last committed them, so that
// folding a page does not read every group it touches back from the
// store (and decode its JSON): with a page per read window, that was
// about one store read per change folded under load (BENCHMARKS.md §22).
//
// NB: it is right only because the worker is the only writer of its
// groups while it runs (see worker): it is filled only from batches that
// committed, emptied when one fails or a rebuild replaces the groups, and
// lives only as long as one follow (a restarted worker reads the store).
// The fold changes copies, never the cached states.
type groupCache struct {
	m map[string]*groupState // nil: the group has no state (none stored)
}

// maxCachedGroups bounds the cache; past it, it starts again empty.
const maxCachedGroups = 4096

// load returns a copy of group k's committed state (nil if it has none),
// from the cache or else from read.
func (c *groupCache) load(k string, read func(string) (*groupState, error)) (*groupState, error) {
	if g, ok := c.m[k]; ok {
		if g == nil {
			return nil, nil
		}
		return g.clone(), nil
	}
	return read(k)
}

// committed records the states of touched, just committed; the cache
// keeps them (the caller must not change them afterwards).
func (c *groupCache) committed(touched map[string]*groupState) {
	if c.m == nil || len(c.m)+len(touched) > maxCachedGroups {
		c.m = make(map[string]*groupState, len(touched))
	}
	for k, g := range touched {
		if g.empty() {
			c.m[k] = nil // NB: commit deletes an empty group
		} else {
			c.m[k] = g
		}
	}
}

// reset forgets every group.
func (c *groupCache) reset() { c.m = nil }

// clone returns a deep copy of g.
func (g *groupState) clone() *groupState {
	out := &groupState{Count: g.Count}
	if g.Sums != nil {
		out.Sums = make(map[string]*Decimal, len(g.Sums))
		for a, s := range g.Sums {
			d := &Decimal{scale: s.scale}
			d.coef.Set(&s.coef)
			out.Sums[a] = d
		}
	}
	return out
}
