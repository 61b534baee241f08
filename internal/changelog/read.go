package changelog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// Position is a place in a stream as one namespace sees it: the next
// record to read is the first of shard Shard with a sequence number at
// least Seq.
type Position struct {
	Shard uint32
	Seq   uint64
}

// Less reports whether p is before q.
func (p Position) Less(q Position) bool {
	return p.Shard < q.Shard || p.Shard == q.Shard && p.Seq < q.Seq
}

// Shard is one shard of a stream as one namespace sees it.
type Shard struct {
	Index     uint32
	HasParent bool   // false for the stream's first shard
	Parent    uint32 // Index-1 when HasParent
	// First and Last are the sequence numbers of the shard's oldest kept
	// and newest records in the namespace; Empty if it holds none.
	First, Last uint64
	Empty       bool
	// Closed: the shard takes no more records in the namespace.
	Closed bool
}

// Shards returns the shards of stream s that namespace ns of db can still
// read, oldest first: those whose window ends within the retention period
// and that are not wholly trimmed, up to the current (or, for a disabled
// stream, the last) shard.
func (l *Log) Shards(db *storage.DB, ns []byte, s Stream) ([]Shard, error) {
	v, err := l.store(db).ns(ns).view(s)
	if err != nil {
		return nil, err
	}
	lo, hi, err := l.shardSpan(db, ns, s, v)
	if err != nil {
		return nil, err
	}
	var out []Shard
	for k := lo; k <= hi && k >= lo; k++ {
		sh := Shard{Index: k, HasParent: k > 0, Parent: k - 1, Closed: l.closed(s, v, k)}
		if err := l.shardRange(db, ns, s, v, &sh); err != nil {
			return nil, err
		}
		out = append(out, sh)
		if k == maxShard {
			break
		}
	}
	return out, nil
}

// shardSpan returns the first and last shard a reader of ns may see.
func (l *Log) shardSpan(db *storage.DB, ns []byte, s Stream, v view) (lo, hi uint32, err error) {
	now := max(l.now().UnixMilli(), v.clock)
	hi = max(s.shardAt(now), v.lastShard)
	if !s.Enabled() {
		hi = max(s.lastShard(), v.lastShard)
	}
	lo = s.shardAt(l.now().Add(-l.opts.Retention).UnixMilli())
	if h, err := l.horizon(db, ns, s); err != nil {
		return 0, 0, err
	} else {
		lo = max(lo, h.Shard)
	}
	return min(lo, hi), hi, nil
}

// closed reports whether shard k of s takes no more records in the
// namespace whose view is v.
func (l *Log) closed(s Stream, v view, k uint32) bool {
	if v.minShard <= k {
		return false // a record of k (or before) is still being committed
	}
	if !s.Enabled() {
		return true
	}
	// NB: a record goes to the shard of its time or, if a later one
	// already holds records, to that one: never to an earlier shard.
	return k < v.lastShard || k < s.shardAt(max(l.now().UnixMilli(), v.clock))
}

// shardRange fills sh's First, Last and Empty from the records of ns.
func (l *Log) shardRange(db *storage.DB, ns []byte, s Stream, v view, sh *Shard) error {
	lo, hi := shardBounds(ns, s, sh.Index, 0, v.limit)
	it := db.NewIter(lo, hi)
	defer it.Close()
	if !it.First() {
		sh.Empty = true
		return it.Error()
	}
	sh.First = seqOf(it.Key())
	it.Last()
	sh.Last = seqOf(it.Key())
	return it.Error()
}

// shardBounds returns the key range of shard k's records with sequence
// numbers in [from, limit) (limit 0: no limit).
func shardBounds(ns []byte, s Stream, k uint32, from, limit uint64) (lo, hi []byte) {
	lo = keyspace.ChangeRecord(ns, s.Table, s.ID, k, from)
	if limit != 0 {
		return lo, keyspace.ChangeRecord(ns, s.Table, s.ID, k, limit)
	}
	return lo, keyspace.PrefixEnd(keyspace.ChangeShard(ns, s.Table, s.ID, k))
}

func seqOf(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(key)-8:]) }

// horizon returns the first position of stream s not trimmed in ns.
func (l *Log) horizon(db *storage.DB, ns []byte, s Stream) (Position, error) {
	v, err := db.Get(keyspace.ChangeHorizon(ns, s.Table, s.ID))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return Position{}, nil
	case err != nil:
		return Position{}, fmt.Errorf("changelog: reading trim horizon: %w", err)
	case len(v) != 12:
		return Position{}, errors.New("changelog: malformed trim horizon")
	}
	return Position{Shard: binary.BigEndian.Uint32(v), Seq: binary.BigEndian.Uint64(v[4:])}, nil
}

func encodePosition(p Position) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, p.Shard), p.Seq)
}

