package quota

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Usage counters are int64 merge counters under keyspace.Usage(tenant,
// hour, name), one per tenant, hour and name. Capacity units are stored in
// thousandths (DynamoDB charges half units for eventually consistent
// reads). The names:
//
//	q<op>      requests of operation op (admitted or throttled)
//	t<op>      requests of op throttled or shed by admission control
//	r<op>      read units (x1000) consumed by op
//	w<op>      write units (x1000) consumed by op
//	R<table>   read units (x1000) charged to table
//	W<table>   write units (x1000) charged to table
const (
	nameRequests  = 'q'
	nameThrottled = 't'
	nameReadOp    = 'r'
	nameWriteOp   = 'w'
	nameReadTbl   = 'R'
	nameWriteTbl  = 'W'
)

// milli is the scale of stored capacity units.
const milli = 1000

func toMilli(u float64) int64 { return int64(math.Round(u * milli)) }

// opCounters are one operation's pending figures.
type opCounters struct {
	requests, throttled int64
	read, write         int64 // milli-units
}

// hourKey names one tenant's hour of usage.
type hourKey struct {
	tenant tenancy.TenantID
	hour   uint64
}

// pending is the not yet flushed usage of one tenant in one hour.
type pending struct {
	ops    []opCounters // indexed like opNames
	tables map[string]*[2]int64
}

// meter aggregates usage in memory and flushes it to storage as merge
// counters (one batch per interval, so a busy server writes one small
// batch per second, not one per request).
//
// NB: what kill -9 loses is at most the last flush interval of metering;
// it never loses or delays data, because metering is written separately
// from, and after, the operation it counts.
type meter struct {
	db *storage.DB

	mu  sync.Mutex
	acc map[hourKey]*pending

	// flushMu makes "take pending, apply batch" atomic with respect to
	// report, so a report never misses counts in transit.
	flushMu sync.RWMutex

	// gone reports the tenants being deleted (Manager.Forget): their
	// pending usage is dropped, not written into a range being deleted.
	gone func(tenancy.TenantID) bool
}

// opNames are the operations metering knows, and opIndex their index.
var (
	opNames = dynamo.Names()
	opIndex = func() map[string]int {
		m := make(map[string]int, len(opNames))
		for i, n := range opNames {
			m[n] = i
		}
		return m
	}()
)

func hourOf(t time.Time) uint64 { return uint64(t.Unix() / 3600) }

// record adds one request of tenant t.
func (m *meter) record(t tenancy.TenantID, now time.Time, op string, u wire.Usage, throttled bool) {
	i, ok := opIndex[op]
	if !ok {
		return
	}
	k := hourKey{t, hourOf(now)}
	m.mu.Lock()
	p := m.acc[k]
	if p == nil {
		p = &pending{ops: make([]opCounters, len(opNames))}
		m.acc[k] = p
	}
	c := &p.ops[i]
	c.requests++
	if throttled {
		c.throttled++
	}
	c.read += toMilli(u.ReadUnits)
	c.write += toMilli(u.WriteUnits)
	u.EachTable(func(table string, read, write float64) {
		r, w := toMilli(read), toMilli(write)
		if r == 0 && w == 0 {
			return
		}
		tc := p.tables[table]
		if tc == nil {
			if p.tables == nil {
				p.tables = map[string]*[2]int64{}
			}
			tc = new([2]int64)
			p.tables[table] = tc
		}
		tc[0] += r
		tc[1] += w
	})
	m.mu.Unlock()
}

// flush writes everything pending in one batch.
func (m *meter) flush() error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	acc := m.acc
	m.acc = map[hourKey]*pending{}
	m.mu.Unlock()
	if len(acc) == 0 {
		return nil
	}
	b := m.db.NewBatch()
	defer b.Close()
	name := make([]byte, 0, 64)
	add := func(k hourKey, kind byte, s string, v int64) {
		if v != 0 {
			name = append(append(name[:0], kind), s...)
			b.AddCounter(keyspace.Usage(k.tenant, k.hour, string(name)), v)
		}
	}
	for k, p := range acc {
		if m.gone != nil && m.gone(k.tenant) {
			continue
		}
		for i, c := range p.ops {
			op := opNames[i]
			add(k, nameRequests, op, c.requests)
			add(k, nameThrottled, op, c.throttled)
			add(k, nameReadOp, op, c.read)
			add(k, nameWriteOp, op, c.write)
		}
		for tbl, c := range p.tables {
			add(k, nameReadTbl, tbl, c[0])
			add(k, nameWriteTbl, tbl, c[1])
		}
	}
	if err := m.db.Apply(b); err != nil {
		// Put the figures back so that the next flush retries them.
		m.mu.Lock()
		for k, p := range acc {
			m.mergeLocked(k, p)
		}
		m.mu.Unlock()
		return fmt.Errorf("quota: flushing usage: %w", err)
	}
	return nil
}

func (m *meter) mergeLocked(k hourKey, p *pending) {
	cur := m.acc[k]
	if cur == nil {
		m.acc[k] = p
		return
	}
	for i := range p.ops {
		cur.ops[i].requests += p.ops[i].requests
		cur.ops[i].throttled += p.ops[i].throttled
		cur.ops[i].read += p.ops[i].read
		cur.ops[i].write += p.ops[i].write
	}
	for t, c := range p.tables {
		if cur.tables == nil {
			cur.tables = map[string]*[2]int64{}
		}
		tc := cur.tables[t]
		if tc == nil {
			tc = new([2]int64)
			cur.tables[t] = tc
		}
		tc[0] += c[0]
		tc[1] += c[1]
	}
}

// collect adds to sum every count of tenant t in hours [from, to), flushed
// or pending.
func (m *meter) collect(t tenancy.TenantID, from, to uint64, sum func(hour uint64, name string, v int64)) error {
	m.flushMu.RLock()
	defer m.flushMu.RUnlock()
	lo, hi := keyspace.UsageRange(t, from, to)
	it := m.db.NewIter(lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		hour, name, ok := keyspace.ParseUsage(t, it.Key())
		if !ok || name == "" {
			continue
		}
		v, err := storage.DecodeCounter(it.Value())
		if err != nil {
			it.Close()
			return fmt.Errorf("quota: usage counter %q: %w", name, err)
		}
		sum(hour, name, v)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("quota: reading usage: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, p := range m.acc {
		if k.tenant != t || k.hour < from || k.hour >= to {
			continue
		}
		for i, c := range p.ops {
			op := opNames[i]
			for _, e := range []struct {
				kind byte
				v    int64
			}{{nameRequests, c.requests}, {nameThrottled, c.throttled}, {nameReadOp, c.read}, {nameWriteOp, c.write}} {
				if e.v != 0 {
					sum(k.hour, string(e.kind)+op, e.v)
				}
			}
		}
		for tbl, c := range p.tables {
			if c[0] != 0 {
				sum(k.hour, string(nameReadTbl)+tbl, c[0])
			}
			if c[1] != 0 {
				sum(k.hour, string(nameWriteTbl)+tbl, c[1])
			}
		}
	}
	return nil
}
