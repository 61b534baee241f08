package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Where a tenant's silo store lives: SiloDir/<tenant>/store. The layout
// before one store per tenant kept a store per (tenant, silo table) in
// SiloDir/<tenant>/<table id>; openTenantStore moves such stores' data
// into the tenant's store when it opens it (see migrateLegacySilos).
const siloStoreName = "store"

// inMemorySilos reports whether silo stores are kept in memory.
func (e *Engine) inMemorySilos() bool { return e.opts.SiloDir == "" || e.opts.InMemory }

// tenantSiloDir is the directory of tenant's silo data: on disk, or the
// name of its in-memory store's directory.
func (e *Engine) tenantSiloDir(tenant tenancy.TenantID) string {
	root := e.opts.SiloDir
	if root == "" {
		root = "silos"
	}
	return filepath.Join(root, tenant.String())
}

// siloStoreDir is the directory of tenant's silo store.
func (e *Engine) siloStoreDir(tenant tenancy.TenantID) string {
	return filepath.Join(e.tenantSiloDir(tenant), siloStoreName)
}

// siloExists reports whether tenant has a silo store (or stores of the
// old layout to migrate into one). REQUIRES: e.mu held (so that a drop
// removing the directory is not half done).
func (e *Engine) siloExists(tenant tenancy.TenantID) (bool, error) {
	if e.inMemorySilos() {
		return e.shared.ExistsInMemory(e.siloStoreDir(tenant)), nil
	}
	ents, err := os.ReadDir(e.tenantSiloDir(tenant))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, d := range ents {
		if d.Name() == siloStoreName || legacySilo(d.Name()) {
			return true, nil
		}
	}
	return false, nil
}

// legacySilo reports whether name is a store of the old layout (a table id).
func legacySilo(name string) bool {
	_, err := strconv.ParseUint(name, 10, 64)
	return err == nil
}

// openTenantStore opens (creating it if needed) tenant's silo store,
// sized small and sharing the engine's caches, and moves the data of
// stores of the old layout into it.
func (e *Engine) openTenantStore(tenant tenancy.TenantID) (*storage.DB, error) {
	dir := e.siloStoreDir(tenant)
	if !e.inMemorySilos() {
		if err := os.MkdirAll(e.tenantSiloDir(tenant), 0o700); err != nil {
			return nil, err
		}
	}
	db, err := e.openStore(dir, storage.Options{InMemory: e.inMemorySilos(), Shared: e.shared, Small: true, Logger: e.log})
	if err != nil {
		return nil, err
	}
	if !e.inMemorySilos() {
		if err := e.migrateLegacySilos(tenant, db); err != nil {
			db.Close()
			return nil, fmt.Errorf("moving stores of the old layout: %w", err)
		}
	}
	return db, nil
}

// migrateLegacySilos copies every store of the old layout of tenant (one
// per silo table) into db, the tenant's store, then removes it.
//
// Crash-safe and idempotent: keys are copied as they read (a counter's
// merged value is set, not merged again), so copying a store twice gives
// the same result (NB: nothing writes to db in between: it is published
// in e.silos only once this returns); a store is renamed to <id>.migrated (atomically) only
// once all of it is durably in db, and a .migrated directory is only ever
// removed. The one key two old stores may share is a namespace's change
// log sequence ceiling: the larger is kept, so no sequence number is
// reused.
func (e *Engine) migrateLegacySilos(tenant tenancy.TenantID, db *storage.DB) error {
	root := e.tenantSiloDir(tenant)
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var ids []string
	for _, d := range ents {
		switch name := d.Name(); {
		case strings.HasSuffix(name, ".migrated"):
			if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
				return err
			}
		case d.IsDir() && legacySilo(name):
			ids = append(ids, name)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		old := filepath.Join(root, id)
		n, err := e.copyLegacySilo(tenant, old, db)
		if err != nil {
			return fmt.Errorf("%s: %w", old, err)
		}
		if err := os.Rename(old, old+".migrated"); err != nil {
			return err
		}
		if err := syncDir(root); err != nil {
			return err
		}
		if err := os.RemoveAll(old + ".migrated"); err != nil {
			return err
		}
		e.log.Info("engine: moved a silo table's store into its tenant's store", "tenant", tenant.String(), "table", id, "keys", n)
	}
	return nil
}

// migrateAllLegacySilos moves, in the background after Open, the stores
// of the old layout of every tenant into its store (openTenantStore does
// it when a tenant's store is first opened; this reclaims the disk of
// tenants that are not used soon: a store of the old layout closed by the
// old version keeps a WAL preallocated for a 64 MB memtable, ~16 MB).
// Each tenant's store is opened through the pool and closed again at
// once, so the pool's bound holds and no request waits for it.
func (e *Engine) migrateAllLegacySilos() {
	tenants, err := os.ReadDir(e.opts.SiloDir)
	if err != nil {
		if !os.IsNotExist(err) {
			e.log.Warn("engine: listing silo stores to migrate", "err", err)
		}
		return
	}
	for _, d := range tenants {
		if e.stopping() {
			return
		}
		tenant, err := tenancy.ParseTenantID(d.Name())
		if err != nil || !d.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(e.opts.SiloDir, d.Name()))
		if err != nil {
			continue
		}
		legacy := false
		for _, x := range ents {
			legacy = legacy || legacySilo(x.Name()) || strings.HasSuffix(x.Name(), ".migrated")
		}
		if !legacy {
			continue
		}
		errDropped := errors.New("dropped")
		s, err := e.acquireSilo(tenant, func() error {
			if e.isDropped(tenant) {
				return errDropped
			}
			return nil
		})
		if err != nil {
			if err != errDropped {
				e.log.Warn("engine: moving a tenant's silo stores of the old layout", "tenant", tenant.String(), "err", err)
			}
			continue
		}
		e.releaseAndClose(s)
	}
}

