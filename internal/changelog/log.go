// Package changelog is tenantdb's change log: a durable, ordered record of
// every committed item change, per tenant namespace and table, appended in
// the same storage batch as the change itself.
//
// The DynamoDB Streams API reads it; later features (webhooks, aggregates,
// point-in-time restore, export at a time, online moves) are meant to read
// it too, so nothing else keeps a second record of changes.
//
// A Log is bound to the main store, which holds the stream descriptors;
// records live in whichever store holds the item (the main store or a
// silo store), under the namespace of the item. See DESIGN.md for the key
// layout, sequence numbers, shards, retention and the tokens handed to
// clients.
package changelog

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// Defaults of Options.
const (
	DefaultRetention = 24 * time.Hour
	DefaultRollover  = 4 * time.Hour
	// IteratorTTL is how long a shard iterator is valid, as in DynamoDB.
	IteratorTTL = 15 * time.Minute
)

var (
	// ErrStreamNotFound is returned for a stream that does not exist (or no
	// longer does).
	ErrStreamNotFound = errors.New("changelog: stream not found")
	// ErrStreamDisabled is returned by Append to a disabled stream.
	ErrStreamDisabled = errors.New("changelog: stream is disabled")
	// ErrTrimmed is returned when a position lies before the oldest record
	// kept (retention trimmed it).
	ErrTrimmed = errors.New("changelog: position is trimmed")
	// ErrBadIterator is returned for an iterator that is malformed or
	// tampered with (the two are not told apart).
	ErrBadIterator = errors.New("changelog: invalid shard iterator")
	// ErrForeignIterator is returned for a genuine iterator presented by
	// a namespace other than the one it was issued to.
	ErrForeignIterator = errors.New("changelog: shard iterator of another namespace")
	// ErrExpiredIterator is returned for a genuine iterator older than
	// IteratorTTL.
	ErrExpiredIterator = errors.New("changelog: shard iterator expired")
)

// Options configures a Log.
type Options struct {
	// Secret is the key material (at least 32 bytes, e.g. derived from the
	// server key) from which the iterator sealing key and the id tags are
	// derived. Required.
	Secret []byte
	// Retention is how long records are kept; 0 means DefaultRetention.
	Retention time.Duration
	// Rollover is how long each shard of a new stream is open; 0 means
	// DefaultRollover.
	Rollover time.Duration
	// Capture is the least a new stream stores of each change, whatever
	// its view type (a later reader of the log may need images the stream
	// does not show); 0 means just what the view type shows.
	Capture ViewType
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives trimming errors; nil means slog.Default().
	Logger *slog.Logger
	// TrimBudget bounds the records one Trim pass reads per stream and
	// namespace; 0 means 10,000.
	TrimBudget int
	// Keys holds the tenants' data keys, under which records are sealed
	// (seal.go); nil means an in-memory keyring under a random key.
	Keys *tenantkey.Keyring
}

// Log is the change log. All methods are safe for concurrent use.
type Log struct {
	opts  Options
	main  *storage.DB
	iter  cipher.AEAD // seals shard iterators
	idKey []byte      // tags shard ids and derives event ids
	log   *slog.Logger
	keys  *tenantkey.Keyring

	ddl    sync.Mutex // serializes stream descriptor changes
	trimMu sync.Mutex // one Trim pass at a time

	mu     sync.Mutex
	stores map[*storage.DB]*store
	seen   shardsSeen

	decoded decodedCache // records Follow decoded last, shared by its readers
	idMACs  sync.Pool    // HMACs keyed with idKey, reused by EventID
	streams streamsCache // tables' stream descriptors as last decoded
}

