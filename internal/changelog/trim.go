package changelog

import (
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TrimStats reports what one Trim pass did.
type TrimStats struct {
	Streams   int // (namespace, stream) ranges visited
	Trimmed   int // ranges whose horizon moved
	Forgotten int // ranges deleted whole (stream gone or expired)
}

// Trim deletes the records of db older than the retention period, and
// everything of streams disabled longer ago than that, with range
// deletions; in the main store it then deletes those streams'
// descriptors. It reads at most Options.TrimBudget records per range and
// pass (the rest waits for the next pass), takes no lock that a writer
// takes, and never deletes a record newer than the retention period, so
// writers are not stalled. Run it periodically for every store.
func (l *Log) Trim(db *storage.DB) (TrimStats, error) {
	// NB: one pass at a time: the trimmed markers are read, raised and
	// written back.
	l.trimMu.Lock()
	defer l.trimMu.Unlock()
	var st TrimStats
	now := l.now()
	cutoffOf := func(s Stream) int64 { return now.Add(-l.retention(s)).UnixMilli() }
	streams := map[streamKey]*Stream{} // nil: gone
	lo, hi := keyspace.ChangeLogEntries()
	it := db.NewIter(lo, hi)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		ns, table, id, okEntry := keyspace.ParseChangeLogEntry(it.Key())
		if !okEntry {
			continue
		}
		st.Streams++
		k := streamKey{table, id}
		s, seen := streams[k]
		if !seen {
			got, err := l.Stream(table, id)
			switch {
			case errors.Is(err, ErrStreamNotFound):
			case err != nil:
				return st, err
			default:
				s = &got
			}
			streams[k] = s
		}
		if s == nil || !s.Enabled() && s.Disabled.UnixMilli() <= cutoffOf(*s) {
			if err := l.forget(db, ns, table, id); err != nil {
				return st, err
			}
			st.Forgotten++
			continue
		}
		moved, err := l.trimRange(db, ns, *s, cutoffOf(*s))
		if err != nil {
			return st, err
		}
		if moved {
			st.Trimmed++
		}
	}
	if err := it.Error(); err != nil {
		return st, fmt.Errorf("changelog: listing change logs: %w", err)
	}
	if db == l.main {
		if err := l.dropExpiredStreams(cutoffOf); err != nil {
			return st, err
		}
	}
	return st, nil
}

// forget deletes everything of one stream in ns: records, horizon and
// the entry that lists it.
func (l *Log) forget(db *storage.DB, ns []byte, table, id uint64) error {
	b := db.NewBatch()
	defer b.Close()
	lo, hi := keyspace.ChangeStreamRange(ns, table, id)
	if err := l.markTrimmed(db, b, ns, table, lo, hi); err != nil {
		return err
	}
	b.DeleteRange(lo, hi)
	b.Delete(keyspace.ChangeHorizon(ns, table, id))
	entry := keyspace.ChangeLogEntry(ns, table, id)
	b.Delete(entry)
	if err := db.Apply(b); err != nil {
		return fmt.Errorf("changelog: deleting an expired stream: %w", err)
	}
	l.store(db).registered.Delete(string(entry))
	return nil
}

// trimRange moves the horizon of stream s in ns up to the first record
// not older than cutoff (ms), deleting what lies before it.
func (l *Log) trimRange(db *storage.DB, ns []byte, s Stream, cutoff int64) (bool, error) {
	h, err := l.horizon(db, ns, s)
	if err != nil {
		return false, err
	}
	target := Position{Shard: s.shardAt(cutoff)}
	if s.shardStart(0) > cutoff {
		return false, nil
	}
	if h.Less(target) {
		h = target // every shard before the cutoff's is past retention
	}
	// Within the cutoff's shard, records are in time order (a namespace's
	// clock never goes backwards): skip those older than the cutoff.
	lo, hi := shardBounds(ns, s, h.Shard, h.Seq, 0)
	it := db.NewIter(lo, hi)
	for ok, n := it.First(), 0; ok && n < l.opts.TrimBudget; ok, n = it.Next(), n+1 {
		ms, err := recordTime(it.Value())
		if err != nil {
			it.Close()
			return false, fmt.Errorf("changelog: trimming: %w", err)
		}
		if ms >= cutoff {
			break
		}
		h.Seq = seqOf(it.Key()) + 1
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return false, fmt.Errorf("changelog: trimming: %w", err)
	}
	old, err := l.horizon(db, ns, s)
	if err != nil || !old.Less(h) {
		return false, err
	}
	b := db.NewBatch()
	defer b.Close()
	lo, hi = keyspace.ChangeStream(ns, s.Table, s.ID), keyspace.ChangeRecord(ns, s.Table, s.ID, h.Shard, h.Seq)
	if err := l.markTrimmed(db, b, ns, s.Table, lo, hi); err != nil {
		return false, err
	}
	b.DeleteRange(lo, hi)
	// NB: the horizon moves in the same batch as the deletion, so a reader
	// sees either the records or the horizon past them, never a gap.
	b.Set(keyspace.ChangeHorizon(ns, s.Table, s.ID), encodePosition(h))
	if err := db.Apply(b); err != nil {
		return false, fmt.Errorf("changelog: trimming: %w", err)
	}
	return true, nil
}

