package changelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// The log as its own consumers read it (webhooks, aggregates,
// point-in-time restore, exports, moves): one table's changes in one
// namespace, across all of the table's streams — visible or hidden,
// enabled or disabled — and their shards, in the namespace's sequence
// order. Sequence numbers are per namespace, shared by every stream, and
// allocated under the item's lock, so sequence order is commit order for
// every item key; a consumer needs nothing but the last number it saw.

// Cursor is a consumer's position in one table's log in one namespace:
// just after the record it names. The zero Cursor is "before the oldest
// retained record".
//
// Only Seq orders: Follow continues with the records numbered above it.
// Stream and Shard say where that record is, so that reading resumes
// with one seek.
type Cursor struct {
	Stream uint64
	Shard  uint32
	Seq    uint64
}

// IsZero reports whether c is the zero Cursor.
func (c Cursor) IsZero() bool { return c == Cursor{} }

// cursorLen is the length of Cursor.String: 16 + 8 + 16 hex digits and
// two dashes.
const cursorLen = 16 + 1 + 8 + 1 + 16

// String returns c as stable, opaque text (ParseCursor reads it back).
func (c Cursor) String() string {
	return fmt.Sprintf("%016x-%08x-%016x", c.Stream, c.Shard, c.Seq)
}

// ParseCursor returns the Cursor that s (a Cursor.String) stands for;
// anything else is an error.
func ParseCursor(s string) (Cursor, error) {
	var c Cursor
	if len(s) != cursorLen || s[16] != '-' || s[25] != '-' {
		return c, fmt.Errorf("changelog: malformed cursor %q", clip(s))
	}
	for i := 0; i < len(s); i++ {
		if i == 16 || i == 25 {
			continue
		}
		if ch := s[i]; !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return c, fmt.Errorf("changelog: malformed cursor %q", clip(s))
		}
	}
	st, err1 := strconv.ParseUint(s[:16], 16, 64)
	sh, err2 := strconv.ParseUint(s[17:25], 16, 32)
	sq, err3 := strconv.ParseUint(s[26:], 16, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return c, fmt.Errorf("changelog: malformed cursor %q", clip(s))
	}
	return Cursor{Stream: st, Shard: uint32(sh), Seq: sq}, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Entry is one committed change as a consumer sees it: always both images
// when the table's log keeps them (a consumer's retention asks for both).
type Entry struct {
	Record                // Keys, Old, New, Event, Time, Expired; Shard and Seq
	Stream         uint64 // the stream holding it
	Next           Cursor // the cursor just after this entry
	EventID        string // the eventID the Streams API shows for this record
	SequenceNumber string // the SequenceNumber the Streams API shows
}

// FollowPage is the result of one Follow.
type FollowPage struct {
	Entries  []Entry
	Next     Cursor // where to continue (== last entry's Next, or from if none)
	CaughtUp bool   // nothing committed after Next right now
}

// trimMark is the newest record of a table that trimming deleted in a
// namespace: a cursor before it, or a time at or before its, has lost
// records.
type trimMark struct {
	Seq uint64
	MS  int64
}

func (m trimMark) encode() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, m.Seq), uint64(m.MS))
}

type getter interface {
	Get(key []byte) ([]byte, error)
}

func readTrimMark(g getter, ns []byte, table uint64) (trimMark, error) {
	v, err := g.Get(keyspace.ChangeTrimmed(ns, table))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return trimMark{}, nil
	case err != nil:
		return trimMark{}, fmt.Errorf("changelog: reading trimmed marker: %w", err)
	case len(v) != 16:
		return trimMark{}, errors.New("changelog: malformed trimmed marker")
	}
	return trimMark{Seq: binary.BigEndian.Uint64(v), MS: int64(binary.BigEndian.Uint64(v[8:]))}, nil
}

// readLimit returns the first sequence number of ns that a reader must
// not read yet: the lowest still being committed, else the next to be
// handed out; idle says nothing is being committed.
func (n *nsState) readLimit() (limit uint64, idle bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.load(); err != nil {
		return 0, false, err
	}
	if len(n.inflight) > 0 {
		return n.inflight[0].seq, false, nil
	}
	return n.next, true, nil
}

