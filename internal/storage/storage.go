// Package storage is tenantdb's ordered key-value store and the only package
// that imports Pebble.
//
// It offers a deliberately small API — point reads, atomic batches, bounded
// iterators, snapshots, range deletion and int64 counters — over byte-string
// keys ordered by bytes.Compare. It knows nothing about DynamoDB, tenants or
// key layout; that is the engine's and keyspace's job. Keeping it this small
// is what lets a remote engine replace it later.
//
// Durability: Apply and DeleteRange return only after the write is in the
// fsynced write-ahead log (unless Options.NoSync), and concurrent writers
// share fsyncs (group commit). A failed WAL write or sync is fatal to the
// process: see DESIGN.md for why it is not returned as an error.
//
// Ownership: every key, value and bound passed in may be reused by the caller
// as soon as the call returns; every key and value returned is a fresh copy
// the caller may keep. The one exception is the value View lends to its
// callback, valid only during the call.
package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	// ErrNotFound is returned (test with errors.Is) by Get when the key is
	// absent.
	ErrNotFound = errors.New("storage: not found")
	// ErrClosed is returned by every operation on a DB, Iter or Snapshot after
	// DB.Close, and by operations on a closed Snapshot.
	ErrClosed = errors.New("storage: closed")
)

// DefaultCacheSize is the block cache size used when Options.CacheSize is 0.
const DefaultCacheSize = 256 << 20

// Options configures Open. The zero value is a durable on-disk store with a
// DefaultCacheSize block cache that logs to slog.Default().
type Options struct {
	// InMemory keeps all files in memory (for tests). The dir passed to Open
	// is only a name, and nothing survives Close.
	InMemory bool
	// CacheSize is the block cache size in bytes; 0 means DefaultCacheSize.
	CacheSize int64
	// NoSync acknowledges writes before the WAL is fsynced: an acknowledged
	// write survives a process crash but not a machine crash. Benchmarks
	// only.
	NoSync bool
	// Logger receives Pebble's messages and storage events (write stalls,
	// background errors). nil means slog.Default().
	Logger *slog.Logger
	// Small sizes the store for little data among many stores (a silo
	// tenant's): 1 MB memtables (Pebble preallocates 110% of one for the
	// WAL on disk), one compaction at a time, L0 compacted after 4 files
	// instead of 2. DESIGN.md says why.
	Small bool
	// Shared, if not nil, provides the block cache and the sstable cache
	// (CacheSize is then ignored) and keeps an InMemory store's files
	// across Close. See Shared.
	Shared *Shared

	testing testingKnobs
}

// testingKnobs are hooks only this package's tests set.
type testingKnobs struct {
	// wrapFS wraps the file system Pebble uses (e.g. with errorfs).
	wrapFS func(vfs.FS) vfs.FS
	// onFatal replaces the process exit that follows a fatal Pebble error.
	// It must not return (see fatalLogger).
	onFatal func(msg string)
	// walMinSyncInterval, if set, overrides walMinSyncInterval.
	walMinSyncInterval *time.Duration
	// tune, if set, changes Pebble's options last (benchmarks of tuning).
	tune func(*pebble.Options)
}

// walMinSyncInterval is the minimum gap between two WAL fsyncs. Without it,
// writers woken by one fsync come back while the flusher is already syncing
// the others, so each fsync carries only about half of them. 50µs lets them
// rejoin: in BENCHMARKS.md it cut fsyncs ~45% and per-batch time 1.5-2x with
// 8-32 writers, was inconclusive with 2, and 100µs or more was slower. NB: on a
// disk whose fsync takes tens of µs (local NVMe) it adds up to 50µs to a
// lone writer's latency; revisit there.
const walMinSyncInterval = 50 * time.Microsecond

