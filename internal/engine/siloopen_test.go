package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// slowSiloOpens makes e's silo store opens wait for release() after
// signalling entered, and counts them. A failing test releases them too,
// so that the engine can close.
func slowSiloOpens(t *testing.T, e *Engine) (entered chan string, release func(), opens *atomic.Int32) {
	entered, opens = make(chan string, 8), new(atomic.Int32)
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release) // NB: runs before the engine's Close (LIFO)
	e.openStore = func(dir string, o storage.Options) (*storage.DB, error) {
		opens.Add(1)
		entered <- dir
		<-ch
		return storage.Open(dir, o)
	}
	return entered, release, opens
}

// within runs f and fails the test if it has not returned after d: a
// liveness check (f must not be stuck behind something), not a timing.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

func siloTestEngine(t *testing.T) (*Engine, string) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	siloDir := t.TempDir()
	e, err := Open(db, Options{Logger: log, TTLInterval: -1, SiloDir: siloDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); db.Close() })
	return e, siloDir
}

// TestSiloOpenDoesNotStallOtherTenants: opening a tenant's silo store (a
// Pebble open, with WAL replay after a restart) must not hold up other
// tenants' requests, which resolve their tables under the same engine
// lock; concurrent requests of the opening tenant share the one open.
func TestSiloOpenDoesNotStallOtherTenants(t *testing.T) {
	e, _ := siloTestEngine(t)
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	createShared(t, e, "pool_t", "pk:S", "", nil)
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	putItems(t, e, tenantScope(t, b, "PutItem"), "silo_t", attr.Item{"pk": sval("b0")})
	entered, release, opens := slowSiloOpens(t, e)

	ctx := context.Background()
	aDone := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := e.PutItem(ctx, tenantScope(t, a, "PutItem"), &wire.PutItemInput{TableName: "silo_t", Item: attr.Item{"pk": sval("a" + string(rune('0'+i)))}})
			aDone <- err
		}()
	}
	<-entered // tenant A's store is being opened, and stays so

	within(t, 10*time.Second, "tenant B's requests while A's silo store opens", func() error {
		if _, err := e.PutItem(ctx, tenantScope(t, b, "PutItem"), &wire.PutItemInput{TableName: "pool_t", Item: attr.Item{"pk": sval("b1")}}); err != nil {
			return err
		}
		if _, err := e.PutItem(ctx, tenantScope(t, b, "PutItem"), &wire.PutItemInput{TableName: "silo_t", Item: attr.Item{"pk": sval("b2")}}); err != nil {
			return err
		}
		out, err := e.GetItem(ctx, tenantScope(t, b, "GetItem"), &wire.GetItemInput{TableName: "silo_t", Key: attr.Item{"pk": sval("b0")}})
		if err == nil && out.Item == nil {
			t.Error("tenant B lost its item")
		}
		return err
	})
	select {
	case err := <-aDone:
		t.Fatalf("tenant A's write returned before its store was open: %v", err)
	default:
	}

	release()
	for range 2 {
		if err := <-aDone; err != nil {
			t.Fatalf("tenant A's write: %v", err)
		}
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("tenant A's store was opened %d times, want 1", n)
	}
	for _, k := range []string{"a0", "a1"} {
		out, err := e.GetItem(ctx, tenantScope(t, a, "GetItem"), &wire.GetItemInput{TableName: "silo_t", Key: attr.Item{"pk": sval(k)}})
		if err != nil || out.Item == nil {
			t.Errorf("tenant A's item %s: %v, %v", k, out, err)
		}
	}
}

