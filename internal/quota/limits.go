package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Defaults for every tenant that has no quota of its own.
const (
	// DefaultReadUnits and DefaultWriteUnits are a tenant's capacity, in
	// read and write capacity units per second, when no quota was set.
	DefaultReadUnits  = 1000
	DefaultWriteUnits = 1000
	// DefaultBurstSeconds is how much unused capacity a bucket keeps, as
	// DynamoDB's burst capacity (300 s).
	DefaultBurstSeconds = 300
	// DefaultControlRate is a tenant's rate of control-plane requests
	// (DescribeTable, CreateTable, ...) per second; their burst is
	// DefaultControlBurst requests.
	DefaultControlRate  = 50
	DefaultControlBurst = 200
	// DefaultWeight is a tenant's share in fair queueing.
	DefaultWeight = 1
)

// Limits is a quota record: the capacity of a tenant (Table == "") or of one
// of its tables. Zero fields mean "inherit": a tenant-wide record inherits
// the server defaults, a table record has no table-level limit for that
// field (only the tenant-wide one applies).
type Limits struct {
	// ReadUnits and WriteUnits are capacity units per second.
	ReadUnits  float64 `json:"read_units,omitempty"`
	WriteUnits float64 `json:"write_units,omitempty"`
	// BurstSeconds is how many seconds of unused capacity accumulate.
	BurstSeconds float64 `json:"burst_seconds,omitempty"`
	// Weight is the tenant's share in fair queueing (tenant-wide only).
	Weight float64 `json:"weight,omitempty"`
	// MaxInflight caps the tenant's requests running at once (tenant-wide
	// only; 0: the server's per-tenant default).
	MaxInflight int `json:"max_inflight,omitempty"`
}

// Quota is a tenant's or a table's quota as the admin API shows it.
//
// For a tenant (Table == "") the values are effective: a field the
// tenant's record does not set shows the server default. For a table they
// are the table's own record, where 0 means "no table limit, only the
// tenant's applies".
type Quota struct {
	TenantID     string  `json:"tenant_id"`
	Table        string  `json:"table,omitempty"`
	ReadUnits    float64 `json:"read_units"`
	WriteUnits   float64 `json:"write_units"`
	BurstSeconds float64 `json:"burst_seconds"`
	Weight       float64 `json:"weight,omitempty"`
	MaxInflight  int     `json:"max_inflight,omitempty"`
	// Set reports whether a record exists (if not, defaults apply).
	Set bool `json:"set"`
	// Available is the capacity left in the buckets now (negative: debt),
	// when the server holds state for the tenant.
	Available *Available `json:"available,omitempty"`
	// Tables lists the tenant's per-table quotas (tenant view only).
	Tables []Quota `json:"tables,omitempty"`
}

// Available is the content of a tenant's or table's buckets.
type Available struct {
	ReadUnits  float64 `json:"read_units"`
	WriteUnits float64 `json:"write_units"`
}

// Update changes a quota record: each non-nil field replaces the stored
// value, and a value of 0 removes it (back to inheriting). A record left
// with no values is deleted.
type Update struct {
	ReadUnits    *float64 `json:"read_units,omitempty"`
	WriteUnits   *float64 `json:"write_units,omitempty"`
	BurstSeconds *float64 `json:"burst_seconds,omitempty"`
	Weight       *float64 `json:"weight,omitempty"`
	MaxInflight  *int     `json:"max_inflight,omitempty"`
}

// apply returns l changed by u.
func (u Update) apply(l Limits) Limits {
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&l.ReadUnits, u.ReadUnits)
	set(&l.WriteUnits, u.WriteUnits)
	set(&l.BurstSeconds, u.BurstSeconds)
	set(&l.Weight, u.Weight)
	if u.MaxInflight != nil {
		l.MaxInflight = *u.MaxInflight
	}
	return l
}

// maxUnits bounds any configured rate; past it float arithmetic on tokens
// loses whole units.
const maxUnits = 1e12

// Validate reports, as a ValidationException, a record that cannot be
// stored. table is "" for a tenant-wide record.
func (l Limits) Validate(table string) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"read_units", l.ReadUnits}, {"write_units", l.WriteUnits}, {"burst_seconds", l.BurstSeconds}, {"weight", l.Weight}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > maxUnits {
			return apierr.Validationf("%s must be a number between 0 and %g", f.name, float64(maxUnits))
		}
	}
	if l.BurstSeconds > 3600 {
		return apierr.Validationf("burst_seconds must be at most 3600")
	}
	if l.Weight != 0 && (l.Weight < 0.01 || l.Weight > 1000) {
		return apierr.Validationf("weight must be between 0.01 and 1000")
	}
	if l.MaxInflight < 0 {
		return apierr.Validationf("max_inflight must not be negative")
	}
	if table != "" && (l.Weight != 0 || l.MaxInflight != 0) {
		return apierr.Validationf("weight and max_inflight apply to a tenant, not to a table")
	}
	if len(table) > 255 {
		return apierr.Validationf("table name must be at most 255 characters")
	}
	return nil
}

// ControlStore is where quota records and usage counters live on a
// gateway over a DynamoDB-API engine (Options.Control): enginekv.Store.
type ControlStore interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

// store persists quota records under keyspace.Quota, in db or, if set,
// ctl.
type store struct {
	db  *storage.DB
	ctl ControlStore
}

// scan calls f for every record in [lo, hi).
func (s store) scan(lo, hi []byte, f func(k, v []byte) bool) error {
	if s.ctl != nil {
		return s.ctl.Scan(context.Background(), lo, hi, f)
	}
	it := s.db.NewIter(lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		if !f(it.Key(), it.Value()) {
			break
		}
	}
	err := it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// load reads all quota records of tenant t: the tenant-wide one (nil if
// absent) and the per-table ones. It reads only the tenant's quota range.
func (s store) load(t tenancy.TenantID) (tenant *Limits, tables map[string]Limits, err error) {
	lo, hi := keyspace.Quotas(t)
	var derr error
	err = s.scan(lo, hi, func(k, v []byte) bool {
		name, _ := keyspace.QuotaTable(t, k)
		var l Limits
		if err := json.Unmarshal(v, &l); err != nil {
			derr = fmt.Errorf("quota: decoding quota record of tenant %s table %q: %w", t, name, err)
			return false
		}
		if name == "" {
			tenant = &l
			return true
		}
		if tables == nil {
			tables = map[string]Limits{}
		}
		tables[name] = l
		return true
	})
	if derr != nil {
		return nil, nil, derr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("quota: reading quotas of tenant %s: %w", t, err)
	}
	return tenant, tables, nil
}

// save durably writes (or, for nil, deletes) one record.
func (s store) save(t tenancy.TenantID, table string, l *Limits) error {
	k := keyspace.Quota(t, table)
	var v []byte
	if l != nil {
		var err error
		if v, err = json.Marshal(l); err != nil {
			return err
		}
	}
	if s.ctl != nil {
		var b kv.Batch
		if l == nil {
			b.Delete(k)
		} else {
			b.Set(k, v)
		}
		if err := s.ctl.Apply(context.Background(), &b); err != nil {
			return fmt.Errorf("quota: saving quota of tenant %s: %w", t, err)
		}
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	if l == nil {
		b.Delete(k)
	} else {
		b.Set(k, v)
	}
	if err := s.db.Apply(b); err != nil {
		return fmt.Errorf("quota: saving quota of tenant %s: %w", t, err)
	}
	return nil
}

var errNoDB = errors.New("quota: no store configured")