// DB is an open store. All methods are safe for concurrent use.
type DB struct {
	pdb       *pebble.DB
	fs        vfs.FS // the store's file system and directory (CloseIdle)
	dir       string
	log       *slog.Logger
	writeOpts *pebble.WriteOptions

	// closing is set first thing in Close, so new operations fail fast.
	closing atomic.Bool
	// mu is read-held by every operation while it uses pdb and write-held by
	// Close. NB: never acquire it twice in one goroutine: a waiting Close
	// would deadlock the second RLock.
	mu sync.RWMutex

	// open tracks live iterators and snapshots so Close can release them:
	// Pebble frees manually managed memory on Close, so an iterator must
	// never outlive its DB.
	open struct {
		sync.Mutex
		iters map[*Iter]struct{}
		snaps map[*Snapshot]struct{}
	}

	stalls        atomic.Int64
	stallNanos    atomic.Int64
	stallBegan    atomic.Int64 // unix nanos of the current stall, 0 if none
	backgroundErr atomic.Int64
	corruptions   atomic.Int64
}

// Open opens (creating if needed) the store in dir. It returns an error if
// the directory cannot be used, holds data written with an incompatible
// merger, or is locked by another open DB.
func Open(dir string, opts Options) (*DB, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "storage")
	db := &DB{log: log, writeOpts: pebble.Sync}
	if opts.NoSync {
		db.writeOpts = pebble.NoSync
	}
	db.open.iters = make(map[*Iter]struct{})
	db.open.snaps = make(map[*Snapshot]struct{})

	var cache *pebble.Cache
	if opts.Shared != nil {
		cache = opts.Shared.cache
	} else {
		cacheSize := opts.CacheSize
		if cacheSize <= 0 {
			cacheSize = DefaultCacheSize
		}
		cache = pebble.NewCache(cacheSize)
		defer cache.Unref() // the DB holds its own reference
	}

	po := db.pebbleOptions(opts, cache)
	if opts.InMemory && opts.Shared != nil {
		po.FS = opts.Shared.memFS(dir)
		if opts.testing.wrapFS != nil {
			po.FS = opts.testing.wrapFS(po.FS)
		}
	}
	pdb, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	db.pdb, db.fs, db.dir = pdb, po.FS, dir
	return db, nil
}

// pebbleOptions is the one place Pebble is tuned. The choices follow
// CockroachDB's defaults for a server with one store; DESIGN.md says why.
func (db *DB) pebbleOptions(opts Options, cache *pebble.Cache) *pebble.Options {
	po := &pebble.Options{
		Cache:  cache,
		Merger: counterMerger,
		// Pin the on-disk format: a Pebble upgrade must not silently ratchet
		// stores to a format the previous binary cannot read.
		FormatMajorVersion: pebble.FormatValueSeparation,

		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       2,
		L0StopWritesThreshold:       20,
		LBaseMaxBytes:               64 << 20,
		MaxOpenFiles:                4096,
		CompactionConcurrencyRange: func() (int, int) {
			return 1, max(2, runtime.GOMAXPROCS(0)/2)
		},
		// Flush a memtable holding a range deletion after 10 s so the space of
		// a dropped tenant or table is reclaimed without waiting for more
		// writes to fill the memtable.
		FlushDelayDeleteRange: 10 * time.Second,
		Logger:                &fatalLogger{log: db.log, onFatal: opts.testing.onFatal},
		EventListener:         db.eventListener(),
	}
	po.Experimental.EnableColumnarBlocks = func() bool { return true }
	if opts.Shared != nil {
		po.FileCache = opts.Shared.files
	}
	if opts.Small {
		// NB: Pebble preallocates 110% of MemTableSize for each WAL it
		// writes; at 64 MB that is 70 MB of disk per store holding a write.
		po.MemTableSize = 1 << 20
		po.L0CompactionThreshold = 4
		po.LBaseMaxBytes = 8 << 20
		po.CompactionConcurrencyRange = func() (int, int) { return 1, 1 }
	}
	interval := walMinSyncInterval
	if p := opts.testing.walMinSyncInterval; p != nil {
		interval = *p
	}
	if interval > 0 {
		po.WALMinSyncInterval = func() time.Duration { return interval }
	}
	for i := range po.Levels {
		po.Levels[i].BlockSize = 32 << 10
		po.Levels[i].IndexBlockSize = 256 << 10
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if opts.InMemory {
		po.FS = vfs.NewMem()
	} else {
		po.FS = vfs.Default
	}
	if opts.testing.wrapFS != nil {
		po.FS = opts.testing.wrapFS(po.FS)
	}
	if opts.testing.tune != nil {
		opts.testing.tune(po)
	}
	po.EnsureDefaults()
	return po
}

func (db *DB) eventListener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			db.backgroundErr.Add(1)
			db.log.Error("storage: background error", "err", err)
		},
		// Pebble's default exits the process on detected corruption. A
		// crash loop would take every tenant down for one bad block, so log
		// it: the read that found it still fails with the error.
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			db.corruptions.Add(1)
			db.log.Error("storage: data corruption", "info", info.String())
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			db.log.Warn("storage: disk slow", "info", info.String())
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			db.stalls.Add(1)
			db.stallBegan.Store(time.Now().UnixNano())
			db.log.Warn("storage: write stall", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			if began := db.stallBegan.Swap(0); began != 0 {
				d := time.Now().UnixNano() - began
				db.stallNanos.Add(d)
				db.log.Info("storage: write stall ended", "duration", time.Duration(d))
			}
		},
	}
}

