// Package schema is the backend-independent definition of a DynamoDB
// table: its key schema, indexes and projections, its isolation mode, the
// validation of keys and names that DynamoDB applies to it, the JSON form
// in which definitions are persisted, and the per-tenant statistics a
// backend reports for one. It imports only vocabulary packages, so every
// backend (the embedded engine, a remote DynamoDB-API engine) and the
// resolver that decides isolation share one definition.
package schema

import (
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// KeyAttr is a key attribute's name and type. An empty Name means "none"
// (a table or index without a sort key).
type KeyAttr struct {
	Name string    `json:"name,omitempty"`
	Type attr.Type `json:"type,omitempty"`
}

// Table is a table's persisted definition. Tables are copied on change and
// never mutated in place once published, so readers may hold one without a
// lock.
type Table struct {
	// ID is the table's physical identity, allocated by the backend that
	// stores it and never reused: a recreated table is a new table.
	ID   uint64 `json:"id"`
	UUID string `json:"uuid"` // reported as TableId
	Name string `json:"name"`
	// Owner is the tenant that owns a tenant table; zero for shared tables.
	Owner    tenancy.TenantID `json:"owner"`
	OwnerEnv string           `json:"owner_env,omitempty"`
	Created  time.Time        `json:"created"`
	Status   string           `json:"status"` // ACTIVE, UPDATING, DELETING

	Hash     KeyAttr                    `json:"hash"`
	Range    KeyAttr                    `json:"range"`
	AttrDefs []wire.AttributeDefinition `json:"attr_defs"`
	Indexes  []*Index                   `json:"indexes,omitempty"`

	Isolation         tenancy.IsolationMode `json:"isolation"`
	LeadingKeyPattern string                `json:"leading_key_pattern,omitempty"`

	BillingMode string `json:"billing_mode"`
	// OnDemandSince is when the table last became PAY_PER_REQUEST (at
	// creation or by UpdateTable); zero if it never was, or if it was
	// created on demand before this was recorded (then Created stands).
	OnDemandSince      time.Time                 `json:"on_demand_since,omitempty"`
	ReadCapacity       int64                     `json:"rcu"`
	WriteCapacity      int64                     `json:"wcu"`
	Stream             *wire.StreamSpecification `json:"stream,omitempty"`
	TTLAttribute       string                    `json:"ttl_attr,omitempty"`
	TTLEnabled         bool                      `json:"ttl_enabled,omitempty"`
	Tags               []wire.Tag                `json:"tags,omitempty"`
	DeletionProtection bool                      `json:"deletion_protection,omitempty"`
	TableClass         string                    `json:"table_class,omitempty"`
	NextIndexNo        uint16                    `json:"next_index_no"`

	// LatestStream is the id of the table's newest change log stream (see
	// package changelog), 0 if it never had one. The stream receives the
	// table's changes while Stream is enabled.
	LatestStream uint64 `json:"latest_stream,omitempty"`

	// LogConsumers hold the table's change log (engine.RetainLog): while
	// there is one, every change is recorded with both images, whether
	// or not Stream is enabled. Sorted by tenant, environment and name.
	LogConsumers []LogConsumer `json:"log_consumers,omitempty"`
	// HiddenStream is the id of the change log stream receiving the
	// table's changes while it has LogConsumers and no enabled Stream: a
	// stream the Streams API never shows. 0 otherwise.
	HiddenStream uint64 `json:"hidden_stream,omitempty"`
}

// LogConsumer is one holder of a table's change log: a feature of a
// tenant environment (a webhook, an aggregate, point-in-time recovery)
// that reads the tenant's changes and needs them kept for Retention
// (0: the log's default).
type LogConsumer struct {
	Tenant    tenancy.TenantID `json:"tenant"`
	Env       string           `json:"env"`
	Name      string           `json:"name"`
	Retention time.Duration    `json:"retention,omitempty"`
	// Since is a time from which on every change of the table is in the
	// log with both images (set once every writer sees the consumer);
	// zero until then.
	Since time.Time `json:"since,omitempty"`
}

// LogRetention returns the longest Retention its consumers ask of t's
// change log (0: none asks for more than the default).
func (t *Table) LogRetention() time.Duration {
	var d time.Duration
	for _, c := range t.LogConsumers {
		d = max(d, c.Retention)
	}
	return d
}

// Index is a GSI or LSI definition. Index number 0 is the base table, so
// indexes are numbered from 1; numbers are never reused within a table.
type Index struct {
	No             uint16    `json:"no"`
	Name           string    `json:"name"`
	Local          bool      `json:"local,omitempty"`
	Hash           KeyAttr   `json:"hash"`
	Range          KeyAttr   `json:"range"`
	ProjectionType string    `json:"projection"` // ALL, KEYS_ONLY, INCLUDE
	NonKey         []string  `json:"non_key,omitempty"`
	Status         string    `json:"status"` // CREATING, ACTIVE, DELETING
	Backfilling    bool      `json:"backfilling,omitempty"`
	ReadCapacity   int64     `json:"rcu,omitempty"`
	WriteCapacity  int64     `json:"wcu,omitempty"`
	Created        time.Time `json:"created"`
}

// Shared reports whether t is a shared (operator) table.
func (t *Table) Shared() bool { return t.Owner.IsZero() }

// Index returns the index named name, or nil.
func (t *Table) Index(name string) *Index {
	for _, ix := range t.Indexes {
		if ix.Name == name {
			return ix
		}
	}
	return nil
}

// ReadableIndex returns the index named name for a Query or Scan, with
// DynamoDB's errors: ValidationException for a name of the wrong length,
// an index the table does not have (or is deleting), and one still being
// backfilled.
func (t *Table) ReadableIndex(name string) (*Index, error) {
	if len(name) < 3 || len(name) > 255 {
		return nil, apierr.Validationf("1 validation error detected: Value '%s' at 'indexName' failed to satisfy constraint: Member must have length between 3 and 255", name)
	}
	ix := t.Index(name)
	if ix == nil || ix.Status == "DELETING" {
		return nil, apierr.Validationf("The table does not have the specified index: %s", name)
	}
	if ix.Status != "ACTIVE" || ix.Backfilling {
		return nil, apierr.Validationf("Cannot read from backfilling global secondary index: %s", name)
	}
	return ix, nil
}

// Clone returns a deep-enough copy of t for copy-on-write changes.
func (t *Table) Clone() *Table {
	c := *t
	c.AttrDefs = append([]wire.AttributeDefinition(nil), t.AttrDefs...)
	c.Tags = append([]wire.Tag(nil), t.Tags...)
	c.LogConsumers = append([]LogConsumer(nil), t.LogConsumers...)
	c.Indexes = make([]*Index, len(t.Indexes))
	for i, ix := range t.Indexes {
		cp := *ix
		cp.NonKey = append([]string(nil), ix.NonKey...)
		c.Indexes[i] = &cp
	}
	return &c
}

// Projects reports whether index ix holds attribute name (key attributes of
// the table and the index are always projected).
func (t *Table) Projects(ix *Index, name string) bool {
	if name == t.Hash.Name || name == t.Range.Name || name == ix.Hash.Name || name == ix.Range.Name {
		return true
	}
	switch ix.ProjectionType {
	case "ALL":
		return true
	case "INCLUDE":
		for _, n := range ix.NonKey {
			if n == name {
				return true
			}
		}
	}
	return false
}

// KeyNames returns the names of the table's key attributes.
func (t *Table) KeyNames() []string {
	if t.Range.Name == "" {
		return []string{t.Hash.Name}
	}
	return []string{t.Hash.Name, t.Range.Name}
}

// BillingSummary returns t's BillingModeSummary. DynamoDB reports when
// the table last became PAY_PER_REQUEST, also after it went back to
// provisioned; a table created on demand before OnDemandSince was
// recorded reports its creation.
func (t *Table) BillingSummary() *wire.BillingModeSummary {
	b := &wire.BillingModeSummary{BillingMode: t.BillingMode}
	switch {
	case !t.OnDemandSince.IsZero():
		b.LastUpdateToPayPerRequestDateTime = epoch(t.OnDemandSince)
	case t.BillingMode == "PAY_PER_REQUEST":
		b.LastUpdateToPayPerRequestDateTime = epoch(t.Created)
	}
	return b
}

// epoch is t in DynamoDB's seconds with millisecond precision.
func epoch(t time.Time) float64 { return float64(t.UnixNano()/1e6) / 1e3 }