// New returns the change log whose stream descriptors live in main.
func New(main *storage.DB, opts Options) (*Log, error) {
	if len(opts.Secret) < 32 {
		return nil, errors.New("changelog: Options.Secret must hold at least 32 bytes")
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Rollover <= 0 {
		opts.Rollover = DefaultRollover
	}
	if opts.Rollover < time.Second {
		return nil, errors.New("changelog: Options.Rollover must be at least 1s")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TrimBudget <= 0 {
		opts.TrimBudget = 10_000
	}
	l := &Log{opts: opts, main: main, log: opts.Logger, stores: map[*storage.DB]*store{}}
	if l.log == nil {
		l.log = slog.Default()
	}
	var err error
	if l.keys, err = keyring(opts); err != nil {
		return nil, err
	}
	// NB: a destroyed key makes a cached record unreadable anyway (the
	// key is looked up on every hit); this drops the plaintext too.
	l.keys.OnDestroy(func(t tenancy.TenantID) error { l.decoded.forget(t); return nil })
	k, err := hkdf.Key(sha256.New, opts.Secret, nil, "tenantdb changelog iterator v1", 32)
	if err != nil {
		return nil, fmt.Errorf("changelog: derive key: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	if l.iter, err = cipher.NewGCM(block); err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	if l.idKey, err = hkdf.Key(sha256.New, opts.Secret, nil, "tenantdb changelog ids v1", 32); err != nil {
		return nil, fmt.Errorf("changelog: derive key: %w", err)
	}
	if main != nil { // nil: tokens only (tests)
		if err := l.indexNames(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Retention returns how long records are kept.
func (l *Log) Retention() time.Duration { return l.opts.Retention }

func (l *Log) now() time.Time { return l.opts.Now() }

// store returns the in-memory state of the log in db.
func (l *Log) store(db *storage.DB) *store {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stores[db]
	if s == nil {
		s = newStore(db)
		l.stores[db] = s
	}
	return s
}

// CloseStore forgets the in-memory state of db (a silo store being closed
// or removed). The next use of db reloads it from db.
func (l *Log) CloseStore(db *storage.DB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.stores, db)
}

// CreateStream creates and persists a new, enabled stream of table with
// view type view; name, owner and meta are kept as Stream.TableName,
// Owner and Meta. Its ID is its creation time in ms, made larger than any
// earlier stream of the table.
func (l *Log) CreateStream(table uint64, view ViewType, name string, owner, meta []byte) (Stream, error) {
	return l.Create(StreamConfig{Table: table, View: view, Name: name, Owner: owner, Meta: meta})
}

// StreamConfig is what Create makes a stream of.
type StreamConfig struct {
	Table       uint64
	View        ViewType
	Name        string
	Owner, Meta []byte
	// Capture widens what the stream stores beyond View (and
	// Options.Capture), e.g. both images for the log's consumers.
	Capture ViewType
	// Hidden: a stream for the log's consumers only (Stream.Hidden).
	Hidden bool
	// Retention is Stream.Retention.
	Retention time.Duration
}

// Create creates and persists a new, enabled stream as c says (see
// CreateStream).
func (l *Log) Create(c StreamConfig) (Stream, error) {
	if _, ok := viewNames[c.View]; !ok {
		return Stream{}, fmt.Errorf("changelog: invalid view type %d", c.View)
	}
	if c.Retention < 0 {
		return Stream{}, fmt.Errorf("changelog: negative retention %v", c.Retention)
	}
	l.ddl.Lock()
	defer l.ddl.Unlock()
	id := uint64(l.now().UnixMilli())
	prev, err := l.Streams(c.Table)
	if err != nil {
		return Stream{}, err
	}
	if n := len(prev); n > 0 && prev[n-1].ID >= id {
		id = prev[n-1].ID + 1
	}
	capture := widen(c.View, l.opts.Capture)
	if c.Capture != 0 {
		capture = widen(capture, c.Capture)
	}
	s := Stream{Table: c.Table, ID: id, View: c.View, Capture: capture, Rollover: l.opts.Rollover,
		TableName: c.Name, Owner: bytes.Clone(c.Owner), Meta: bytes.Clone(c.Meta),
		Hidden: c.Hidden, Retention: c.Retention}
	if err := l.putStream(s); err != nil {
		return Stream{}, err
	}
	return s, nil
}

// SetRetention sets the Retention of every stream of table (enabled or
// not, visible or hidden) to d: trimming keeps their records for
// max(d, Options.Retention).
func (l *Log) SetRetention(table uint64, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("changelog: negative retention %v", d)
	}
	l.ddl.Lock()
	defer l.ddl.Unlock()
	streams, err := l.Streams(table)
	if err != nil {
		return err
	}
	for _, s := range streams {
		if s.Retention == d {
			continue
		}
		s.Retention = d
		if err := l.putStream(s); err != nil {
			return err
		}
	}
	return nil
}

// retention returns how long the records of s are kept.
func (l *Log) retention(s Stream) time.Duration { return max(l.opts.Retention, s.Retention) }

// Widen returns the view type showing everything a or b shows.
func Widen(a, b ViewType) ViewType { return widen(a, b) }

// widen returns the view type showing everything a or b shows.
func widen(a, b ViewType) ViewType {
	old, nu := a.WantsOld() || b.WantsOld(), a.WantsNew() || b.WantsNew()
	switch {
	case old && nu:
		return NewAndOldImage
	case old:
		return OldImage
	case nu:
		return NewImage
	}
	return KeysOnly
}

// DisableStream marks a stream disabled now; its last shard is the one
// open now. It returns the stream as updated (unchanged if it was already
// disabled) or ErrStreamNotFound.
//
// NB: the caller must make sure no Append to the stream is in flight or
// can start (the engine publishes the table definition without the stream
// and passes its lock barrier first), so that every record of the stream
// is in a shard the stream lists.
func (l *Log) DisableStream(table, id uint64) (Stream, error) {
	l.ddl.Lock()
	defer l.ddl.Unlock()
	s, err := l.Stream(table, id)
	if err != nil || !s.Enabled() {
		return s, err
	}
	now := l.now().UnixMilli()
	// NB: a record may sit in a later shard than its time says (shards
	// never go backwards for a namespace, even if the clock does); the
	// last shard must cover it.
	if k, ok := l.maxShardSeen(s); ok && k > s.shardAt(now) {
		now = s.shardStart(k)
	}
	if now < int64(s.ID) {
		now = int64(s.ID)
	}
	s.Disabled = time.UnixMilli(now).UTC()
	if err := l.putStream(s); err != nil {
		return Stream{}, err
	}
	return s, nil
}

func (l *Log) putStream(s Stream) error {
	b := l.main.NewBatch()
	defer b.Close()
	b.Set(keyspace.StreamDescriptor(s.Table, s.ID), s.encode())
	b.Set(keyspace.StreamName(s.Owner, s.TableName, s.Table, s.ID), nil)
	if err := l.main.Apply(b); err != nil {
		return fmt.Errorf("changelog: writing stream descriptor: %w", err)
	}
	return nil
}

// Stream returns a stream by table and id, or ErrStreamNotFound.
func (l *Log) Stream(table, id uint64) (Stream, error) {
	v, err := l.main.Get(keyspace.StreamDescriptor(table, id))
	if errors.Is(err, storage.ErrNotFound) {
		return Stream{}, ErrStreamNotFound
	}
	if err != nil {
		return Stream{}, fmt.Errorf("changelog: reading stream descriptor: %w", err)
	}
	return decodeStream(table, id, v)
}

// FindStreams returns the streams with id of tables named name that
// namespace ns may read: those of shared tables and those ns owns. It
// reads the descriptors' index by owner and table name (of those two
// owners only): it is for reaching the streams of deleted tables, which
// no table definition names any more.
//
// Hidden streams are never found: the Streams API does not show them.
func (l *Log) FindStreams(name string, id uint64, ns []byte) ([]Stream, error) {
	found, err := l.findStreams(name, id, ns)
	out := found[:0]
	for _, s := range found {
		if !s.Hidden {
			out = append(out, s)
		}
	}
	return out, err
}

// Streams returns the streams of a table that still exist, oldest first.
func (l *Log) Streams(table uint64) ([]Stream, error) {
	lo, hi := keyspace.StreamDescriptors(table)
	it := l.main.NewIter(lo, hi)
	defer it.Close()
	var ids []uint64
	var raw [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		ids = append(ids, beUint64(k[len(k)-8:]))
		raw = append(raw, it.Value())
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("changelog: listing streams: %w", err)
	}
	if out, ok := l.streams.get(table, ids, raw); ok {
		return out, nil
	}
	var out []Stream
	for i, id := range ids {
		s, err := decodeStream(table, id, raw[i])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	l.streams.put(table, ids, raw, out)
	return out, nil
}
