package quota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
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
//	Q<table>   requests charged to table (that consumed capacity on it, or
//	           were throttled)
//	T<table>   requests of table throttled or shed by admission control
//	S<env>/<table>  the table's bytes (items and index entries) when sampled
//	N<env>/<table>  its items when sampled
//
// The S and N names are samples, not sums: set once per hour in which the
// tenant was active, by a request or by TTL expiry of its items
// (Manager.SampleStorage, Manager.Expired).
const (
	nameRequests  = 'q'
	nameThrottled = 't'
	nameReadOp    = 'r'
	nameWriteOp   = 'w'
	nameReadTbl   = 'R'
	nameWriteTbl  = 'W'
	nameReqTbl    = 'Q'
	nameThrTbl    = 'T'
	nameBytesTbl  = 'S'
	nameItemsTbl  = 'N'
)

// tableCounters are one table's pending figures: read and write
// milli-units, requests, throttled requests.
type tableCounters [4]int64

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
	tables map[string]*tableCounters
}

// meter writes usage to storage as merge counters in one of three ways
// (see "Durability of usage" in the package documentation):
//
//   - stage: a write that commits items in the main store has its
//     counters added to the very batch that commits them, by the engine
//     (Manager.StageUsage); Ticket.Done then writes nothing more;
//   - charge: any other request of the write class (failed writes, silo
//     tables' writes, DDL) writes its own counters at once, before its
//     response, with an unsynced batch (storage.ApplyNoSync), and asks the
//     syncer for a WAL sync;
//   - record: reads, control-plane and throttled requests are added up in
//     memory and flushed in one synced batch per interval, so a busy
//     server writes one small batch per second for them, not one per
//     request.
//
// NB: metering never loses or delays data: it is written either with the
// operation's own items (stage), or separately and after the operation.
type meter struct {
	db *storage.DB
	// ctl, if set, receives the counters instead of db (Options.Control):
	// every request is recorded and flushed as ADD counters; retry holds
	// the counters a flush failed to write (under mu).
	ctl   ControlStore
	retry []kv.Op

	mu  sync.Mutex
	acc map[hourKey]*pending

	// flushMu makes "take pending, apply batch" atomic with respect to
	// report, so a report never misses counts in transit.
	flushMu sync.RWMutex
	// chargeMu is held (read) by charge from its check of gone to the
	// end of its write, so that Forget can wait out charges that began
	// before the tenant was marked.
	chargeMu sync.RWMutex

	// unsynced is set by a charge and cleared by the syncer before it
	// syncs; kick wakes the syncer (meter.syncLoop).
	unsynced atomic.Bool
	kick     chan struct{}

	// touched holds the tenant hours with activity (hourKey → whether
	// their storage was sampled): SampleStorage samples those not yet.
	touched sync.Map

	// gone reports the tenants being deleted (Manager.Forget): their
	// pending usage is dropped, not written into a range being deleted.
	gone func(tenancy.TenantID) bool
}

// opNames are the operations metering knows, and opIndex their index.
var (
	opNames = append(dynamo.Names(), DeliveryOp)
	opIndex = func() map[string]int {
		m := make(map[string]int, len(opNames))
		for i, n := range opNames {
			m[n] = i
		}
		return m
	}()
)

func hourOf(t time.Time) uint64 { return uint64(t.Unix() / 3600) }

// touch notes that k's tenant was active in k's hour.
func (m *meter) touch(k hourKey) {
	if _, ok := m.touched.Load(k); !ok {
		m.touched.LoadOrStore(k, false)
	}
}