// copyLegacySilo copies every key of the store in dir into db and returns
// how many it copied.
func (e *Engine) copyLegacySilo(tenant tenancy.TenantID, dir string, db *storage.DB) (int, error) {
	src, err := e.openStore(dir, storage.Options{Shared: e.shared, Logger: e.log})
	if err != nil {
		return 0, err
	}
	defer src.Close()
	it := src.NewIter(nil, nil)
	defer it.Close()
	b := db.NewBatch()
	defer func() { b.Close() }()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if isCeiling(tenant, k) && len(v) == 8 {
			cur, err := db.Get(k)
			if err == nil && len(cur) == 8 && binary.BigEndian.Uint64(cur) > binary.BigEndian.Uint64(v) {
				v = cur
			} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return n, err
			}
		}
		b.Set(k, v)
		n++
		if b.Size() >= 1<<20 {
			if err := db.Apply(b); err != nil {
				return n, err
			}
			b.Close()
			b = db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return n, err
	}
	if err := db.Apply(b); err != nil {
		return n, err
	}
	return n, nil
}

// isCeiling reports whether k is the change log sequence ceiling of one
// of tenant's namespaces.
func isCeiling(tenant tenancy.TenantID, k []byte) bool {
	env, ok := keyspace.NamespaceOf(tenant, k)
	return ok && bytes.Equal(k, keyspace.ChangeCeiling(keyspace.Namespace(tenant, env)))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// removeSiloData removes tenant's silo store (it must be closed).
func (e *Engine) removeSiloData(tenant tenancy.TenantID) error {
	if e.inMemorySilos() {
		e.shared.RemoveInMemory(e.tenantSiloDir(tenant))
		return nil
	}
	return os.RemoveAll(e.tenantSiloDir(tenant))
}

// inSilo reports whether tenant's items of table t live in its silo
// store: always for a silo table; for a table the tenant's data was moved
// to or from its silo store, where it was moved (move.go); otherwise for
// every table when the tenant's tier is silo (Options.Tiers).
func (e *Engine) inSilo(ctx context.Context, tenant tenancy.TenantID, t *schema.Table) (bool, error) {
	if t.Isolation == tenancy.Silo {
		return true, nil
	}
	if silo, ok := e.placedIn(tenant, t.ID); ok {
		return silo, nil // moved (move.go)
	}
	if e.opts.Tiers == nil || tenant.IsZero() {
		return false, nil
	}
	silo, err := e.opts.Tiers.SiloTier(ctx, tenant)
	if err != nil {
		return false, apierr.Wrap(apierr.Internal, err, "reading the tenant's tier")
	}
	return silo, nil
}

// storeFor returns the store holding scope s's items of table t, with a
// reference the caller releases once done with it (and with every
// iterator and batch of it): the main store, or the tenant's silo store.
func (e *Engine) storeFor(ctx context.Context, s tenancy.Scope, t *schema.Table) (*storage.DB, releaser, error) {
	return e.siloStore(ctx, s.Tenant(), t, false)
}

// storeForTenant is storeFor without a scope. The drop of a table uses it
// with the table already unpublished; background work on a table it
// resolved earlier uses backgroundStore.
func (e *Engine) storeForTenant(tenant tenancy.TenantID, t *schema.Table) (*storage.DB, releaser, error) {
	return e.siloStore(context.Background(), tenant, t, false)
}

// errUnpublished vetoes opening the silo store for a table that is no
// longer published.
var errUnpublished = errors.New("engine: table no longer published")

// backgroundStore is storeForTenant for background work (TTL expiry,
// index backfill) on table t, resolved before the call: nil if t has been
// unpublished since (it is being or has been dropped) and the tenant's
// store is not open, so that such work never re-creates the store of a
// dropped tenant or table.
func (e *Engine) backgroundStore(tenant tenancy.TenantID, t *schema.Table) (*storage.DB, releaser, error) {
	db, rel, err := e.siloStore(context.Background(), tenant, t, true)
	if errors.Is(err, errUnpublished) {
		return nil, noRelease, nil
	}
	return db, rel, err
}

func (e *Engine) siloStore(ctx context.Context, tenant tenancy.TenantID, t *schema.Table, published bool) (*storage.DB, releaser, error) {
	in, err := e.inSilo(ctx, tenant, t)
	if err != nil {
		return nil, nil, err
	}
	if !in {
		return e.db, noRelease, nil
	}
	s, err := e.acquireSilo(tenant, func() error {
		if e.isDropped(tenant) {
			// NB: DropTenant marks the tenant before it closes and
			// removes the silo store, waiting for opens in flight, so a
			// straggler cannot re-create it.
			return resolve.NotFound(t.Name)
		}
		if published && e.res.ByID(t.ID) == nil {
			return errUnpublished
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return s.db, func() { e.releaseSilo(s, true) }, nil
}

// siloStoreOf returns tenant's silo store for TenantStorage if it is
// open or exists, opening it in the latter case; nil if there is none or
// the tenant is dropped. Stores are never created here.
func (e *Engine) siloStoreOf(ctx context.Context, tenant tenancy.TenantID) (*storage.DB, releaser, error) {
	errNone := errors.New("no store")
	s, err := e.acquireSilo(tenant, func() error {
		if e.isDropped(tenant) {
			return errNone
		}
		ok, err := e.siloExists(tenant)
		if err != nil {
			return apierr.Wrap(apierr.Internal, err, "looking for a silo store")
		}
		if !ok {
			return errNone
		}
		return nil
	})
	if err == errNone {
		return nil, noRelease, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return s.db, func() { e.releaseSilo(s, false) }, nil
}
