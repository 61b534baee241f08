// Package resolve decides, once and above every storage backend, what a
// request may touch: it resolves (ctx, tenancy.Scope, table name) to a
// Target — the table's definition, its physical identity, the namespace
// (tenant and environment) the scope's items live in, the isolation mode
// and leading-key pattern with their enforcement — after the policy
// decisions (a narrowed credential's table list, the operator's lack of
// data access, ResourceNotFound that never reveals another tenant's
// table). It also holds which tables a scope sees (ListTables), who may
// change a table, and what a CreateTable's tenantdb: tags choose.
//
// A backend (the embedded engine over Pebble; a remote DynamoDB-API
// engine) acts only on Targets and never decides isolation itself. It
// persists definitions and hands the resolver a Catalog to load them
// from. See DESIGN.md.
package resolve

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Catalog is where a backend persists table definitions; the resolver
// loads them through it (shared tables at New, a tenant environment's
// own tables on first use) and caches them. A backend writes definitions
// itself — atomically with its own bookkeeping, such as the records of
// pending data drops — and then publishes them (Publish, Unpublish).
type Catalog interface {
	// LoadShared returns every shared (operator) table definition.
	LoadShared(ctx context.Context) ([]*schema.Table, error)
	// LoadOwned returns the definitions owned by the tenant environment
	// whose namespace is ns (see Namespace).
	LoadOwned(ctx context.Context, ns []byte) ([]*schema.Table, error)
}

// Options configure a Resolver.
type Options struct {
	// Region and Account appear in table ARNs.
	Region  string
	Account string
	// MaxTenantTables bounds the tables one tenant environment may own
	// (AdmitCreate); it must be positive.
	MaxTenantTables int
	// Loaded, if set, is called with the tables of a tenant environment
	// when they are first loaded (the engine resumes their index
	// backfills). It runs without the resolver's lock held.
	Loaded func(tables []*schema.Table)
	// MaxStale, if positive, is how long loaded definitions are used
	// before they are loaded again (refresh.go): other processes change
	// the Catalog too (gateways over one DynamoDB-API engine), and DDL
	// through one of them is seen by this one within MaxStale (plus one
	// load). Zero keeps definitions until Publish/Unpublish change them:
	// one process owns the Catalog (the embedded engine).
	MaxStale time.Duration
}

// Resolver holds the published table definitions and resolves names
// against them for a scope. It is safe for concurrent use.
type Resolver struct {
	cat       Catalog
	opts      Options
	arnPrefix string

	mu     sync.RWMutex
	shared map[string]*schema.Table            // shared tables by name
	owned  map[string]map[string]*schema.Table // tenant tables: namespace -> name -> table (copy-on-write)
	byID   map[uint64]*schema.Table            // every loaded table by id

	// refresh state (Options.MaxStale; refresh.go), under mu: when each
	// namespace's tables ("" for the shared ones) were loaded, and a
	// generation each Publish/Unpublish bumps, so that a load that raced
	// with this process's own DDL is discarded.
	loadedAt   map[string]time.Time
	gen        map[string]uint64
	refreshing sync.Map // namespace -> struct{}: a refresh is running
}

// New returns a Resolver over cat with the shared tables loaded.
func New(ctx context.Context, cat Catalog, opts Options) (*Resolver, error) {
	r := &Resolver{
		cat:       cat,
		opts:      opts,
		arnPrefix: "arn:aws:dynamodb:" + opts.Region + ":" + opts.Account + ":table/",
		shared:    map[string]*schema.Table{},
		owned:     map[string]map[string]*schema.Table{},
		byID:      map[uint64]*schema.Table{},
		loadedAt:  map[string]time.Time{sharedKey: time.Now()},
		gen:       map[string]uint64{},
	}
	tables, err := cat.LoadShared(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		r.shared[t.Name] = t
		r.byID[t.ID] = t
	}
	return r, nil
}

// Target is a table as one scope resolved it: everything a backend needs
// to act on the table for that scope. Backends hold it by value.
type Target struct {
	// Table is the definition as resolved; its ID is the physical
	// identity (never reused), its Isolation and LeadingKeyPattern the
	// isolation the backend must keep.
	Table *schema.Table
	// Namespace is the key prefix of the scope's tenant environment
	// (keyspace.Namespace): every item of the scope lives under it. Nil
	// for the operator, which holds no data.
	Namespace []byte
	// Scope is the scope the table was resolved for (zero for a backend's
	// own background work, see Background).
	Scope tenancy.Scope
}