// writeStorage sets the storage samples of k's hour to st.
func (m *meter) writeStorage(k hourKey, st []TableStorage) error {
	m.chargeMu.RLock()
	defer m.chargeMu.RUnlock()
	if m.gone != nil && m.gone(k.tenant) {
		return nil
	}
	if m.ctl != nil {
		var b kv.Batch
		for _, s := range st {
			name := s.Env + "/" + s.Table
			b.Set(keyspace.Usage(k.tenant, k.hour, string(nameBytesTbl)+name), storage.EncodeCounter(s.Bytes+s.IndexBytes))
			b.Set(keyspace.Usage(k.tenant, k.hour, string(nameItemsTbl)+name), storage.EncodeCounter(s.Items))
		}
		if b.Len() == 0 {
			return nil
		}
		return m.ctl.Apply(context.Background(), &b)
	}
	b := m.db.NewBatch()
	defer b.Close()
	for _, s := range st {
		name := s.Env + "/" + s.Table
		b.SetCounter(keyspace.Usage(k.tenant, k.hour, string(nameBytesTbl)+name), s.Bytes+s.IndexBytes)
		b.SetCounter(keyspace.Usage(k.tenant, k.hour, string(nameItemsTbl)+name), s.Items)
	}
	return m.db.ApplyNoSync(b)
}

// record adds one request of tenant t.
func (m *meter) record(t tenancy.TenantID, now time.Time, op string, u wire.Usage, throttled bool) {
	i, ok := opIndex[op]
	if !ok {
		return
	}
	k := hourKey{t, hourOf(now)}
	m.touch(k)
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
				p.tables = map[string]*tableCounters{}
			}
			tc = new(tableCounters)
			p.tables[table] = tc
		}
		tc[0] += r
		tc[1] += w
		tc[2]++
	})
	m.mu.Unlock()
}

// recordThrottled adds one throttled request of tenant t on tables.
func (m *meter) recordThrottled(t tenancy.TenantID, now time.Time, op string, tables []string) {
	m.record(t, now, op, wire.Usage{}, true)
	if len(tables) == 0 {
		return
	}
	k := hourKey{t, hourOf(now)}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.acc[k]
	if p == nil {
		p = &pending{ops: make([]opCounters, len(opNames))}
		m.acc[k] = p
	}
	if p.tables == nil {
		p.tables = map[string]*tableCounters{}
	}
	seen := map[string]bool{}
	for _, table := range tables {
		if seen[table] {
			continue
		}
		seen[table] = true
		tc := p.tables[table]
		if tc == nil {
			tc = new(tableCounters)
			p.tables[table] = tc
		}
		tc[2]++
		tc[3]++
	}
}

