package changelog

import (
	"bytes"
	"slices"
	"sync"
)

// streamsCache keeps each table's stream descriptors as Streams last
// decoded them. Every Follow lists its table's streams (both consumers of
// a table, every page); the descriptors are JSON and change only when a
// stream is created, disabled or its retention set, so decoding them on
// every call was work repeated for nothing (BENCHMARKS.md §22).
//
// NB: an entry is used only if the stored descriptors are the very bytes
// it was decoded from (same stream ids, same values): Streams still reads
// them on every call, so a change is seen at once, as without the cache.
type streamsCache struct {
	mu sync.Mutex
	m  map[uint64]*tableStreams
}

type tableStreams struct {
	ids     []uint64
	raw     [][]byte
	streams []Stream
}

// maxCachedTables bounds the cache; past it, it starts again empty.
const maxCachedTables = 4096

// get returns the streams decoded from the descriptors raw (of ids) of
// table, if cached, as a slice the caller owns.
func (c *streamsCache) get(table uint64, ids []uint64, raw [][]byte) ([]Stream, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.m[table]
	if t == nil || !slices.Equal(t.ids, ids) || !slices.EqualFunc(t.raw, raw, bytes.Equal) {
		return nil, false
	}
	return slices.Clone(t.streams), true
}

// put keeps streams, decoded from raw (of ids), for table; it keeps ids
// and raw, which the caller must not change.
func (c *streamsCache) put(table uint64, ids []uint64, raw [][]byte, streams []Stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedTables {
		c.m = map[uint64]*tableStreams{}
	}
	c.m[table] = &tableStreams{ids: ids, raw: raw, streams: slices.Clone(streams)}
}