// Background returns the Target through which a backend's own maintenance
// (TTL expiry, index backfill) acts on table t's items in namespace ns. It
// acts for no request: its Scope is zero, and it must never serve one.
func Background(t *schema.Table, ns []byte) Target { return Target{Table: t, Namespace: ns} }

// Namespace returns the key prefix of scope s's tenant environment, under
// which all of its items, index entries, statistics and transaction tokens
// live.
func Namespace(s tenancy.Scope) []byte { return keyspace.Namespace(s.Tenant(), s.Env()) }

// EnvOf returns the environment of namespace ns of tenant t (ok false if
// ns is not one of t's): what a record of a namespace names (a tenant
// restore's, whose resumption needs a scope in it).
func EnvOf(t tenancy.TenantID, ns []byte) (env string, ok bool) { return keyspace.NamespaceOf(t, ns) }

// TenantPrefix returns the prefix that every namespace of scope s's
// tenant (each of its environments) begins with, for a backend that
// drops a deleted tenant's data across its environments.
func TenantPrefix(s tenancy.Scope) []byte { return keyspace.Tenant(s.Tenant()) }

// CheckLeadingKey enforces a leading-keys table's pattern on a partition
// key value (of the table or of a GSI) for the target's scope; on other
// tables it accepts everything. Errors: AccessDeniedException.
func (t *Target) CheckLeadingKey(pk attr.Value) error {
	if t.Table.Isolation != tenancy.LeadingKeys {
		return nil
	}
	var s string
	switch pk.Type {
	case attr.S:
		s = pk.S
	case attr.B:
		s = string(pk.B)
	default:
		s = pk.N.String()
	}
	return t.Scope.CheckLeadingKey(t.Table.LeadingKeyPattern, s)
}

// CheckKey enforces the pattern on the partition key of key, a table key
// a request names (GetItem, DeleteItem, UpdateItem, batch and transaction
// keys). Errors: AccessDeniedException.
func (t *Target) CheckKey(key attr.Item) error {
	if t.Table.Isolation != tenancy.LeadingKeys {
		return nil
	}
	return t.CheckLeadingKey(key[t.Table.Hash.Name])
}

