package quota

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// OpUsage is what a tenant's requests of one kind consumed. Requests
// counts every request that reached admission control, the throttled ones
// (ThrottledRequests: rejected for capacity or shed) included.
type OpUsage struct {
	Requests           int64   `json:"requests"`
	ThrottledRequests  int64   `json:"throttled_requests"`
	ConsumedReadUnits  float64 `json:"consumed_read_units"`
	ConsumedWriteUnits float64 `json:"consumed_write_units"`
}

// TableUsage is the capacity charged to one table, and its requests:
// those that consumed capacity on it and those throttled.
type TableUsage struct {
	ConsumedReadUnits  float64 `json:"consumed_read_units"`
	ConsumedWriteUnits float64 `json:"consumed_write_units"`
	Requests           int64   `json:"requests"`
	ThrottledRequests  int64   `json:"throttled_requests"`
}

// TableHourUsage is one table's hourly bucket. StorageBytes (items and
// index entries) and Items are the table's storage as sampled in that
// hour (in every environment), when the tenant was active in it
// (Sampled); an hour without a sample had the storage of the last one
// before it.
type TableHourUsage struct {
	Hour  time.Time `json:"hour"` // start of the hour, UTC
	Table string    `json:"table"`
	TableUsage
	Sampled      bool  `json:"sampled,omitempty"`
	StorageBytes int64 `json:"storage_bytes,omitempty"`
	Items        int64 `json:"items,omitempty"`
}

// SampleStorage records the current storage of every tenant that was
// active in an hour not yet sampled (at most once per tenant and hour),
// so that usage reports show storage per table over time. The quota
// manager calls it after each flush; errors are logged.
func (m *Manager) SampleStorage(ctx context.Context) {
	if m.storage == nil {
		return
	}
	cur := hourOf(m.now())
	m.meter.touched.Range(func(key, v any) bool {
		k := key.(hourKey)
		if v.(bool) {
			if k.hour < cur {
				m.meter.touched.Delete(k)
			}
			return true
		}
		if m.meter.gone(k.tenant) {
			return true // being deleted (Forget): nothing to sample
		}
		st, err := m.storage.TenantStorage(ctx, sampleScope(k.tenant))
		if err == nil {
			err = m.meter.writeStorage(k, st)
		}
		if err != nil {
			m.log.Warn("quota: storage not sampled", "tenant", k.tenant.String(), "error", err)
			return true
		}
		if k.hour < cur {
			m.meter.touched.Delete(k)
		} else {
			m.meter.touched.Store(k, true)
		}
		return true
	})
}

// Expired notes that TTL expiry deleted items of tenant t: its storage
// is sampled in this hour, as after a request of it (so an hour with no
// request but expiry still shows the storage it left). The engine calls
// it (engine.Options.Expired).
func (m *Manager) Expired(t tenancy.TenantID) {
	if t.IsZero() {
		return
	}
	m.meter.touch(hourKey{tenant: t, hour: hourOf(m.now())})
}

// HourUsage is one hourly bucket.
type HourUsage struct {
	Hour time.Time `json:"hour"` // start of the hour, UTC
	OpUsage
}

