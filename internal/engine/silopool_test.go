package engine

import (
	"context"
	"fmt"
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
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// boundedSiloEngine is an engine whose silo stores live on disk under a
// bound of max open stores; opens counts the stores it opened.
func boundedSiloEngine(t *testing.T, max int) (*Engine, string, *atomic.Int32) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open("mem", storage.Options{InMemory: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	siloDir := t.TempDir()
	e, err := Open(db, Options{Logger: log, TTLInterval: -1, SiloDir: siloDir, MaxOpenSilos: max})
	if err != nil {
		t.Fatal(err)
	}
	opens := new(atomic.Int32)
	e.openStore = func(dir string, o storage.Options) (*storage.DB, error) {
		opens.Add(1)
		return storage.Open(dir, o)
	}
	t.Cleanup(func() { e.Close(); db.Close() })
	return e, siloDir, opens
}

// checkBound fails the test if more stores are open than the bound while
// some open store is idle (the bound may be exceeded only while every
// open store is in use).
func checkBound(t *testing.T, e *Engine) {
	t.Helper()
	e.mu.RLock()
	open, idle := len(e.silos)-e.nclosing, e.idle.Len()
	e.mu.RUnlock()
	if open > e.opts.MaxOpenSilos && idle > 0 {
		t.Errorf("%d silo stores open (bound %d) while %d are idle", open, e.opts.MaxOpenSilos, idle)
	}
}

// TestSiloEvictionUnderLoad: 50 tenants write and read two silo tables
// each (one store per tenant, shared by both tables) concurrently under a
// bound of 4 open stores: stores are closed and reopened all the time,
// never while in use, every write is read back, and the bound holds
// whenever a store is idle.
func TestSiloEvictionUnderLoad(t *testing.T) {
	e, siloDir, opens := boundedSiloEngine(t, 4)
	createShared(t, e, "silo_a", "pk:S", "sk:N", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	createShared(t, e, "silo_b", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	const tenants, rounds = 50, 8
	ids := make([]tenancy.TenantID, tenants)
	for i := range ids {
		ids[i] = tenancy.NewTenantID()
	}
	stop := make(chan struct{})
	var monitor sync.WaitGroup
	monitor.Add(1)
	go func() {
		defer monitor.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			checkBound(t, e)
			time.Sleep(100 * time.Microsecond)
		}
	}()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, tenants)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := func() error {
				for r := range rounds {
					put := tenantScope(t, id, "PutItem")
					if _, err := e.PutItem(ctx, put, &wire.PutItemInput{TableName: "silo_a",
						Item: attr.Item{"pk": sval("p"), "sk": nval(fmt.Sprint(r)), "v": sval(fmt.Sprintf("%d.%d", i, r))}}); err != nil {
						return fmt.Errorf("put a: %w", err)
					}
					if _, err := e.PutItem(ctx, put, &wire.PutItemInput{TableName: "silo_b",
						Item: attr.Item{"pk": sval(fmt.Sprint(r)), "v": sval(fmt.Sprintf("%d.%d", i, r))}}); err != nil {
						return fmt.Errorf("put b: %w", err)
					}
					out, err := e.GetItem(ctx, tenantScope(t, id, "GetItem"), &wire.GetItemInput{TableName: "silo_b", Key: attr.Item{"pk": sval(fmt.Sprint(r))}})
					if err != nil {
						return fmt.Errorf("get: %w", err)
					}
					if got, want := out.Item["v"].S, fmt.Sprintf("%d.%d", i, r); got != want {
						return fmt.Errorf("tenant %d reads %q, want %q", i, got, want)
					}
					q, err := runQuery(t, e, tenantScope(t, id, "Query"), &wire.QueryInput{TableName: "silo_a",
						KeyConditionExpression: strPtr("pk = :p"), ExpressionAttributeValues: exprVals(":p", sval("p"))})
					if err != nil {
						return fmt.Errorf("query: %w", err)
					}
					if len(q.Items) != r+1 {
						return fmt.Errorf("tenant %d queries %d items after %d writes", i, len(q.Items), r+1)
					}
					for _, it := range q.Items {
						if v := it["v"].S; v != fmt.Sprintf("%d.%s", i, it["sk"].N) {
							return fmt.Errorf("tenant %d reads another's item %q", i, v)
						}
					}
				}
				return nil
			}()
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(stop)
	monitor.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if open, inUse := e.OpenSilos(); open > 4 || inUse != 0 {
		t.Errorf("after the load: %d stores open, %d in use; want at most 4, 0", open, inUse)
	}
	if n := opens.Load(); n <= tenants {
		t.Errorf("%d store opens for %d tenants: nothing was evicted and reopened", n, tenants)
	}
	ents, err := os.ReadDir(filepath.Join(siloDir, ids[0].String()))
	if err != nil || len(ents) != 1 || ents[0].Name() != siloStoreName {
		t.Errorf("tenant's silo directory holds %v (%v), want one store shared by its tables", ents, err)
	}
	// Every tenant's data survived its evictions.
	for i, id := range ids {
		for r := range rounds {
			out, err := e.GetItem(ctx, tenantScope(t, id, "GetItem"), &wire.GetItemInput{TableName: "silo_a",
				Key: attr.Item{"pk": sval("p"), "sk": nval(fmt.Sprint(r))}})
			if err != nil || out.Item == nil || out.Item["v"].S != fmt.Sprintf("%d.%d", i, r) {
				t.Fatalf("tenant %d item %d after the load: %v, %v", i, r, out, err)
			}
		}
	}
}

// TestSiloNotClosedUnderAnIterator: a store whose handle is held (as a
// request holds it while it iterates) is not evicted however many other
// tenants' stores open, and its iterator keeps working; released, it is
// evicted and reopens transparently.
func TestSiloNotClosedUnderAnIterator(t *testing.T) {
	e, _, _ := boundedSiloEngine(t, 2)
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	a := tenancy.NewTenantID()
	for i := range 10 {
		putItems(t, e, tenantScope(t, a, "PutItem"), "silo_t", attr.Item{"pk": sval(fmt.Sprint(i))})
	}
	ctx := context.Background()
	h, err := e.open(ctx, tenantScope(t, a, "Scan"), "silo_t")
	if err != nil {
		t.Fatal(err)
	}
	p := keyspace.Items(h.Namespace, h.Table.ID)
	it := h.db.NewIter(p, keyspace.PrefixEnd(p))
	if !it.First() {
		t.Fatalf("no first item: %v", it.Error())
	}
	for range 6 { // other tenants fill the bound many times over
		putItems(t, e, tenantScope(t, tenancy.NewTenantID(), "PutItem"), "silo_t", attr.Item{"pk": sval("x")})
		checkBound(t, e)
	}
	n := 1
	for it.Next() {
		n++
	}
	if err := it.Error(); err != nil || n != 10 {
		t.Fatalf("iterator over a held store: %d items, %v; want 10, nil", n, err)
	}
	it.Close()
	h.close()
	h.close() // idempotent
	if open, _ := e.OpenSilos(); open > 2 {
		t.Errorf("%d stores open after the holder released, want at most 2", open)
	}
	for range 3 {
		putItems(t, e, tenantScope(t, tenancy.NewTenantID(), "PutItem"), "silo_t", attr.Item{"pk": sval("y")})
	}
	e.mu.RLock()
	s := e.silos[a]
	stillOpen := s != nil && s.state != siloClosing
	e.mu.RUnlock()
	if stillOpen {
		t.Fatal("tenant A's store was not evicted")
	}
	q, err := runScan(t, e, tenantScope(t, a, "Scan"), &wire.ScanInput{TableName: "silo_t"})
	if err != nil || len(q.Items) != 10 {
		t.Fatalf("scan after reopen: %d items, %v", len(q.Items), err)
	}
}

// TestSiloIdleClose: a store nobody used for SiloIdle is closed by the
// background pass, and opens again on use.
func TestSiloIdleClose(t *testing.T) {
	e, _, opens := boundedSiloEngine(t, 100)
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	e.opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e.opts.SiloIdle = time.Minute
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	putItems(t, e, tenantScope(t, a, "PutItem"), "silo_t", attr.Item{"pk": sval("a")})
	mu.Lock()
	now = now.Add(50 * time.Second)
	mu.Unlock()
	putItems(t, e, tenantScope(t, b, "PutItem"), "silo_t", attr.Item{"pk": sval("b")})
	mu.Lock()
	now = now.Add(20 * time.Second)
	mu.Unlock()
	e.evictIdle()
	e.mu.RLock()
	_, aOpen := e.silos[a]
	_, bOpen := e.silos[b]
	e.mu.RUnlock()
	if aOpen || !bOpen {
		t.Fatalf("after an idle pass: A open %v (idle 70s), B open %v (idle 20s); want false, true", aOpen, bOpen)
	}
	before := opens.Load()
	out, err := e.GetItem(context.Background(), tenantScope(t, a, "GetItem"), &wire.GetItemInput{TableName: "silo_t", Key: attr.Item{"pk": sval("a")}})
	if err != nil || out.Item == nil {
		t.Fatalf("read after idle close: %v, %v", out, err)
	}
	if opens.Load() != before+1 {
		t.Errorf("the read did not reopen the store")
	}
}

// TestSiloStoreOfOtherTenantUnreachable: a tenant's handle on a silo
// table is always its own store, whatever the other tenants' stores.
func TestSiloStoreOfOtherTenantUnreachable(t *testing.T) {
	e, _, _ := boundedSiloEngine(t, 1)
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	putItems(t, e, tenantScope(t, a, "PutItem"), "silo_t", attr.Item{"pk": sval("secret")})
	ctx := context.Background()
	ha, err := e.open(ctx, tenantScope(t, a, "GetItem"), "silo_t")
	if err != nil {
		t.Fatal(err)
	}
	defer ha.close()
	hb, err := e.open(ctx, tenantScope(t, b, "GetItem"), "silo_t")
	if err != nil {
		t.Fatal(err)
	}
	defer hb.close()
	if ha.db == hb.db || hb.db == e.db {
		t.Fatal("tenant B's handle is not on a store of its own")
	}
	if got, _ := hb.getItem(attr.Item{"pk": sval("secret")}); got != nil {
		t.Fatal("tenant B reads tenant A's silo item")
	}
}