// enter admits an operation, returning ErrClosed once Close has begun. On
// success the caller must call db.mu.RUnlock.
func (db *DB) enter() error {
	if db.closing.Load() {
		return ErrClosed
	}
	db.mu.RLock()
	if db.closing.Load() {
		db.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// Close waits for operations in flight, closes any iterators and snapshots
// still open (their later use reports ErrClosed) and closes the store.
// Unsynced data (only with NoSync) may be lost. Close returns ErrClosed if
// called twice.
func (db *DB) Close() error {
	if !db.closing.CompareAndSwap(false, true) {
		return ErrClosed
	}
	db.mu.Lock()
	defer db.mu.Unlock()

	db.open.Lock()
	leaked := len(db.open.iters) + len(db.open.snaps)
	for it := range db.open.iters {
		it.release()
	}
	for s := range db.open.snaps {
		s.release()
	}
	db.open.iters, db.open.snaps = nil, nil
	db.open.Unlock()
	if leaked > 0 {
		db.log.Warn("storage: closed iterators and snapshots left open", "count", leaked)
	}

	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	return nil
}

// Get returns a copy of the value stored at key. It returns ErrNotFound if
// the key is absent, ErrClosed after Close, and any other error if the value
// could not be read (never ErrNotFound for an I/O failure). A counter key
// returns its 8-byte encoding (see DecodeCounter).
func (db *DB) Get(key []byte) ([]byte, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	return get(db.pdb, key)
}

// View calls fn with the value stored at key without copying it: the
// value is valid only until fn returns, and fn must not keep it or any
// slice of it (copy what it needs). It returns ErrNotFound, without calling
// fn, if the key is absent, ErrClosed after Close, fn's error, and any
// other error if the value could not be read. It saves Get's copy when the
// caller decodes or measures the value at once.
func (db *DB) View(key []byte, fn func(value []byte) error) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	return view(db.pdb, key, fn)
}

// Counter returns the value of a key written with Batch.AddCounter, or 0 if
// the key is absent. It returns an error if the stored value is not an
// 8-byte counter or cannot be read, and ErrClosed after Close.
func (db *DB) Counter(key []byte) (int64, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	return counter(db.pdb, key)
}

// Apply commits b atomically: after it returns nil every operation in b is
// visible to later reads and is durable (unless Options.NoSync). It returns
// an error, with nothing applied, if b recorded an error (see Batch), was
// already applied, belongs to another DB, or the DB is closed. A WAL write
// or sync failure does not return: it terminates the process (DESIGN.md).
// The caller still closes b.
func (db *DB) Apply(b *Batch) error { return db.apply(b, db.writeOpts) }

// ApplyNoSync commits b atomically like Apply, without waiting for the WAL
// sync: after it returns nil b is visible to later reads, and it is in the
// WAL ahead of every later write, so it is durable once a later synced
// write (any Apply, or SyncWAL) has returned. Until then kill -9 or power
// loss may lose it (and only it and later unsynced batches). Errors as
// Apply.
func (db *DB) ApplyNoSync(b *Batch) error { return db.apply(b, pebble.NoSync) }

func (db *DB) apply(b *Batch, opts *pebble.WriteOptions) error {
	switch {
	case b.err != nil:
		return b.err
	case b.applied:
		return errors.New("storage: batch already applied")
	case b.db != db:
		return errors.New("storage: batch belongs to another DB")
	}
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	b.applied = true
	if err := db.pdb.Apply(b.pb, opts); err != nil {
		return fmt.Errorf("storage: apply: %w", err)
	}
	return nil
}

// SyncWAL makes every batch applied before it durable (unless
// Options.NoSync), sharing the fsync with concurrent writers. It returns
// ErrClosed after Close.
func (db *DB) SyncWAL() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if err := db.pdb.LogData(nil, db.writeOpts); err != nil {
		return fmt.Errorf("storage: syncing the WAL: %w", err)
	}
	return nil
}

