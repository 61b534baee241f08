package engine

import (
	"hash/maphash"
	"sort"
	"sync"
)

// lockTable serializes conditional writes and transactions per item: a
// write locks the stripes of the physical keys it reads and writes, in
// stripe order (so transactions cannot deadlock), reads the current items,
// evaluates conditions and commits one storage batch before unlocking.
// NB: lock striping may make unrelated keys wait on each other; it never
// lets two writers of one key interleave.
type lockTable struct {
	seed    maphash.Seed
	stripes [4096]sync.Mutex
}

func (l *lockTable) init() { l.seed = maphash.MakeSeed() }

// lock locks the stripes of keys and returns the function that unlocks them.
func (l *lockTable) lock(keys ...[]byte) (unlock func()) {
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, int(maphash.Bytes(l.seed, k)%uint64(len(l.stripes))))
	}
	sort.Ints(idx)
	n := 0
	for i, s := range idx {
		if i == 0 || s != idx[i-1] {
			idx[n] = s
			n++
		}
	}
	idx = idx[:n]
	for _, s := range idx {
		l.stripes[s].Lock()
	}
	return func() {
		for i := len(idx) - 1; i >= 0; i-- {
			l.stripes[idx[i]].Unlock()
		}
	}
}

// barrier waits until every write that holds a stripe now has finished. A
// catalog change that is published before barrier is called is therefore
// seen by every write that commits afterwards (writers re-read their
// table's definition with their stripes held). See DESIGN.md.
func (l *lockTable) barrier() {
	for i := range l.stripes {
		l.stripes[i].Lock()
		l.stripes[i].Unlock() //nolint:staticcheck // an empty critical section is the point
	}
}

// lockAll locks every stripe, holding off every write until the returned
// function unlocks them (a consistent copy of the stores: Checkpoint).
func (l *lockTable) lockAll() (unlock func()) {
	for i := range l.stripes {
		l.stripes[i].Lock()
	}
	return func() {
		for i := len(l.stripes) - 1; i >= 0; i-- {
			l.stripes[i].Unlock()
		}
	}
}
