package changelog

import (
	"math"

	"github.com/tenantdb/tenantdb/internal/storage"
)

// SnapshotAt opens a snapshot of db (the caller closes it) and returns
// its position in the log of table in namespace ns: every record of ns
// numbered at or below at.Seq is in the snapshot (or was abandoned and
// never will be), and of the later records the snapshot holds exactly
// those in included — changes that finished committing while an
// earlier-numbered one was still in flight. A consumer that rebuilds its
// state from the snapshot's items and then follows from at, passing over
// included, sees every change exactly once (package aggregate's
// rebuild).
func (l *Log) SnapshotAt(db *storage.DB, ns []byte, table uint64) (snap *storage.Snapshot, at Cursor, included []Cursor, err error) {
	// NB: as in Follow, the limit is taken before the snapshot: every
	// number below it is committed or abandoned, so in the snapshot if
	// it exists; and the streams are listed after it, so every stream
	// holding a record of the snapshot is (else a record of a stream
	// opened in between would be counted by the snapshot and followed
	// again).
	lim, _, err := l.store(db).ns(ns).readLimit()
	if err != nil {
		return nil, Cursor{}, nil, err
	}
	snap = db.NewSnapshot()
	streams, err := l.Streams(table)
	if err != nil {
		snap.Close()
		return nil, Cursor{}, nil, err
	}
	if lim > 0 {
		at.Seq = lim - 1
	}
	if n := len(streams); n > 0 && at.Seq > 0 {
		at.Stream = streams[n-1].ID
	}
	for _, s := range streams {
		es, _, err := l.followStream(snap, ns, s, Cursor{Seq: at.Seq}, math.MaxUint64, math.MaxInt)
		if err != nil {
			snap.Close()
			return nil, Cursor{}, nil, err
		}
		for _, e := range es {
			included = append(included, e.Next)
		}
	}
	return snap, at, included, nil
}