// TrimHorizon returns the position of the oldest record of shard k that
// ns can read (TRIM_HORIZON), or ErrTrimmed if the whole shard is.
func (l *Log) TrimHorizon(db *storage.DB, ns []byte, s Stream, k uint32) (Position, error) {
	h, err := l.checkShardKept(db, ns, s, k)
	if err != nil {
		return Position{}, err
	}
	if h.Shard == k {
		return h, nil
	}
	return Position{Shard: k}, nil
}

// checkShardKept returns ErrTrimmed if shard k of s is wholly past
// retention or trimmed in ns, else the horizon of s in ns.
func (l *Log) checkShardKept(db *storage.DB, ns []byte, s Stream, k uint32) (Position, error) {
	if s.shardStart(k+1) <= l.now().Add(-l.opts.Retention).UnixMilli() {
		return Position{}, ErrTrimmed
	}
	h, err := l.horizon(db, ns, s)
	switch {
	case err != nil:
		return Position{}, err
	case h.Shard > k:
		return Position{}, ErrTrimmed
	}
	return h, nil
}

// Latest returns the position just after the newest record of shard k in
// ns (LATEST): reading from it returns only records committed later.
// Changes in flight count as later. A shard past retention, or trimmed,
// is ErrTrimmed, as for TrimHorizon.
func (l *Log) Latest(db *storage.DB, ns []byte, s Stream, k uint32) (Position, error) {
	if _, err := l.checkShardKept(db, ns, s, k); err != nil {
		return Position{}, err
	}
	v, err := l.store(db).ns(ns).view(s)
	if err != nil {
		return Position{}, err
	}
	p := Position{Shard: k, Seq: v.next}
	if v.limit != 0 {
		return Position{Shard: k, Seq: v.limit}, nil
	}
	// NB: records numbered in another store (a dropped silo table's,
	// copied into the main store) may lie above this store's counter;
	// with nothing in flight, every record at or above it is committed.
	lo, hi := shardBounds(ns, s, k, p.Seq, 0)
	it := db.NewIter(lo, hi)
	defer it.Close()
	if it.Last() {
		p.Seq = seqOf(it.Key()) + 1
	}
	return p, it.Error()
}

// CheckKept returns ErrTrimmed if p lies before what ns keeps of s.
func (l *Log) CheckKept(db *storage.DB, ns []byte, s Stream, p Position) error {
	if s.shardStart(p.Shard+1) <= l.now().Add(-l.opts.Retention).UnixMilli() {
		return ErrTrimmed // the whole shard is past retention
	}
	h, err := l.horizon(db, ns, s)
	if err != nil {
		return err
	}
	if p.Less(h) {
		return ErrTrimmed
	}
	return nil
}

// Page is the result of one Read.
type Page struct {
	Records []Record
	// Next is where the next Read continues.
	Next Position
	// Drained: the shard is closed and Next is past its last record; no
	// Read from Next will return anything (DynamoDB's null
	// NextShardIterator).
	Drained bool
}

// Read returns up to limit records of shard from.Shard of stream s in ns,
// from position from on, stopping early after maxBytes of SizeBytes (at
// least one record is returned if there is one). Records are projected to
// the stream's view type. It returns ErrTrimmed if from lies before the
// oldest record kept.
//
// NB: Read never returns a record while an earlier-numbered change of the
// stream in ns is still being committed: a reader that moves past a
// position can never miss a record that appears behind it later.
func (l *Log) Read(db *storage.DB, ns []byte, s Stream, from Position, limit, maxBytes int) (Page, error) {
	if err := l.CheckKept(db, ns, s, from); err != nil {
		return Page{}, err
	}
	v, err := l.store(db).ns(ns).view(s)
	if err != nil {
		return Page{}, err
	}
	// NB: closed is decided before reading: if the shard was closed then,
	// every record it will ever hold is committed and below v.limit.
	closed := l.closed(s, v, from.Shard)
	page := Page{Next: from}
	lo, hi := shardBounds(ns, s, from.Shard, from.Seq, v.limit)
	it := db.NewIter(lo, hi)
	defer it.Close()
	size, exhausted := 0, true
	for ok := it.First(); ok; ok = it.Next() {
		if len(page.Records) >= limit {
			exhausted = false
			break
		}
		plain, err := l.open(it.Key(), it.Value())
		if err != nil {
			return Page{}, fmt.Errorf("changelog: reading record: %w", err)
		}
		r, err := decodeRecord(plain)
		if err != nil {
			return Page{}, fmt.Errorf("changelog: reading record: %w", err)
		}
		r.Shard, r.Seq = from.Shard, seqOf(it.Key())
		r = r.Project(s.View)
		n := r.SizeBytes()
		if len(page.Records) > 0 && size+n > maxBytes {
			exhausted = false
			break
		}
		size += n
		page.Records = append(page.Records, r)
		page.Next.Seq = r.Seq + 1
	}
	if err := it.Error(); err != nil {
		return Page{}, fmt.Errorf("changelog: reading records: %w", err)
	}
	page.Drained = closed && exhausted
	return page, nil
}