// Report is a tenant's usage over a window, as GET
// /v1/tenants/{id}/usage and `tenantdb usage` show it.
//
// Request figures cover the hourly buckets that overlap [From, To); the
// storage figures are current.
type Report struct {
	TenantID string    `json:"tenant_id"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	OpUsage
	// StorageBytes is the size of the tenant's items and index entries;
	// Items counts its items (not index entries).
	StorageBytes int64                 `json:"storage_bytes"`
	Items        int64                 `json:"items"`
	ByOperation  map[string]OpUsage    `json:"by_operation"`
	ByTable      map[string]TableUsage `json:"by_table"`
	Storage      []TableStorage        `json:"storage"`
	Hours        []HourUsage           `json:"hours"`
	// TableHours is ByTable by hour, oldest first (then by table).
	TableHours []TableHourUsage `json:"table_hours"`
}

// MaxReportWindow bounds a usage query (a bit over a year of hours).
const MaxReportWindow = 400 * 24 * time.Hour

// Usage returns the scope's tenant's usage in [from, to). A zero to means now; a
// zero from means one hour before to. Errors: Validation for an inverted
// or too long window, Internal for storage failures.
func (m *Manager) Usage(ctx context.Context, s tenancy.Scope, from, to time.Time) (*Report, error) {
	t, err := scoped(s)
	if err != nil {
		return nil, err
	}
	if to.IsZero() {
		to = m.now()
	}
	if from.IsZero() {
		from = to.Add(-time.Hour)
	}
	if !from.Before(to) {
		return nil, apierr.Validationf("from must be before to")
	}
	if to.Sub(from) > MaxReportWindow {
		return nil, apierr.Validationf("the window from..to must be at most %d days", int(MaxReportWindow/(24*time.Hour)))
	}
	r := &Report{
		TenantID:    t.String(),
		From:        from.UTC(),
		To:          to.UTC(),
		ByOperation: map[string]OpUsage{},
		ByTable:     map[string]TableUsage{},
		Hours:       []HourUsage{},
		Storage:     []TableStorage{},
	}
	firstHour := hourOf(from)
	lastHour := hourOf(to.Add(-time.Nanosecond)) + 1
	hours := map[uint64]*OpUsage{}
	type tableHour struct {
		hour  uint64
		table string
	}
	tableHours := map[tableHour]*TableUsage{}
	type sample struct {
		bytes, items int64
	}
	samples := map[tableHour]*sample{}
	sampleOf := func(hour uint64, name string) *sample {
		_, table, _ := strings.Cut(name, "/")
		k := tableHour{hour, table}
		if samples[k] == nil {
			samples[k] = &sample{}
		}
		return samples[k]
	}
	addTable := func(hour uint64, table string, fn func(*TableUsage)) {
		tu := r.ByTable[table]
		fn(&tu)
		r.ByTable[table] = tu
		th := tableHours[tableHour{hour, table}]
		if th == nil {
			th = &TableUsage{}
			tableHours[tableHour{hour, table}] = th
		}
		fn(th)
	}
	err = m.meter.collect(t, firstHour, lastHour, func(hour uint64, name string, v int64) {
		kind, rest := name[0], name[1:]
		h := hours[hour]
		if h == nil {
			h = &OpUsage{}
			hours[hour] = h
		}
		switch kind {
		case nameRequests, nameThrottled, nameReadOp, nameWriteOp:
			op := r.ByOperation[rest]
			addTo(&op, kind, v)
			r.ByOperation[rest] = op
			addTo(h, kind, v)
			addTo(&r.OpUsage, kind, v)
		case nameReadTbl:
			addTable(hour, rest, func(tu *TableUsage) { tu.ConsumedReadUnits += float64(v) / milli })
		case nameWriteTbl:
			addTable(hour, rest, func(tu *TableUsage) { tu.ConsumedWriteUnits += float64(v) / milli })
		case nameReqTbl:
			addTable(hour, rest, func(tu *TableUsage) { tu.Requests += v })
		case nameThrTbl:
			addTable(hour, rest, func(tu *TableUsage) { tu.ThrottledRequests += v })
		case nameBytesTbl:
			sampleOf(hour, rest).bytes += v
		case nameItemsTbl:
			sampleOf(hour, rest).items += v
		}
	})
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading usage")
	}
	for h, u := range hours {
		r.Hours = append(r.Hours, HourUsage{Hour: time.Unix(int64(h)*3600, 0).UTC(), OpUsage: *u})
	}
	sort.Slice(r.Hours, func(i, j int) bool { return r.Hours[i].Hour.Before(r.Hours[j].Hour) })
	for k := range samples {
		if tableHours[k] == nil {
			tableHours[k] = &TableUsage{}
		}
	}
	r.TableHours = make([]TableHourUsage, 0, len(tableHours))
	for k, u := range tableHours {
		th := TableHourUsage{Hour: time.Unix(int64(k.hour)*3600, 0).UTC(), Table: k.table, TableUsage: *u}
		if s := samples[k]; s != nil {
			th.Sampled, th.StorageBytes, th.Items = true, s.bytes, s.items
		}
		r.TableHours = append(r.TableHours, th)
	}
	sort.Slice(r.TableHours, func(i, j int) bool {
		a, b := r.TableHours[i], r.TableHours[j]
		if !a.Hour.Equal(b.Hour) {
			return a.Hour.Before(b.Hour)
		}
		return a.Table < b.Table
	})
	if m.storage != nil {
		st, err := m.storage.TenantStorage(ctx, s)
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading storage statistics")
		}
		for _, s := range st {
			r.StorageBytes += s.Bytes + s.IndexBytes
			r.Items += s.Items
		}
		if st != nil {
			r.Storage = st
		}
	}
	return r, nil
}

func addTo(u *OpUsage, kind byte, v int64) {
	switch kind {
	case nameRequests:
		u.Requests += v
	case nameThrottled:
		u.ThrottledRequests += v
	case nameReadOp:
		u.ConsumedReadUnits += float64(v) / milli
	case nameWriteOp:
		u.ConsumedWriteUnits += float64(v) / milli
	}
}