// DeleteRange durably deletes every key in [lo, hi), in time independent of
// how many keys the range holds; space is reclaimed by later compactions.
// It returns an error if hi is nil or lo > hi, and ErrClosed after Close.
func (db *DB) DeleteRange(lo, hi []byte) error {
	b := db.NewBatch()
	defer b.Close()
	b.DeleteRange(lo, hi)
	return db.Apply(b)
}

// Flush writes the memtable to an sstable and waits for it. Writes are
// durable without it; it exists for tests and for shutdown hygiene.
func (db *DB) Flush() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if err := db.pdb.Flush(); err != nil {
		return fmt.Errorf("storage: flush: %w", err)
	}
	return nil
}

// Compact flushes the memtable and compacts [lo, hi) down to the bottom
// level, so that deleted keys of the range are dropped from every sstable
// (a deleted tenant's range: crypto-shredding's physical part). It
// returns ErrClosed after Close.
func (db *DB) Compact(lo, hi []byte) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if err := db.pdb.Flush(); err != nil {
		return fmt.Errorf("storage: flush: %w", err)
	}
	if err := db.pdb.Compact(context.Background(), lo, hi, true); err != nil {
		return fmt.Errorf("storage: compact: %w", err)
	}
	return nil
}

// EstimateDiskUsage returns an estimate of the bytes on disk used by keys in
// [lo, hi), for per-tenant storage metering. Data still in the memtable is
// not counted. It returns ErrClosed after Close.
func (db *DB) EstimateDiskUsage(lo, hi []byte) (uint64, error) {
	if err := db.enter(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	n, err := db.pdb.EstimateDiskUsage(lo, hi)
	if err != nil {
		return 0, fmt.Errorf("storage: estimate disk usage: %w", err)
	}
	return n, nil
}

// get reads key from r (the DB or a snapshot) and copies the value.
func get(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get: %w", err)
	}
	out := make([]byte, len(v))
	copy(out, v)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("storage: get: %w", err)
	}
	return out, nil
}

// view reads key from r and calls fn with Pebble's buffer, released
// after fn returns.
func view(r pebble.Reader, key []byte, fn func(value []byte) error) error {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("storage: get: %w", err)
	}
	ferr := fn(v)
	if err := closer.Close(); err != nil && ferr == nil {
		return fmt.Errorf("storage: get: %w", err)
	}
	return ferr
}

func counter(r pebble.Reader, key []byte) (int64, error) {
	v, err := get(r, key)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return DecodeCounter(v)
}
