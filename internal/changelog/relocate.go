package changelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// Relocation: the engine moves one table's data of a namespace from one
// store to another (a tenant moving between the pool and its silo). The
// records move with the items, under the same keys, so that every
// consumer's cursor, shard iterator and sequence number keeps its meaning:
// the destination holds the same streams, shards and numbers, and its
// numbers for the namespace continue above the source's (Adopt).

// source is what a copy reads: a store or a snapshot of it.
type source interface {
	Get(key []byte) ([]byte, error)
	NewIter(lower, upper []byte) *storage.Iter
}

// FollowSettled is Follow without the in-flight limit: it returns the
// records after from of table in ns of db from one snapshot, in sequence
// order. REQUIRES: no append of table in ns in flight or to come in db
// until the caller is done (the engine has blocked the table's writers);
// appends of other tables in flight do not matter.
func (l *Log) FollowSettled(db *storage.DB, ns []byte, table uint64, from Cursor, limit int) (FollowPage, error) {
	if limit < 1 {
		return FollowPage{}, fmt.Errorf("changelog: FollowSettled limit %d is not positive", limit)
	}
	streams, err := l.Streams(table)
	if err != nil {
		return FollowPage{}, err
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	var got []Entry
	full := false
	for _, s := range streams {
		es, more, err := l.followStream(snap, ns, s, from, math.MaxUint64, limit)
		if err != nil {
			return FollowPage{}, err
		}
		got = append(got, es...)
		full = full || more
	}
	slices.SortFunc(got, func(a, b Entry) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	if len(got) > limit {
		got, full = got[:limit], true
	}
	page := FollowPage{Entries: got, Next: from, CaughtUp: !full}
	if n := len(got); n > 0 {
		page.Next = got[n-1].Next
	}
	return page, nil
}

// CopyRecord copies the stored record e (of table in ns, as Follow
// returned it) from src into b, a batch of the destination, as it is
// stored (sealed under the same key). A record trimmed from src since is
// skipped.
func (l *Log) CopyRecord(src source, b *storage.Batch, ns []byte, table uint64, e Entry) error {
	k := keyspace.ChangeRecord(ns, table, e.Stream, e.Shard, e.Seq)
	v, err := src.Get(k)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("changelog: reading a record to copy: %w", err)
	}
	b.Set(k, v)
	return nil
}

// CopyTable copies, from src (a snapshot or store) into b, every stored
// record of table in ns and its per-table state: the streams' trim
// horizons and the table's trimmed marker. The change log entries (what
// Trim visits) are added by Adopt, once the destination is in use.
func (l *Log) CopyTable(src source, b *storage.Batch, ns []byte, table uint64, flush func() error) error {
	lo, hi := keyspace.ChangeTableRange(ns, table)
	it := src.NewIter(lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		b.Set(it.Key(), it.Value())
		if b.Size() >= moveBatchBytes {
			if err := flush(); err != nil {
				it.Close()
				return err
			}
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("changelog: reading records to copy: %w", err)
	}
	return l.copyMeta(src, b, ns, table)
}

func (l *Log) copyMeta(src source, b *storage.Batch, ns []byte, table uint64) error {
	streams, err := l.Streams(table)
	if err != nil {
		return err
	}
	keys := [][]byte{keyspace.ChangeTrimmed(ns, table)}
	for _, s := range streams {
		keys = append(keys, keyspace.ChangeHorizon(ns, s.Table, s.ID))
	}
	for _, k := range keys {
		v, err := src.Get(k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("changelog: reading change log state to copy: %w", err)
		}
		b.Set(k, v)
	}
	return nil
}

// Adopt makes dst the store of table's log in ns, once every record of
// table in ns has been copied from src into dst (CopyTable, CopyRecord)
// and no append of table in ns is in flight in src: it copies the trim
// state again, registers dst's entries (so dst's Trim visits them),
// raises dst's sequence numbers (and clock) for ns above every number
// src used, durably, so the table's numbers keep increasing across the
// move, forgets what dst knew of the table's streams in ns (their newest
// shard is re-read from the copied records) and wakes src's waiters
// (Changed), who must look again through dst.
func (l *Log) Adopt(src, dst *storage.DB, ns []byte, table uint64) error {
	streams, err := l.Streams(table)
	if err != nil {
		return err
	}
	sn := l.store(src).ns(ns)
	sn.mu.Lock()
	if err := sn.load(); err != nil {
		sn.mu.Unlock()
		return err
	}
	next, clock := sn.next, sn.clock
	sn.mu.Unlock()

	b := dst.NewBatch()
	defer b.Close()
	if err := l.copyMeta(src, b, ns, table); err != nil {
		return err
	}
	dstore := l.store(dst)
	var regs []string
	for _, s := range streams {
		lo, hi := keyspace.ChangeStreamRange(ns, s.Table, s.ID)
		it := dst.NewIter(lo, hi)
		has := it.First()
		if err := it.Close(); err != nil {
			return fmt.Errorf("changelog: reading copied records: %w", err)
		}
		if has {
			reg := keyspace.ChangeLogEntry(ns, s.Table, s.ID)
			b.Set(reg, nil)
			regs = append(regs, string(reg))
		}
	}
	dn := dstore.ns(ns)
	dn.mu.Lock()
	defer dn.mu.Unlock()
	if err := dn.load(); err != nil {
		return err
	}
	if dn.next < next {
		dn.next = next
	}
	if dn.ceil < dn.next+1 {
		// NB: the ceiling goes with the batch: after a restart dst's
		// numbers start above every number src used.
		b.Set(keyspace.ChangeCeiling(ns), binary.BigEndian.AppendUint64(nil, dn.next+leaseSize))
	}
	if err := dst.Apply(b); err != nil {
		return fmt.Errorf("changelog: adopting a moved log: %w", err)
	}
	if dn.ceil < dn.next+1 {
		dn.ceil = dn.next + leaseSize
	}
	dn.clock = max(dn.clock, clock)
	for _, s := range streams {
		delete(dn.streams, streamKey{s.Table, s.ID})
	}
	for _, r := range regs {
		dstore.registered.Store(r, struct{}{})
	}
	sn.mu.Lock()
	for _, s := range streams {
		delete(sn.streams, streamKey{s.Table, s.ID})
	}
	if sn.wake != nil {
		close(sn.wake)
		sn.wake = nil
	}
	sn.mu.Unlock()
	return nil
}

// Forget deletes from db everything of table's log in ns: its records,
// trim horizons, trimmed marker and entries (a moved table's source once
// the move is done, or a destination a failed move filled). The sequence
// ceiling of ns stays (numbers are never reused). REQUIRES: no append of
// table in ns in db in flight or to come.
func (l *Log) Forget(db *storage.DB, ns []byte, table uint64) error {
	streams, err := l.Streams(table)
	if err != nil {
		return err
	}
	st := l.store(db)
	b := db.NewBatch()
	defer b.Close()
	lo, hi := keyspace.ChangeTableRange(ns, table)
	b.DeleteRange(lo, hi)
	b.Delete(keyspace.ChangeTrimmed(ns, table))
	var regs []string
	for _, s := range streams {
		b.Delete(keyspace.ChangeHorizon(ns, s.Table, s.ID))
		reg := keyspace.ChangeLogEntry(ns, s.Table, s.ID)
		b.Delete(reg)
		regs = append(regs, string(reg))
	}
	if err := db.Apply(b); err != nil {
		return fmt.Errorf("changelog: forgetting a moved log: %w", err)
	}
	for _, r := range regs {
		st.registered.Delete(r)
	}
	n := st.ns(ns)
	n.mu.Lock()
	for _, s := range streams {
		delete(n.streams, streamKey{s.Table, s.ID})
	}
	n.mu.Unlock()
	return nil
}

// Wake wakes the waiters (Changed) of namespace ns in db: the table they
// follow has moved to another store, where they must look again.
func (l *Log) Wake(db *storage.DB, ns []byte) {
	n := l.store(db).ns(ns)
	n.mu.Lock()
	if n.wake != nil {
		close(n.wake)
		n.wake = nil
	}
	n.mu.Unlock()
}