// TestDropTenantWaitsForSiloOpen: a tenant dropped while one of its silo
// stores is being opened ends with that store closed and its directory
// gone, and the request that opened it writes nothing.
func TestDropTenantWaitsForSiloOpen(t *testing.T) {
	e, siloDir := siloTestEngine(t)
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	a := tenancy.NewTenantID()
	entered, release, _ := slowSiloOpens(t, e)

	ctx := context.Background()
	putDone := make(chan error, 1)
	go func() {
		_, err := e.PutItem(ctx, tenantScope(t, a, "PutItem"), &wire.PutItemInput{TableName: "silo_t", Item: attr.Item{"pk": sval("k")}})
		putDone <- err
	}()
	<-entered
	dropDone := make(chan error, 1)
	go func() { dropDone <- e.DropTenant(ctx, tenancy.SystemScope(a, "test")) }()
	select {
	case err := <-dropDone:
		t.Fatalf("DropTenant returned while the tenant's store was still opening: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-dropDone; err != nil {
		t.Fatalf("DropTenant: %v", err)
	}
	if err := <-putDone; err == nil {
		t.Error("the dropped tenant's write succeeded")
	}
	e.mu.RLock()
	if e.silos[a] != nil {
		t.Errorf("silo store of the dropped tenant is still open")
	}
	e.mu.RUnlock()
	if _, err := os.Stat(filepath.Join(siloDir, a.String())); !os.IsNotExist(err) {
		t.Errorf("silo dir of the dropped tenant still there (stat err %v)", err)
	}
}

// TestSiloOpenPanicEndsTheOpen: a panic in a silo store's open (which the
// server recovers, carrying on with other requests) must end that open,
// so that the next request retries it, and the tenant's drop and the
// engine's Close do not wait for it forever.
func TestSiloOpenPanicEndsTheOpen(t *testing.T) {
	e, _ := siloTestEngine(t)
	t.Cleanup(func() { // NB: before Close: without the fix the open never ends
		e.mu.Lock()
		for k, s := range e.silos {
			if s.state == siloOpening {
				delete(e.silos, k)
				s.err = errors.New("open never ended")
				close(s.done)
			}
		}
		e.mu.Unlock()
	})
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	a := tenancy.NewTenantID()
	var calls atomic.Int32
	e.openStore = func(dir string, o storage.Options) (*storage.DB, error) {
		if calls.Add(1) == 1 {
			panic("pebble: invariant violated")
		}
		return storage.Open(dir, o)
	}
	ctx := context.Background()
	put := func(k string) error {
		_, err := e.PutItem(ctx, tenantScope(t, a, "PutItem"), &wire.PutItemInput{TableName: "silo_t", Item: attr.Item{"pk": sval(k)}})
		return err
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the open did not panic")
			}
		}()
		put("k0")
	}()
	within(t, 10*time.Second, "a write after a panicked open", func() error { return put("k1") })
	within(t, 10*time.Second, "DropTenant after a panicked open", func() error { return e.DropTenant(ctx, tenancy.SystemScope(a, "test")) })
}

// TestBackgroundWorkDoesNotRecreateDroppedSilo: TTL expiry and index
// backfill resolve a table, then open its stores namespace by namespace.
// If the table is deleted in between, they must not write its data again,
// nor create a silo store for a tenant that has none.
func TestBackgroundWorkDoesNotRecreateDroppedSilo(t *testing.T) {
	e, siloDir := siloTestEngine(t)
	tbl := createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	putItems(t, e, tenantScope(t, a, "PutItem"), "silo_t", attr.Item{"pk": sval("k")})
	dir := filepath.Join(siloDir, a.String(), siloStoreName)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("tenant's silo store missing before the drop: %v", err)
	}

	stale := tbl // what a TTL pass or a backfill resolved before the drop
	op := admit(t, operatorPrincipal(), "DeleteTable")
	if _, err := e.DeleteTable(context.Background(), op, &wire.DeleteTableInput{TableName: "silo_t"}); err != nil {
		t.Fatalf("DeleteTable: %v", err)
	}

	ns := resolve.Namespace(tenantScope(t, a, "PutItem"))
	budget := 100
	if _, err := e.expire(stale, ns, time.Now(), nil, &budget); err != nil {
		t.Errorf("TTL expiry on the dropped table: %v", err)
	}
	db, release, err := e.backgroundStore(b, stale)
	release()
	if db != nil || err != nil {
		t.Errorf("backgroundStore of the dropped table for a tenant without a store = %v, %v; want nil, nil", db, err)
	}
	if _, err := os.Stat(filepath.Join(siloDir, b.String())); !os.IsNotExist(err) {
		t.Errorf("background work created a silo store for a tenant without one (stat: %v)", err)
	}
	sdb, release, err := e.siloStoreOf(context.Background(), a)
	if err != nil || sdb == nil {
		t.Fatalf("tenant's store: %v", err)
	}
	defer release()
	p := keyspace.Items(ns, stale.ID)
	it := sdb.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	if it.First() {
		t.Errorf("the dropped table's item %q is in the tenant's store", it.Key())
	}
}
