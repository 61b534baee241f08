package engine

import (
	"errors"
	"fmt"
	"github.com/tenantdb/tenantdb/internal/schema"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// handle is a table as one scope sees it: the definition, the namespace
// (key prefix) that holds this scope's items, and the store they live in.
// It is the only way operations reach item data.
type handle struct {
	t     *schema.Table
	ns    []byte
	db    *storage.DB
	scope tenancy.Scope
}

// namespace returns the data prefix of a scope.
func namespace(s tenancy.Scope) []byte { return keyspace.Namespace(s.Tenant(), s.Env()) }

func notFound(name string) error {
	return apierr.New(apierr.ResourceNotFound, "Requested resource not found: Table: %s not found", name)
}

// lookup finds the table named name visible to scope s: the tenant's own
// table of that name, else the shared one. It returns a ResourceNotFound
// error that does not reveal whether another tenant has such a table, and
// AccessDenied (whether or not the table exists) for a table outside a
// narrowed credential's policy.
//
// NB: every by-name resolution (data plane, DDL, DescribeTable, TTL, tags)
// goes through lookup, so the policy check lives here and cannot be
// forgotten by one operation.
func (e *Engine) lookup(s tenancy.Scope, name string) (*schema.Table, error) {
	if !s.AllowsTable(name) {
		return nil, apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:%s on resource: table/%s", s.KeyID(), s.Action(), name)
	}
	if !s.Tenant().IsZero() {
		own, err := e.ownedTables(s)
		if err != nil {
			return nil, err
		}
		if t, ok := own[name]; ok {
			return t, nil
		}
	}
	e.mu.RLock()
	t, ok := e.shared[name]
	e.mu.RUnlock()
	if !ok {
		return nil, notFound(name)
	}
	return t, nil
}

// open resolves name for a data-plane operation of scope s and returns the
// handle through which it reads and writes items. The operator, which has
// no tenant, never gets a handle.
func (e *Engine) open(s tenancy.Scope, name string) (*handle, error) {
	if err := schema.ValidateTableName(name); err != nil {
		return nil, err
	}
	if s.Tenant().IsZero() {
		return nil, apierr.New(apierr.AccessDenied, "The operator credential has no access to table data; use a tenant credential")
	}
	if !s.AllowsTable(name) {
		return nil, apierr.New(apierr.AccessDenied, "User: %s is not authorized to perform: dynamodb:%s on resource: table/%s", s.KeyID(), s.Action(), name)
	}
	t, err := e.lookup(s, name)
	if err != nil {
		return nil, err
	}
	db, err := e.storeFor(s, t)
	if err != nil {
		return nil, err
	}
	return &handle{t: t, ns: namespace(s), db: db, scope: s}, nil
}

// storeFor returns the store holding scope s's items of table t: the main
// store, or the tenant's own silo store for silo tables.
func (e *Engine) storeFor(s tenancy.Scope, t *schema.Table) (*storage.DB, error) {
	return e.storeForTenant(s.Tenant(), t)
}

// siloDir returns the directory of tenant's silo store for table id, or ""
// for in-memory silo stores.
func (e *Engine) siloDir(tenant tenancy.TenantID, id uint64) string {
	if e.opts.SiloDir == "" || e.opts.InMemory {
		return ""
	}
	return fmt.Sprintf("%s/%s/%d", e.opts.SiloDir, tenant, id)
}

// storeForTenant is storeFor without a scope. The drop of a table uses it
// with the table already unpublished; background work on a table it
// resolved earlier uses backgroundStore.
func (e *Engine) storeForTenant(tenant tenancy.TenantID, t *schema.Table) (*storage.DB, error) {
	return e.siloStore(tenant, t, false)
}

// errUnpublished vetoes opening the silo store of a table that is no
// longer published.
var errUnpublished = errors.New("engine: table no longer published")

// backgroundStore is storeForTenant for background work (TTL expiry,
// index backfill) on table t, resolved before the call: nil if t has been
// unpublished since (it is being or has been dropped), so that such work
// never re-creates the store and directory of a dropped silo table after
// the drop closed and removed them.
func (e *Engine) backgroundStore(tenant tenancy.TenantID, t *schema.Table) (*storage.DB, error) {
	db, err := e.siloStore(tenant, t, true)
	if errors.Is(err, errUnpublished) {
		return nil, nil
	}
	return db, err
}

func (e *Engine) siloStore(tenant tenancy.TenantID, t *schema.Table, published bool) (*storage.DB, error) {
	if t.Isolation != tenancy.Silo {
		return e.db, nil
	}
	key := siloKey(tenant, t.ID)
	e.mu.RLock()
	db, ok := e.silos[key]
	e.mu.RUnlock()
	if ok {
		return db, nil
	}
	dir := e.siloDir(tenant, t.ID)
	db, err := e.openSilo(key, dir, func() error {
		if e.isDropped(tenant) {
			// NB: DropTenant marks the tenant before it closes and
			// removes the silo stores, waiting for opens in flight, so
			// a straggler cannot re-create them.
			return notFound(t.Name)
		}
		if published && e.byID[t.ID] == nil {
			return errUnpublished
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db, nil
}

// checkLeadingKey enforces a leading-keys table's pattern on a partition
// key value (of the table or of a GSI).
func (h *handle) checkLeadingKey(pk attr.Value) error {
	if h.t.Isolation != tenancy.LeadingKeys {
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
	return h.scope.CheckLeadingKey(h.t.LeadingKeyPattern, s)
}

// ownedTables returns (loading on first use) the tables owned by scope s's
// tenant environment.
func (e *Engine) ownedTables(s tenancy.Scope) (map[string]*schema.Table, error) {
	return e.ownedByNS(namespace(s))
}

// ownedByNS returns (loading on first use) the tables owned by the tenant
// environment whose namespace prefix is nsb. The returned map is never
// modified (catalog changes replace it), so it may be read without a lock.
func (e *Engine) ownedByNS(nsb []byte) (map[string]*schema.Table, error) {
	ns := string(nsb)
	e.mu.RLock()
	m, ok := e.owned[ns]
	e.mu.RUnlock()
	if ok {
		return m, nil
	}
	lo, hi := keyspace.TenantTables(nsb)
	m, err := e.loadTables(lo, hi)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if cur, ok := e.owned[ns]; ok {
		e.mu.Unlock()
		return cur, nil
	}
	e.owned[ns] = m
	for _, t := range m {
		e.byID[t.ID] = t
	}
	e.mu.Unlock()
	for _, t := range m {
		e.resumeBackfills(t)
	}
	return m, nil
}

func (e *Engine) loadShared() error {
	lo, hi := keyspace.SharedTables()
	m, err := e.loadTables(lo, hi)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.shared = m
	for _, t := range m {
		e.byID[t.ID] = t
	}
	e.mu.Unlock()
	return nil
}

// current returns the published definition of table t (which may have
// changed since t was looked up), or ResourceNotFound if t was deleted.
// Writers call it with their item locks held: see DESIGN.md, "DDL against
// concurrent writes".
func (e *Engine) current(t *schema.Table) (*schema.Table, error) {
	e.mu.RLock()
	c := e.byID[t.ID]
	if c == nil {
		// A shared table published without the id index (tests do this).
		if sh := e.shared[t.Name]; sh != nil && sh.ID == t.ID {
			c = sh
		}
	}
	e.mu.RUnlock()
	if c == nil {
		return nil, notFound(t.Name)
	}
	return c, nil
}

func (e *Engine) loadTables(lo, hi []byte) (map[string]*schema.Table, error) {
	m := map[string]*schema.Table{}
	it := e.db.NewIter(lo, hi)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		t, err := schema.Decode(it.Value())
		if err != nil {
			return nil, err
		}
		m[t.Name] = t
	}
	if err := it.Error(); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "loading tables")
	}
	return m, nil
}

// getItem reads the item with key attributes key (nil if absent).
func (h *handle) getItem(key attr.Item) (attr.Item, error) {
	v, err := h.db.Get(itemKey(h.t, h.ns, key))
	if err == storage.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading item")
	}
	it, err := attr.DecodeItem(v)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "decoding item")
	}
	return it, nil
}
