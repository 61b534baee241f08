package changelog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/storage"
)

// follower reads a stream in one namespace the way a consumer following
// shards does: every shard from its trim horizon, a child only after its
// parent is drained, polling the open shard.
type follower struct {
	l    *Log
	db   *storage.DB
	ns   []byte
	s    func() Stream // the current descriptor
	pos  Position
	recs []Record
}

// poll reads what is readable now; it returns false once the stream's
// last shard is drained.
func (f *follower) poll(t *testing.T) bool {
	t.Helper()
	for {
		s := f.s()
		pg, err := f.l.Read(f.db, f.ns, s, f.pos, 7, 1<<20)
		if err != nil {
			t.Error(err)
			return false
		}
		f.recs = append(f.recs, pg.Records...)
		f.pos = pg.Next
		if !pg.Drained {
			if len(pg.Records) > 0 {
				continue
			}
			return true
		}
		if !s.Enabled() && f.pos.Shard >= s.lastShard() {
			return false
		}
		f.pos = Position{Shard: f.pos.Shard + 1} // the child
	}
}

// TestFollowShardsUnderLoad: writers of three tenants commit changes
// (each key under its own lock, as the engine's stripes) while the clock
// moves across several rollovers; a follower per tenant reads the stream
// concurrently, shard after shard, until the stream is disabled and
// drained. Each follower sees exactly its tenant's committed changes, in
// per-key order, none twice, none missing.
func TestFollowShardsUnderLoad(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	l := newLog(t, db, c, func(o *Options) { o.Rollover = time.Second })
	s0, _ := l.CreateStream(1, NewImage, "tbl", nil, nil)
	var cur atomic.Pointer[Stream]
	cur.Store(&s0)
	const tenants, keys, writers, writes = 3, 5, 6, 60
	var locks [tenants][keys]sync.Mutex
	var counts [tenants][keys]int
	var committed [tenants]atomic.Int64

	stop := make(chan struct{})
	var fw sync.WaitGroup
	followers := make([]*follower, tenants)
	for tn := range followers {
		f := &follower{l: l, db: db, ns: tenantNS(byte(tn), "live"), s: func() Stream { return *cur.Load() }}
		followers[tn] = f
		fw.Add(1)
		go func() {
			defer fw.Done()
			for {
				if !f.poll(t) {
					return
				}
				select {
				case <-stop:
				default:
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
	}

	var ww sync.WaitGroup
	for w := 0; w < writers; w++ {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := 0; i < writes; i++ {
				tn, k := (w+i)%tenants, (w*3+i)%keys
				ns := tenantNS(byte(tn), "live")
				pk := fmt.Sprintf("k%d", k)
				locks[tn][k].Lock()
				n := counts[tn][k]
				counts[tn][k]++
				commit(t, l, db, ns, *cur.Load(), Change{Keys: key(pk), Existed: n > 0, New: item(pk, fmt.Sprint(n))})
				locks[tn][k].Unlock()
				committed[tn].Add(1)
				if i%10 == 0 {
					c.add(300 * time.Millisecond) // rollovers while writing
				}
			}
		}()
	}
	ww.Wait()
	s, err := l.DisableStream(1, s0.ID)
	if err != nil {
		t.Fatal(err)
	}
	cur.Store(&s)
	close(stop)
	fw.Wait()

	shards := 0
	for tn, f := range followers {
		next := map[string]int{}
		for _, r := range f.recs {
			pk := r.Keys["pk"].S
			if got := r.New["v"].S; got != fmt.Sprint(next[pk]) {
				t.Errorf("tenant %d key %s: change %s where %d was due", tn, pk, got, next[pk])
			}
			next[pk]++
			shards = max(shards, int(r.Shard))
		}
		if got, want := int64(len(f.recs)), committed[tn].Load(); got != want {
			t.Errorf("tenant %d: follower read %d changes, %d committed", tn, got, want)
		}
	}
	if shards < 3 {
		t.Errorf("changes spread over %d shards; the test means to cross rollovers", shards+1)
	}
}