// flush writes everything pending in one batch.
func (m *meter) flush() error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	acc := m.acc
	m.acc = map[hourKey]*pending{}
	retry := len(m.retry) > 0
	m.mu.Unlock()
	if m.ctl != nil && (len(acc) > 0 || retry) {
		return m.flushControl(acc)
	}
	if len(acc) == 0 {
		return nil
	}
	b := m.db.NewBatch()
	defer b.Close()
	var name []byte
	for k, p := range acc {
		if m.gone != nil && m.gone(k.tenant) {
			continue
		}
		for i, c := range p.ops {
			name = stageOp(b, name, k, opNames[i], c)
		}
		for tbl, c := range p.tables {
			name = stageTable(b, name, k, tbl, *c)
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

// flushControl writes acc, and the counters an earlier flush failed to
// write, to the control store as ADD counters: per tenant, batches of at
// most maxControlAdds counters, each conditioned on the tenant's record
// (one engine transaction each), so that a failure keeps for the next
// flush only the counters of the batches not written.
func (m *meter) flushControl(acc map[hourKey]*pending) error {
	m.mu.Lock()
	adds := m.retry
	m.retry = nil
	m.mu.Unlock()
	var name []byte
	for k, p := range acc {
		add := func(kind byte, s string, v int64) {
			if v != 0 {
				name = append(append(name[:0], kind), s...)
				adds = append(adds, kv.Op{Kind: kv.OpAdd, Key: keyspace.Usage(k.tenant, k.hour, string(name)), Delta: v})
			}
		}
		for i, c := range p.ops {
			add(nameRequests, opNames[i], c.requests)
			add(nameThrottled, opNames[i], c.throttled)
			add(nameReadOp, opNames[i], c.read)
			add(nameWriteOp, opNames[i], c.write)
		}
		for tbl, c := range p.tables {
			add(nameReadTbl, tbl, c[0])
			add(nameWriteTbl, tbl, c[1])
			add(nameReqTbl, tbl, c[2])
			add(nameThrTbl, tbl, c[3])
		}
	}
	byTenant := map[tenancy.TenantID][]kv.Op{}
	for _, op := range adds {
		t, ok := keyspace.TenantOf(op.Key)
		if !ok || m.gone != nil && m.gone(t) {
			continue
		}
		byTenant[t] = append(byTenant[t], op)
	}
	var errs []error
	for t, ops := range byTenant {
		for len(ops) > 0 {
			n := min(len(ops), maxControlAdds)
			b := kv.Batch{Ops: append([]kv.Op(nil), ops[:n]...)}
			// NB: another gateway may have deleted the tenant (gone is
			// this process's only): its counters must not outlive it.
			b.ExpectPresent(keyspace.TenantRecord(t))
			err := m.ctl.Apply(context.Background(), &b)
			if err != nil && !errors.Is(err, kv.ErrConflict) { // a conflict: the tenant is gone, and its figures with it
				m.mu.Lock()
				m.retry = append(m.retry, ops[:n]...)
				m.mu.Unlock()
				errs = append(errs, err)
			}
			ops = ops[n:]
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("quota: flushing usage: %w", errors.Join(errs...))
	}
	return nil
}

// maxControlAdds is the most counters in one batch to the control
// store: with the tenant's condition, one engine transaction (100).
const maxControlAdds = 99

// stageCounter adds v to the counter kind+s of k's hour to b, unless v is
// zero, and returns name (scratch space) for reuse.
func stageCounter(b *storage.Batch, name []byte, k hourKey, kind byte, s string, v int64) []byte {
	if v != 0 {
		name = append(append(name[:0], kind), s...)
		b.AddCounter(keyspace.Usage(k.tenant, k.hour, string(name)), v)
	}
	return name
}

// stageOp adds the counters of operation op to b.
func stageOp(b *storage.Batch, name []byte, k hourKey, op string, c opCounters) []byte {
	name = stageCounter(b, name, k, nameRequests, op, c.requests)
	name = stageCounter(b, name, k, nameThrottled, op, c.throttled)
	name = stageCounter(b, name, k, nameReadOp, op, c.read)
	return stageCounter(b, name, k, nameWriteOp, op, c.write)
}

// stageTable adds the counters of one table to b.
func stageTable(b *storage.Batch, name []byte, k hourKey, table string, c tableCounters) []byte {
	name = stageCounter(b, name, k, nameReadTbl, table, c[0])
	name = stageCounter(b, name, k, nameWriteTbl, table, c[1])
	name = stageCounter(b, name, k, nameReqTbl, table, c[2])
	return stageCounter(b, name, k, nameThrTbl, table, c[3])
}

// charge writes one request of tenant t to the store before returning:
// unsynced, so it is durable once the next synced write of any request,
// or the syncer's, has completed (storage.ApplyNoSync). If the write fails
// the request is recorded in memory instead, for the next flush.
func (m *meter) charge(t tenancy.TenantID, now time.Time, op string, u wire.Usage) {
	if _, ok := opIndex[op]; !ok {
		return
	}
	k := hourKey{t, hourOf(now)}
	m.touch(k)
	m.chargeMu.RLock()
	defer m.chargeMu.RUnlock()
	if m.gone != nil && m.gone(t) {
		return
	}
	b := m.db.NewBatch()
	defer b.Close()
	stageRequest(b, k, op, u)
	if err := m.db.ApplyNoSync(b); err != nil {
		m.record(t, now, op, u, false)
		return
	}
	if !m.unsynced.Swap(true) {
		m.nudge()
	}
}

// stageRequest adds the counters of one request of op that consumed u to
// b.
func stageRequest(b *storage.Batch, k hourKey, op string, u wire.Usage) {
	name := make([]byte, 0, 64)
	name = stageOp(b, name, k, op, opCounters{requests: 1, read: toMilli(u.ReadUnits), write: toMilli(u.WriteUnits)})
	u.EachTable(func(table string, read, write float64) {
		r, w := toMilli(read), toMilli(write)
		if r == 0 && w == 0 {
			return
		}
		name = stageTable(b, name, k, table, tableCounters{r, w, 1, 0})
	})
}

// stage adds one request of tenant t to b, a batch that commits the
// request's items (Manager.StageUsage): its usage is durable exactly when
// they are.
//
// NB: unlike charge it needs no chargeMu. The engine refuses a deleted
// tenant's writes once its DropTenant returned, and the tenant's range
// (usage included) is deleted only after that, so a batch that carries
// items and usage either lands before the deletion, which removes both,
// or is refused.
func (m *meter) stage(b *storage.Batch, t tenancy.TenantID, now time.Time, op string, u wire.Usage) {
	if _, ok := opIndex[op]; !ok {
		return
	}
	if m.gone != nil && m.gone(t) {
		return
	}
	k := hourKey{t, hourOf(now)}
	m.touch(k)
	stageRequest(b, k, op, u)
}

// nudge wakes the syncer if a charge is not synced yet.
func (m *meter) nudge() {
	if m.unsynced.Load() {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// syncLoop makes charges durable soon after they were written, when no
// request's own synced write does it first: it syncs the WAL whenever a
// charge has been written since its last sync, until stop is closed.
// Writers share the fsync (group commit); a busy server's syncs carry
// item writes too, so this adds few of its own.
func (m *meter) syncLoop(stop <-chan struct{}, onErr func(error)) {
	for {
		select {
		case <-stop:
			return
		case <-m.kick:
		}
		if m.unsynced.Swap(false) {
			if err := m.db.SyncWAL(); err != nil {
				m.unsynced.Store(true)
				onErr(err)
			}
		}
	}
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
			cur.tables = map[string]*tableCounters{}
		}
		tc := cur.tables[t]
		if tc == nil {
			tc = new(tableCounters)
			cur.tables[t] = tc
		}
		for i := range tc {
			tc[i] += c[i]
		}
	}
}

// collect adds to sum every count of tenant t in hours [from, to), flushed
// or pending.
func (m *meter) collect(t tenancy.TenantID, from, to uint64, sum func(hour uint64, name string, v int64)) error {
	m.flushMu.RLock()
	defer m.flushMu.RUnlock()
	lo, hi := keyspace.UsageRange(t, from, to)
	var derr error
	err := store{db: m.db, ctl: m.ctl}.scan(lo, hi, func(k, v []byte) bool {
		hour, name, ok := keyspace.ParseUsage(t, k)
		if !ok || name == "" {
			return true
		}
		n, err := storage.DecodeCounter(v)
		if err != nil {
			derr = fmt.Errorf("quota: usage counter %q: %w", name, err)
			return false
		}
		sum(hour, name, n)
		return true
	})
	if derr != nil {
		return derr
	}
	if err != nil {
		return fmt.Errorf("quota: reading usage: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range m.retry {
		if hour, name, ok := keyspace.ParseUsage(t, op.Key); ok && name != "" && hour >= from && hour < to {
			sum(hour, name, op.Delta)
		}
	}
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
			for i, kind := range []byte{nameReadTbl, nameWriteTbl, nameReqTbl, nameThrTbl} {
				if c[i] != 0 {
					sum(k.hour, string(kind)+tbl, c[i])
				}
			}
		}
	}
	return nil
}