// Changed returns a channel closed when a change of namespace ns in db
// next finishes committing (or is abandoned): a Follow that found
// nothing new may find something then.
func (l *Log) Changed(db *storage.DB, ns []byte) <-chan struct{} {
	n := l.store(db).ns(ns)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wake == nil {
		n.wake = make(chan struct{})
	}
	return n.wake
}

// Follow returns up to limit (at least 1) records of table in namespace
// ns of db after from, across all of the table's streams and shards, in
// sequence order (so in commit order per item key). Records are not
// projected to a view type: they carry every image their stream
// captured. It returns ErrTrimmed if trimming deleted a record after a
// non-zero from.
//
// NB: like Read, Follow never returns a record while an
// earlier-numbered change of ns is still being committed.
//
// NB: a record is decoded once for all of Follow's readers (decodedCache):
// entries of different calls may share their images, which callers must
// not modify.
func (l *Log) Follow(db *storage.DB, ns []byte, table uint64, from Cursor, limit int) (FollowPage, error) {
	if limit < 1 {
		return FollowPage{}, fmt.Errorf("changelog: Follow limit %d is not positive", limit)
	}
	// NB: the limit is taken before the snapshot: every number below it
	// is committed (or abandoned) and so in the snapshot if it exists.
	lim, idle, err := l.store(db).ns(ns).readLimit()
	if err != nil {
		return FollowPage{}, err
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	// NB: the streams are listed after the snapshot: a stream's
	// descriptor is written before any record goes to it, so every
	// stream with a record in the snapshot is listed. Listed before the
	// limit, a stream opened in between (a stream switch) would be
	// missed while a later-numbered record of the old stream moved the
	// cursor past its records.
	streams, err := l.Streams(table)
	if err != nil {
		return FollowPage{}, err
	}
	mark, err := readTrimMark(snap, ns, table)
	if err != nil {
		return FollowPage{}, err
	}
	if !from.IsZero() && from.Seq < mark.Seq {
		return FollowPage{}, ErrTrimmed
	}
	var got []Entry
	full := false
	for _, s := range streams {
		es, more, err := l.followStream(snap, ns, s, from, lim, limit)
		if err != nil {
			return FollowPage{}, err
		}
		if got == nil {
			got = es // NB: one stream (the usual case): no copy
		} else {
			got = append(got, es...)
		}
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
	page := FollowPage{Entries: got, Next: from, CaughtUp: idle && !full && len(got) < limit}
	if n := len(got); n > 0 {
		page.Next = got[n-1].Next
	}
	return page, nil
}

// followStream returns up to limit records of stream s in ns numbered
// after from and below lim, in order; more says records were left.
func (l *Log) followStream(snap *storage.Snapshot, ns []byte, s Stream, from Cursor, lim uint64, limit int) (out []Entry, more bool, err error) {
	lo, hi := keyspace.ChangeStreamRange(ns, s.Table, s.ID)
	it := snap.NewIter(lo, hi)
	defer it.Close()
	if !it.Last() || seqOf(it.Key()) <= from.Seq {
		return nil, false, it.Error() // nothing after from here
	}
	// Within a stream a namespace's shards hold increasing numbers, so
	// the records after from are a suffix: find its first shard.
	var k uint32
	if s.ID == from.Stream {
		k = from.Shard
	}
	ok := false
	for {
		ok = it.SeekGE(keyspace.ChangeRecord(ns, s.Table, s.ID, k, from.Seq+1))
		if !ok {
			break
		}
		key := it.Key()
		if seqOf(key) > from.Seq {
			break
		}
		// The seek left shard k for a later shard whose first record is
		// not after from: continue there.
		k = binary.BigEndian.Uint32(key[len(key)-12:])
	}
	var scratch []byte // opened records, one at a time
	for ; ok; ok = it.Next() {
		key := it.Key()
		seq := seqOf(key)
		if seq >= lim {
			break
		}
		if len(out) == limit {
			return out, true, nil
		}
		if out == nil {
			out = make([]Entry, 0, min(limit, 64))
		}
		var d *decodedRecord
		d, scratch, err = l.followRecord(ns, s, key, it.Value(), seq, scratch)
		if err != nil {
			return nil, false, fmt.Errorf("changelog: reading record: %w", err)
		}
		out = append(out, Entry{
			Record:         d.rec,
			Stream:         s.ID,
			Next:           Cursor{Stream: s.ID, Shard: d.rec.Shard, Seq: seq},
			EventID:        d.eventID,
			SequenceNumber: d.seqNum,
		})
	}
	return out, false, it.Error()
}

// CursorAt returns the cursor just before the first record of table in
// ns of db made at or after t (the end of the log if there is none yet),
// or ErrTrimmed if trimming deleted a record made at or after t.
//
// NB: a record's time never goes backwards within a namespace (see
// nsState.allocate), so the first record at or after t is the one with
// the lowest number among them.
func (l *Log) CursorAt(db *storage.DB, ns []byte, table uint64, t time.Time) (Cursor, error) {
	lim, _, err := l.store(db).ns(ns).readLimit()
	if err != nil {
		return Cursor{}, err
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	// NB: listed after the snapshot, as in Follow.
	streams, err := l.Streams(table)
	if err != nil {
		return Cursor{}, err
	}
	tms := t.UnixMilli()
	mark, err := readTrimMark(snap, ns, table)
	if err != nil {
		return Cursor{}, err
	}
	if mark.Seq != 0 && mark.MS >= tms {
		return Cursor{}, ErrTrimmed
	}
	var best Cursor
	found := false
	for _, s := range streams {
		// A record in shard j was made before shard j+1 opened (it goes
		// to the shard of its time or a later one), so the records made
		// at or after t are in shards from t's on.
		lo, hi := keyspace.ChangeStreamRange(ns, s.Table, s.ID)
		it := snap.NewIter(lo, hi)
		for ok := it.SeekGE(keyspace.ChangeShard(ns, s.Table, s.ID, s.shardAt(tms))); ok; ok = it.Next() {
			key := it.Key()
			seq := seqOf(key)
			if seq >= lim || found && seq >= best.Seq+1 {
				break
			}
			ms, err := recordTime(it.Value())
			if err != nil {
				it.Close()
				return Cursor{}, fmt.Errorf("changelog: reading record: %w", err)
			}
			if ms >= tms {
				best, found = Cursor{Stream: s.ID, Shard: binary.BigEndian.Uint32(key[len(key)-12:]), Seq: seq - 1}, true
				break
			}
		}
		err := it.Error()
		it.Close()
		if err != nil {
			return Cursor{}, fmt.Errorf("changelog: reading records: %w", err)
		}
	}
	if found {
		return best, nil
	}
	// Nothing yet: the end of the log, before every change still being
	// committed.
	c := Cursor{Seq: lim - 1}
	if n := len(streams); n > 0 && c.Seq > 0 {
		c.Stream = streams[n-1].ID
	}
	return c, nil
}

// ChangesAfter calls fn with every record of table in namespace ns made
// after t, as snap (a snapshot of the store holding them) has them, in
// sequence order (so in commit order per item key), with every image
// its stream captured. Read with the items from the same snapshot, the
// records are exactly the changes that made those items from what they
// were at t: point-in-time restore undoes them. It returns ErrTrimmed if
// trimming deleted a record made after t.
func (l *Log) ChangesAfter(snap *storage.Snapshot, ns []byte, table uint64, t time.Time, fn func(Entry) error) error {
	streams, err := l.Streams(table)
	if err != nil {
		return err
	}
	tms := t.UnixMilli()
	mark, err := readTrimMark(snap, ns, table)
	if err != nil {
		return err
	}
	if mark.Seq != 0 && mark.MS > tms {
		return ErrTrimmed
	}
	// One iterator per stream, each at its first record made after t;
	// merged by sequence number.
	type head struct {
		s   Stream
		it  *storage.Iter
		ok  bool
		seq uint64
	}
	var heads []*head
	defer func() {
		for _, h := range heads {
			h.it.Close()
		}
	}()
	for _, s := range streams {
		lo, hi := keyspace.ChangeStreamRange(ns, s.Table, s.ID)
		h := &head{s: s, it: snap.NewIter(lo, hi)}
		heads = append(heads, h)
		for h.ok = h.it.SeekGE(keyspace.ChangeShard(ns, s.Table, s.ID, s.shardAt(tms+1))); h.ok; h.ok = h.it.Next() {
			ms, err := recordTime(h.it.Value())
			if err != nil {
				return fmt.Errorf("changelog: reading record: %w", err)
			}
			if ms > tms {
				h.seq = seqOf(h.it.Key())
				break
			}
		}
		if err := h.it.Error(); err != nil {
			return fmt.Errorf("changelog: reading records: %w", err)
		}
	}
	for {
		var next *head
		for _, h := range heads {
			if h.ok && (next == nil || h.seq < next.seq) {
				next = h
			}
		}
		if next == nil {
			return nil
		}
		key := next.it.Key()
		plain, err := l.open(key, next.it.Value())
		if err != nil {
			return fmt.Errorf("changelog: reading record: %w", err)
		}
		r, err := decodeRecord(plain)
		if err != nil {
			return fmt.Errorf("changelog: reading record: %w", err)
		}
		r.Shard, r.Seq = binary.BigEndian.Uint32(key[len(key)-12:]), next.seq
		e := Entry{Record: r, Stream: next.s.ID, Next: Cursor{Stream: next.s.ID, Shard: r.Shard, Seq: r.Seq},
			EventID: l.EventID(ns, next.s, r.Seq), SequenceNumber: FormatSequenceNumber(Position{Shard: r.Shard, Seq: r.Seq})}
		if err := fn(e); err != nil {
			return err
		}
		if next.ok = next.it.Next(); next.ok {
			next.seq = seqOf(next.it.Key())
		} else if err := next.it.Error(); err != nil {
			return fmt.Errorf("changelog: reading records: %w", err)
		}
	}
}

// TrimmedUntil returns the time of the newest record of table in ns that
// trimming deleted (zero if none): the log holds every change made after
// it. A restore or export to a time before it is refused (ErrTrimmed).
func (l *Log) TrimmedUntil(db *storage.DB, ns []byte, table uint64) (time.Time, error) {
	mark, err := readTrimMark(db, ns, table)
	if err != nil || mark.Seq == 0 {
		return time.Time{}, err
	}
	return time.UnixMilli(mark.MS), nil
}

// followRecord returns the record stored as raw at key (of stream s in
// namespace ns, numbered seq) with its event id and sequence number,
// decoded once for all of Follow's readers (decodedCache). scratch is a
// buffer to open the record into (returned, perhaps grown, for the next).
//
// NB: the images of a record returned here may be shared with other
// readers of the log: Follow's callers never modify them, nor the
// returned decodedRecord.
func (l *Log) followRecord(ns []byte, s Stream, key, raw []byte, seq uint64, scratch []byte) (*decodedRecord, []byte, error) {
	if d := l.decoded.get(key, raw); d != nil {
		// NB: the tenant's key decides on a hit too (a destroyed key
		// fails the read, as opening the record would).
		if _, err := l.recordKey(key); err != nil {
			return nil, scratch, err
		}
		return d, scratch, nil
	}
	// NB: decodeRecord copies what it keeps, so the plaintext can go to
	// a buffer reused for the next record.
	plain, err := l.openTo(scratch[:0], key, raw)
	if err != nil {
		return nil, scratch, err
	}
	if len(raw) == 0 || &plain[0] != &raw[0] {
		scratch = plain // NB: a legacy record is its own plaintext: never reuse raw
	}
	r, err := decodeRecord(plain)
	if err != nil {
		return nil, scratch, err
	}
	r.Shard, r.Seq = binary.BigEndian.Uint32(key[len(key)-12:]), seq
	d := &decodedRecord{raw: raw, rec: r, eventID: l.EventID(ns, s, seq),
		seqNum: FormatSequenceNumber(Position{Shard: r.Shard, Seq: seq})}
	l.decoded.put(key, d)
	return d, scratch, nil
}