// CheckItem enforces the pattern on an item being written: on its
// partition key and on every GSI partition key it carries, so that no
// index entry can land under another tenant's leading key. Errors:
// AccessDeniedException.
func (t *Target) CheckItem(item attr.Item) error {
	if t.Table.Isolation != tenancy.LeadingKeys {
		return nil
	}
	if err := t.CheckLeadingKey(item[t.Table.Hash.Name]); err != nil {
		return err
	}
	for _, ix := range t.Table.Indexes {
		if ix.Local {
			continue
		}
		if v, ok := item[ix.Hash.Name]; ok {
			if err := t.CheckLeadingKey(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckStartKey enforces the pattern on a page token (ExclusiveStartKey)
// of the table or of index ix (nil: the table): on every partition key it
// names, as IAM's dynamodb:LeadingKeys does. Errors: AccessDeniedException.
func (t *Target) CheckStartKey(ix *schema.Index, esk attr.Item) error {
	if t.Table.Isolation != tenancy.LeadingKeys {
		return nil
	}
	if err := t.CheckLeadingKey(esk[t.Table.Hash.Name]); err != nil {
		return err
	}
	if ix != nil {
		return t.CheckLeadingKey(esk[ix.Hash.Name])
	}
	return nil
}

// NotFound is the ResourceNotFound error for a table name. It is the same
// whether or not another tenant has a table of that name.
func NotFound(name string) error {
	return apierr.New(apierr.ResourceNotFound, "Requested resource not found: Table: %s not found", name)
}

func denyTable(s tenancy.Scope, name string) error {
	return apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:%s on resource: table/%s", s.KeyID(), s.Action(), name)
}

// Open resolves name for a data-plane operation of scope s. Errors:
// ValidationException (invalid name), AccessDeniedException (the
// operator, which has no access to table data; a table outside a
// narrowed credential's policy, whether or not it exists),
// ResourceNotFoundException.
//
// NB: on every request's path: it allocates only the namespace.
func (r *Resolver) Open(ctx context.Context, s tenancy.Scope, name string) (Target, error) {
	if err := schema.ValidateTableName(name); err != nil {
		return Target{}, err
	}
	if s.Tenant().IsZero() {
		return Target{}, apierr.New(apierr.AccessDenied, "The operator credential has no access to table data; use a tenant credential")
	}
	return r.Lookup(ctx, s, name)
}

// Lookup finds the table named name visible to scope s: the tenant's own
// table of that name, else the shared one. It returns a ResourceNotFound
// error that does not reveal whether another tenant has such a table, and
// AccessDenied (whether or not the table exists) for a table outside a
// narrowed credential's policy. The operator's Target has no Namespace.
//
// NB: every by-name resolution (data plane, DDL, DescribeTable, TTL, tags)
// goes through Lookup, so the policy check lives here and cannot be
// forgotten by one operation.
func (r *Resolver) Lookup(ctx context.Context, s tenancy.Scope, name string) (Target, error) {
	// NB: a table's control plane reads the engine's definition, not one
	// loaded up to MaxStale ago: DDL changes a table's current definition
	// (changed through another gateway, a conditional write would fail),
	// and DescribeTable shows it (refresh.go). These requests are rate
	// limited per tenant.
	return r.lookup(ctx, s, name, r.opts.MaxStale > 0 && freshActions[s.Action()])
}

// freshActions are the table control-plane actions that resolve a table
// from the engine's current definitions on a gateway.
var freshActions = map[string]bool{
	"DescribeTable": true, "DeleteTable": true, "UpdateTable": true, "TagResource": true, "UntagResource": true,
	"ListTagsOfResource": true, "UpdateTimeToLive": true, "DescribeTimeToLive": true,
	// A backup keeps the definition it reads (indexes, TTL, stream), and a
	// restore or the recovery window starts from it.
	"CreateBackup": true, "UpdateContinuousBackups": true, "DescribeContinuousBackups": true,
	"RestoreTableToPointInTime": true,
}

func (r *Resolver) lookup(ctx context.Context, s tenancy.Scope, name string, reloaded bool) (Target, error) {
	if !s.AllowsTable(name) {
		return Target{}, denyTable(s, name)
	}
	tg := Target{Scope: s}
	if !s.Tenant().IsZero() {
		tg.Namespace = Namespace(s)
		own, err := r.ownedFor(ctx, tg.Namespace, reloaded)
		if err != nil {
			return Target{}, err
		}
		if t, ok := own[name]; ok {
			tg.Table = t
			return tg, nil
		}
	}
	if err := r.refreshSharedFor(ctx, reloaded); err != nil {
		return Target{}, err
	}
	r.mu.RLock()
	t, ok := r.shared[name]
	r.mu.RUnlock()
	if !ok && r.opts.MaxStale > 0 && !reloaded {
		// NB: created through another gateway since the last load
		// (refresh.go): look again in what the engine holds.
		return r.lookup(ctx, s, name, true)
	}
	if !ok {
		return Target{}, NotFound(name)
	}
	tg.Table = t
	return tg, nil
}

// TableARN returns the ARN of the table named name.
func (r *Resolver) TableARN(name string) string { return r.arnPrefix + name }

// LookupARN resolves a table ARN (or an index or stream ARN, which names
// its table first) visible to s, as Lookup does. Errors:
// ValidationException (malformed ARN), AccessDeniedException (another
// region or account, or outside a narrowed credential's policy),
// ResourceNotFoundException.
func (r *Resolver) LookupARN(ctx context.Context, s tenancy.Scope, arn string) (Target, error) {
	if arn == "" {
		return Target{}, apierr.Validationf("1 validation error detected: Value null at 'resourceArn' failed to satisfy constraint: Member must not be null")
	}
	if !strings.HasPrefix(arn, "arn:") || strings.Count(arn, ":") < 5 {
		return Target{}, apierr.Validationf("Invalid TableArn: Invalid ResourceArn provided as input %s", arn)
	}
	if !strings.HasPrefix(arn, r.arnPrefix) {
		return Target{}, apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:%s on resource: %s", s.KeyID(), s.Action(), arn)
	}
	name := strings.TrimPrefix(arn, r.arnPrefix)
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[:i]
	}
	if err := schema.ValidateTableName(name); err != nil {
		return Target{}, apierr.Validationf("Invalid TableArn: Invalid ResourceArn provided as input %s", arn)
	}
	if !s.AllowsTable(name) {
		return Target{}, apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:%s on resource: %s", s.KeyID(), s.Action(), arn)
	}
	tg, err := r.Lookup(ctx, s, name)
	if err != nil {
		return Target{}, apierr.New(apierr.ResourceNotFound, "Requested resource not found: ResourcArn: %s not found", arn)
	}
	return tg, nil
}
