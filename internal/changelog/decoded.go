package changelog

import (
	"bytes"
	"sync"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// decodedCache keeps the records Follow decoded last, so that the
// consumers of one table — a webhook subscription and an aggregate, or
// several subscriptions — which read the same records within moments of
// each other open (decrypt) and decode each record once, not once per
// consumer (BENCHMARKS.md §22: each consumer paid ≈ 7 µs a record for it).
//
// An entry is found by the record's storage key and used only if the
// stored bytes are the very bytes it was decoded from, so a record
// re-encrypted under a new key version, or anything else written under
// the same key, is decoded afresh; the tenant's key is still looked up on
// every hit (a destroyed key makes the read fail as without the cache).
// A reader finds only keys its own iteration produced, inside its own
// namespace's range: the cache can change what a read costs, never what
// it returns. It is bounded by the bytes of the records it holds
// (oldest out first).
type decodedCache struct {
	mu    sync.Mutex
	m     map[string]*decodedRecord
	fifo  []string // keys, oldest first (from head)
	head  int
	bytes int
}

type decodedRecord struct {
	raw     []byte // the stored value
	rec     Record
	eventID string
	seqNum  string // rec's SequenceNumber as the Streams API shows it
	size    int
}

// decodedBudget bounds the cache: the stored bytes of its records times
// decodedFactor (a decoded record's maps take a few times its encoding).
const (
	decodedBudget = 16 << 20
	decodedFactor = 4
)

// get returns the record decoded from raw at key, if cached; the caller
// must not change it.
func (c *decodedCache) get(key, raw []byte) *decodedRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.m[string(key)]
	if d == nil || !bytes.Equal(d.raw, raw) {
		return nil
	}
	return d
}

// put keeps d, the record decoded from d.raw at key (put keeps d and its
// bytes: the caller must not change them).
func (c *decodedCache) put(key []byte, d *decodedRecord) {
	size := (len(d.raw) + len(key)) * decodedFactor
	if size > decodedBudget/8 {
		return // a huge record would push out everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*decodedRecord{}
	}
	k := string(key)
	d.size = size
	if old := c.m[k]; old != nil {
		// NB: replaced, not changed: a reader may hold the old one.
		c.bytes -= old.size
		c.m[k] = d
		c.bytes += size
	} else {
		c.m[k] = d
		c.fifo = append(c.fifo, k)
		c.bytes += size
	}
	for c.bytes > decodedBudget && c.head < len(c.fifo) {
		old := c.fifo[c.head]
		c.fifo[c.head] = ""
		c.head++
		if d := c.m[old]; d != nil {
			c.bytes -= d.size
			delete(c.m, old)
		}
	}
	if c.head > len(c.fifo)/2 && c.head > 1024 {
		c.fifo = append([]string(nil), c.fifo[c.head:]...)
		c.head = 0
	}
}

// forget drops the records of tenant t (its key was destroyed).
func (c *decodedCache) forget(t tenancy.TenantID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, d := range c.m {
		if kt, ok := keyspace.TenantOf([]byte(k)); ok && kt == t {
			c.bytes -= d.size
			delete(c.m, k)
		}
	}
}
