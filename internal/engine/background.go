package engine

import (
	"bytes"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// startBackground starts the engine's background work: backfills of
// indexes left CREATING by a previous run, and the TTL sweeper (every
// Options.TTLInterval; negative disables it).
func (e *Engine) startBackground() {
	for _, t := range e.res.Shared() {
		e.resumeBackfills(t)
	}
	if !e.inMemorySilos() {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.migrateAllLegacySilos()
		}()
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		tick := time.NewTicker(trimInterval)
		defer tick.Stop()
		for {
			select {
			case <-e.closed:
				return
			case <-tick.C:
				e.trimChangeLog()
				if e.opts.SiloIdle > 0 {
					e.evictIdle()
				}
			}
		}
	}()
	if e.opts.TTLInterval < 0 {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		tick := time.NewTicker(e.opts.TTLInterval)
		defer tick.Stop()
		for {
			select {
			case <-e.closed:
				return
			case <-tick.C:
				if err := e.sweep(); err != nil {
					e.log.Error("engine: TTL sweep", "err", err)
				}
			}
		}
	}()
}

// stopping reports whether Close has been called.
func (e *Engine) stopping() bool {
	select {
	case <-e.closed:
		return true
	default:
		return false
	}
}

// chunkSize is how many keys background work reads and locks at a time.
const chunkSize = 128

// scanChunks calls fn with successive chunks of the keys and values in
// [lo, hi), reopening the iterator between chunks so that background work
// neither pins old data nor holds locks while iterating. fn returns false
// to stop. scanChunks returns the key to resume from, or nil when the range
// is exhausted; it also stops (returning a resume key) when the engine is
// closing.
func (e *Engine) scanChunks(db *storage.DB, lo, hi []byte, fn func(keys, vals [][]byte) (bool, error)) ([]byte, error) {
	start := bytes.Clone(lo)
	for !e.stopping() {
		it := db.NewIter(start, hi)
		var keys, vals [][]byte
		for ok := it.First(); ok && len(keys) < chunkSize; ok = it.Next() {
			keys = append(keys, it.Key())
			vals = append(vals, it.Value())
		}
		if err := it.Close(); err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "scanning")
		}
		if len(keys) == 0 {
			return nil, nil
		}
		more, err := fn(keys, vals)
		if err != nil {
			return nil, err
		}
		if len(keys) < chunkSize {
			return nil, nil
		}
		start = append(bytes.Clone(keys[len(keys)-1]), 0)
		if !more {
			return start, nil
		}
	}
	return start, nil
}

// registryPairs returns every (table id, namespace) of the registry.
func (e *Engine) registryPairs() ([]regPair, error) {
	p := keyspace.System(regRoot)
	it := e.db.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	var out []regPair
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[len(p):]
		if len(k) < 8 {
			continue
		}
		out = append(out, regPair{key: it.Key(), id: beUint64(k[:8]), ns: bytes.Clone(k[8:])})
	}
	if err := it.Error(); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading table registry")
	}
	return out, nil
}

type regPair struct {
	key []byte // the registry key
	id  uint64
	ns  []byte
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}
