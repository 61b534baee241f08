package changelog

import (
	"fmt"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// moveBatchBytes bounds one batch of MoveToMain.
const moveBatchBytes = 4 << 20

// MoveToMain copies the records namespace ns holds in store from of every
// stream of table (and their trim horizons) into the main store, and
// registers them there for trimming, so that they stay readable through
// the main store after from is removed: a dropped silo table's stream is
// readable until retention, as every deleted table's is. It is
// idempotent: run it again after a crash and the copy completes; from is
// left as it was. REQUIRES: no Append of those streams in from in flight
// or to come (the table is unpublished and its streams disabled).
func (l *Log) MoveToMain(from *storage.DB, ns []byte, table uint64) error {
	if from == l.main {
		return nil
	}
	streams, err := l.Streams(table)
	if err != nil {
		return err
	}
	for _, s := range streams {
		if err := l.moveStream(from, ns, s); err != nil {
			return err
		}
	}
	return nil
}

func (l *Log) moveStream(from *storage.DB, ns []byte, s Stream) error {
	b := l.main.NewBatch()
	defer func() { b.Close() }()
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if err := l.main.Apply(b); err != nil {
			return fmt.Errorf("changelog: copying records: %w", err)
		}
		b.Close()
		b = l.main.NewBatch()
		return nil
	}
	lo, hi := keyspace.ChangeStreamRange(ns, s.Table, s.ID)
	it := from.NewIter(lo, hi)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		b.Set(it.Key(), it.Value())
		n++
		if b.Size() >= moveBatchBytes {
			if err := flush(); err != nil {
				it.Close()
				return err
			}
		}
	}
	err := it.Error()
	it.Close()
	if err != nil {
		return fmt.Errorf("changelog: reading records to copy: %w", err)
	}
	h, err := l.horizon(from, ns, s)
	if err != nil {
		return err
	}
	if n == 0 && h == (Position{}) {
		return flush() // nothing of s in ns
	}
	if h != (Position{}) {
		b.Set(keyspace.ChangeHorizon(ns, s.Table, s.ID), encodePosition(h))
	}
	// NB: the entry last, with the rest of the copy: Trim finds the
	// records only once they are all there.
	entry := keyspace.ChangeLogEntry(ns, s.Table, s.ID)
	b.Set(entry, nil)
	if err := flush(); err != nil {
		return err
	}
	l.store(l.main).registered.Store(string(entry), struct{}{})
	return nil
}
