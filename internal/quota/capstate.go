package quota

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Token buckets survive a restart: every FlushInterval (and on Close) the
// buckets of each tenant debited since the previous checkpoint are saved
// to the tenant's range, and a tenant's state, when it is loaded, starts
// from its checkpoint refilled for the time since, instead of full. So a
// restart does not hand every tenant its whole burst credit again.
//
// A checkpoint is never more restrictive than the truth: the tokens at
// load are the saved ones plus the refill since, and debits after the
// checkpoint only ever lowered them. At most one FlushInterval of debits
// is forgotten on kill -9 or power loss (checkpoints are synced writes):
// a tenant throttled throughout that interval gets back at most its rate
// x FlushInterval plus one request's overdraw (tests/crash measures it).
// A tenant whose buckets are full again has its
// checkpoint deleted (a full bucket is what a missing one means).

// savedBuckets is the stored checkpoint of one tenant's buckets: the
// tokens of each limited bucket at At (unix nanoseconds).
type savedBuckets struct {
	At      int64              `json:"at"`
	Read    *float64           `json:"read,omitempty"`
	Write   *float64           `json:"write,omitempty"`
	Control *float64           `json:"control,omitempty"`
	TRead   map[string]float64 `json:"table_read,omitempty"`
	TWrite  map[string]float64 `json:"table_write,omitempty"`
}

// snapshotLocked returns st's checkpoint at now. REQUIRES: st.mu.
func (st *tenantState) snapshotLocked(now time.Time) savedBuckets {
	sb := savedBuckets{At: now.UnixNano()}
	tokens := func(b *bucket) *float64 {
		// NB: a leased bucket's state is in the fleet's engine; the
		// lease in hand is not worth saving (restored, it would be
		// refilled as if it were the bucket).
		if b.rate == 0 || b.lease != nil {
			return nil
		}
		b.refill(now)
		t := b.tokens
		return &t
	}
	sb.Read, sb.Write, sb.Control = tokens(&st.read), tokens(&st.write), tokens(&st.control)
	for _, x := range []struct {
		from map[string]*bucket
		to   *map[string]float64
	}{{st.tread, &sb.TRead}, {st.twrite, &sb.TWrite}} {
		for name, b := range x.from {
			if t := tokens(b); t != nil {
				if *x.to == nil {
					*x.to = map[string]float64{}
				}
				(*x.to)[name] = *t
			}
		}
	}
	return sb
}

// restoreBucketsLocked sets st's buckets, configured and full, from its
// checkpoint if it has one. REQUIRES: st.mu.
func (m *Manager) restoreBucketsLocked(st *tenantState, now time.Time) error {
	v, err := m.store.db.Get(keyspace.Capacity(st.tenant))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("quota: reading the token buckets of tenant %s: %w", st.tenant, err)
	}
	var sb savedBuckets
	if err := json.Unmarshal(v, &sb); err != nil {
		// NB: a checkpoint only ever withholds credit; an unreadable one
		// is dropped (full buckets) rather than locking the tenant out.
		m.log.Error("quota: dropping an unreadable token bucket checkpoint", "tenant", st.tenant, "error", err)
		return nil
	}
	st.saved = true
	elapsed := max(now.Sub(time.Unix(0, sb.At)).Seconds(), 0)
	set := func(b *bucket, saved *float64) {
		if b == nil || saved == nil || b.rate == 0 || b.lease != nil {
			return
		}
		b.tokens = max(min(b.size, *saved+b.rate*elapsed), -b.size)
	}
	set(&st.read, sb.Read)
	set(&st.write, sb.Write)
	set(&st.control, sb.Control)
	for name, t := range sb.TRead {
		set(st.tread[name], &t)
	}
	for name, t := range sb.TWrite {
		set(st.twrite[name], &t)
	}
	return nil
}

// saveBuckets checkpoints the buckets of every tenant debited since the
// last checkpoint and deletes the checkpoints of tenants whose buckets
// are full again.
func (m *Manager) saveBuckets() error {
	if m.opts.Fleet != nil {
		return nil // NB: every bucket is leased; the fleet's engine holds them
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	now := m.now()
	b := m.store.db.NewBatch()
	defer b.Close()
	type mark struct {
		st    *tenantState
		gen   uint64
		saved bool
	}
	var written []mark
	var encErr error
	m.states.Range(func(_, v any) bool {
		st := v.(*tenantState)
		if _, gone := m.forgotten.Load(st.tenant); gone {
			return true
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if !st.loaded {
			return true
		}
		switch {
		case st.full(now):
			if st.saved {
				b.Delete(keyspace.Capacity(st.tenant))
				written = append(written, mark{st, st.debits, false})
			}
		case st.debits != st.savedGen || !st.saved:
			v, err := json.Marshal(st.snapshotLocked(now))
			if err != nil {
				encErr = err
				return false
			}
			b.Set(keyspace.Capacity(st.tenant), v)
			written = append(written, mark{st, st.debits, true})
		}
		return true
	})
	if encErr != nil {
		return fmt.Errorf("quota: encoding token buckets: %w", encErr)
	}
	if len(written) == 0 {
		return nil
	}
	if err := m.store.db.Apply(b); err != nil {
		return fmt.Errorf("quota: saving token buckets: %w", err)
	}
	for _, w := range written {
		w.st.mu.Lock()
		// NB: a debit since the snapshot left debits past gen, so the
		// next checkpoint writes the state again.
		w.st.saved, w.st.savedGen = w.saved, w.gen
		w.st.mu.Unlock()
	}
	return nil
}

// Forget drops tenant t's in-memory state and stops checkpoints of its
// buckets and flushes of its usage: once it returns, neither is written
// into t's range, which the caller (tenant deletion) deletes next,
// earlier writes included. Usage t records meanwhile is dropped.
// Remember undoes it (the deletion failed, or the id is used again).
func (m *Manager) Forget(t tenancy.TenantID) {
	m.forgotten.Store(t, struct{}{})
	// NB: waits out a usage flush that took t's pending usage before the
	// mark; later flushes drop it (meter.gone).
	m.meter.flushMu.Lock()
	m.meter.flushMu.Unlock()
	m.meter.chargeMu.Lock() // NB: waits out charges that checked gone before the mark
	m.meter.chargeMu.Unlock()
	m.saveMu.Lock() // NB: waits out a checkpoint that may hold t's state
	m.states.Delete(t)
	m.saveMu.Unlock()
}

// Remember undoes Forget. It drops t's in-memory state again: one that
// a request racing the deletion loaded after Forget holds the deleted
// tenant's buckets and quota records, not those of the id used again.
func (m *Manager) Remember(t tenancy.TenantID) {
	m.saveMu.Lock() // NB: no checkpoint sees the state once t is remembered
	m.states.Delete(t)
	m.forgotten.Delete(t)
	m.saveMu.Unlock()
}