// dropExpiredStreams deletes the descriptors of streams disabled before
// their cutoff (ms). Stores still holding their records find the
// descriptor gone and delete them in their next Trim.
func (l *Log) dropExpiredStreams(cutoffOf func(Stream) int64) error {
	l.ddl.Lock()
	defer l.ddl.Unlock()
	lo, hi := keyspace.AllStreamDescriptors()
	it := l.main.NewIter(lo, hi)
	defer it.Close()
	b := l.main.NewBatch()
	defer b.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		s, err := decodeStream(beUint64(k[len(k)-16:]), beUint64(k[len(k)-8:]), it.Value())
		if err != nil {
			return err
		}
		if !s.Enabled() && s.Disabled.UnixMilli() <= cutoffOf(s) {
			deleteStream(b, s)
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("changelog: listing streams: %w", err)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := l.main.Apply(b); err != nil {
		return fmt.Errorf("changelog: deleting expired streams: %w", err)
	}
	return nil
}

// markTrimmed adds to b, which deletes the records of a table in ns in
// [lo, hi), the raise of the table's trimmed marker to the newest of
// them (Follow reports a cursor before it as trimmed). REQUIRES:
// l.trimMu held.
func (l *Log) markTrimmed(db *storage.DB, b *storage.Batch, ns []byte, table uint64, lo, hi []byte) error {
	it := db.NewIter(lo, hi)
	defer it.Close()
	if !it.Last() {
		return it.Error()
	}
	m := trimMark{Seq: seqOf(it.Key())}
	ms, err := recordTime(it.Value())
	if err != nil {
		return fmt.Errorf("changelog: trimming: %w", err)
	}
	m.MS = ms
	old, err := readTrimMark(db, ns, table)
	if err != nil {
		return err
	}
	if old.Seq >= m.Seq && old.MS >= m.MS {
		return nil
	}
	m.Seq, m.MS = max(m.Seq, old.Seq), max(m.MS, old.MS)
	b.Set(keyspace.ChangeTrimmed(ns, table), m.encode())
	return nil
}

// DropTenant forgets tenant t in db: the entries listing its namespaces'
// change logs and their in-memory state. The records, ceilings and
// horizons are inside the tenant's key range, which the caller deletes
// (before or after). REQUIRES: no Append for t in flight or to come.
func (l *Log) DropTenant(db *storage.DB, t tenancy.TenantID) error {
	lo, hi := keyspace.TenantChangeLogEntries(t)
	if err := db.DeleteRange(lo, hi); err != nil {
		return fmt.Errorf("changelog: dropping tenant: %w", err)
	}
	l.store(db).dropTenant(t)
	if db == l.main {
		return l.dropOwnedStreams(t)
	}
	return nil
}

// dropOwnedStreams deletes the descriptors of streams of tables that
// tenant t owned (their records went with the tenant's range).
func (l *Log) dropOwnedStreams(t tenancy.TenantID) error {
	l.ddl.Lock()
	defer l.ddl.Unlock()
	owned, err := l.ownedStreams(t)
	if err != nil || len(owned) == 0 {
		return err
	}
	b := l.main.NewBatch()
	defer b.Close()
	for _, s := range owned {
		deleteStream(b, s)
	}
	if err := l.main.Apply(b); err != nil {
		return fmt.Errorf("changelog: dropping tenant streams: %w", err)
	}
	return nil
}
