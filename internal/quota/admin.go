package quota

import (
	"context"
	"sort"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The quota records behind the admin API. The admin package authorizes
// the caller and checks that the tenant exists; these methods only read
// and write the records.

// GetQuota returns the scope's tenant's quota (table == "") with its
// table quotas, or one table's quota. Errors are Internal (storage).
func (m *Manager) GetQuota(ctx context.Context, s tenancy.Scope, table string) (*Quota, error) {
	t, err := scoped(s)
	if err != nil {
		return nil, err
	}
	if t.IsZero() {
		return nil, apierr.Validationf("the operator has no quota")
	}
	st, err := m.state(t)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading the tenant's quota")
	}
	now := m.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if table != "" {
		return m.tableQuotaLocked(st, table, now), nil
	}
	q := &Quota{
		TenantID:     t.String(),
		ReadUnits:    st.eff.ReadUnits,
		WriteUnits:   st.eff.WriteUnits,
		BurstSeconds: st.eff.BurstSeconds,
		Weight:       st.eff.Weight,
		MaxInflight:  st.eff.MaxInflight,
		Set:          st.record != nil,
	}
	if !m.opts.Disabled {
		st.read.refill(now)
		st.write.refill(now)
		q.Available = &Available{ReadUnits: st.read.tokens, WriteUnits: st.write.tokens}
	}
	names := make([]string, 0, len(st.tables))
	for n := range st.tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		q.Tables = append(q.Tables, *m.tableQuotaLocked(st, n, now))
	}
	return q, nil
}

// tableQuotaLocked returns one table's quota. REQUIRES: st.mu.
func (m *Manager) tableQuotaLocked(st *tenantState, table string, now time.Time) *Quota {
	l, ok := st.tables[table]
	q := &Quota{
		TenantID:     st.tenant.String(),
		Table:        table,
		ReadUnits:    l.ReadUnits,
		WriteUnits:   l.WriteUnits,
		BurstSeconds: l.BurstSeconds,
		Set:          ok,
	}
	if q.BurstSeconds == 0 {
		q.BurstSeconds = st.eff.BurstSeconds
	}
	if ok && !m.opts.Disabled {
		a := &Available{}
		if b := st.tread[table]; b != nil {
			b.refill(now)
			a.ReadUnits = b.tokens
		}
		if b := st.twrite[table]; b != nil {
			b.refill(now)
			a.WriteUnits = b.tokens
		}
		q.Available = a
	}
	return q
}

// SetQuota changes the scope's tenant's quota (table == "") or one table's, durably,
// and applies it at once: the buckets keep the capacity they hold, capped
// to the new burst. Errors: Validation for values out of range, Internal
// for storage failures.
func (m *Manager) SetQuota(ctx context.Context, s tenancy.Scope, table string, u Update) (*Quota, error) {
	t, err := scoped(s)
	if err != nil {
		return nil, err
	}
	if t.IsZero() {
		return nil, apierr.Validationf("the operator has no quota")
	}
	st, err := m.state(t)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading the tenant's quota")
	}
	st.mu.Lock()
	var cur Limits
	if table == "" && st.record != nil {
		cur = *st.record
	} else if table != "" {
		cur = st.tables[table]
	}
	next := u.apply(cur)
	if err := next.Validate(table); err != nil {
		st.mu.Unlock()
		return nil, err
	}
	rec := &next
	if next == (Limits{}) {
		rec = nil
	}
	// NB: the store write happens under st.mu so that two updates of one
	// tenant are applied and persisted in the same order.
	if err := m.store.save(t, table, rec); err != nil {
		st.mu.Unlock()
		return nil, apierr.Wrap(apierr.Internal, err, "saving the quota")
	}
	if table == "" {
		st.record = rec
	} else {
		tables := make(map[string]Limits, len(st.tables)+1)
		for k, v := range st.tables {
			tables[k] = v
		}
		if rec == nil {
			delete(tables, table)
		} else {
			tables[table] = next
		}
		st.tables = tables
	}
	m.applyLocked(st, m.now(), false)
	st.mu.Unlock()
	if m.opts.Settle > 0 && next != cur && (m.opts.Alone == nil || !m.opts.Alone(ctx)) {
		// NB: every other gateway read its copy before the write, so it
		// has expired when this returns (Options.Settle).
		t := time.NewTimer(m.opts.Settle)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	return m.GetQuota(ctx, s, table)
}

// scoped returns the tenant of s. Errors: Internal for a scope no guard
// issued.
func scoped(s tenancy.Scope) (tenancy.TenantID, error) {
	if !s.Valid() {
		return tenancy.TenantID{}, apierr.New(apierr.Internal, "quota: no scope")
	}
	return s.Tenant(), nil
}
