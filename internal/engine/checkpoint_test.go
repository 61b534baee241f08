package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func diskEngine(t *testing.T, dir string, o Options) *Engine {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open(filepath.Join(dir, CheckpointMain), storage.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	o.Logger, o.TTLInterval, o.SiloDir = log, -1, filepath.Join(dir, CheckpointSilos)
	e, err := Open(db, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); db.Close() })
	return e
}

// TestCheckpoint copies the main store, an open silo store and a closed
// one under a writer that alternates between a pool table and tenant A's
// silo table: an engine opened on the copy has every item of the stores,
// and the writer's items form a prefix of its sequence across the main
// store and the silo store (one moment).
func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	keys, err := tenantkey.Open(tenantkey.Options{KEK: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	e := diskEngine(t, dir, Options{MaxOpenSilos: 1, Keys: keys})
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	createShared(t, e, "pool_t", "pk:S", "", nil)
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	putItems(t, e, tenantScope(t, b, "PutItem"), "silo_t", attr.Item{"pk": sval("b0")})
	putItems(t, e, tenantScope(t, a, "PutItem"), "silo_t", attr.Item{"pk": sval("a0")}) // B's store is evicted
	e.mu.RLock()
	_, bOpen := e.silos[b]
	e.mu.RUnlock()

	ctx := context.Background()
	tbl := func(i int) string { return []string{"pool_t", "silo_t"}[i%2] }
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.PutItem(ctx, tenantScope(t, a, "PutItem"), &wire.PutItemInput{TableName: tbl(i), Item: attr.Item{"pk": sval(fmt.Sprintf("w%06d", i))}}); err != nil {
				t.Error(err)
				return
			}
			acked.Store(int64(i + 1))
		}
	}()
	for acked.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	cp := filepath.Join(t.TempDir(), "cp")
	before := acked.Load()
	st, err := e.Checkpoint(cp, func(do func() error) error { return do() })
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if st.Open != 1 || st.Closed+st.Open != 2 {
		t.Errorf("checkpoint copied %+v; want A's store open and B's (open: %v) closed", st, bOpen)
	}

	c := diskEngine(t, cp, Options{Keys: keys})
	get := func(s tenancy.TenantID, table, k string) bool {
		out, err := c.GetItem(ctx, tenantScope(t, s, "GetItem"), &wire.GetItemInput{TableName: table, Key: attr.Item{"pk": sval(k)}})
		if err != nil {
			t.Fatalf("GetItem %s %s: %v", table, k, err)
		}
		return out.Item != nil
	}
	if !get(b, "silo_t", "b0") || !get(a, "silo_t", "a0") {
		t.Fatal("the copy lacks an item written before it")
	}
	n := int(acked.Load())
	k := 0
	for k < n && get(a, tbl(k), fmt.Sprintf("w%06d", k)) {
		k++
	}
	for i := k; i < n; i++ {
		if get(a, tbl(i), fmt.Sprintf("w%06d", i)) {
			t.Fatalf("the copy holds w%06d (%s) but not w%06d (%s): not one moment", i, tbl(i), k, tbl(k))
		}
	}
	if int64(k) < before {
		t.Fatalf("the copy holds %d of the writer's items; %d were acknowledged before it", k, before)
	}
	// The source keeps serving B, whose store the checkpoint held closed.
	putItems(t, e, tenantScope(t, b, "PutItem"), "silo_t", attr.Item{"pk": sval("b1")})
}

// TestCheckpointNoOpenSilo: with every silo store closed, a checkpoint
// holds no write (the main store's copy is one moment by itself) and
// still copies the closed stores.
func TestCheckpointNoOpenSilo(t *testing.T) {
	dir := t.TempDir()
	keys, err := tenantkey.Open(tenantkey.Options{KEK: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	e := diskEngine(t, dir, Options{Keys: keys, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	createShared(t, e, "silo_t", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	createShared(t, e, "pool_t", "pk:S", "", nil)
	a := tenancy.NewTenantID()
	putItems(t, e, tenantScope(t, a, "PutItem"), "silo_t", attr.Item{"pk": sval("a0")})
	putItems(t, e, tenantScope(t, a, "PutItem"), "pool_t", attr.Item{"pk": sval("p0")})
	now.Add(int64(time.Hour))
	e.evictIdle()
	e.mu.RLock()
	n := len(e.silos)
	e.mu.RUnlock()
	if n != 0 {
		t.Fatalf("%d silo stores open after eviction", n)
	}
	cp := filepath.Join(t.TempDir(), "cp")
	st, err := e.Checkpoint(cp, func(do func() error) error { return do() })
	if err != nil {
		t.Fatal(err)
	}
	if st.Held != 0 || st.Closed != 1 || st.Open != 0 {
		t.Errorf("checkpoint = %+v; want A's store copied closed and no write held", st)
	}
	c := diskEngine(t, cp, Options{Keys: keys})
	for tbl, k := range map[string]string{"silo_t": "a0", "pool_t": "p0"} {
		out, err := c.GetItem(context.Background(), tenantScope(t, a, "GetItem"), &wire.GetItemInput{TableName: tbl, Key: attr.Item{"pk": sval(k)}})
		if err != nil || out.Item == nil {
			t.Errorf("the copy's %s item %s: %v, %v", tbl, k, out, err)
		}
	}
	// The store opens again after the checkpoint.
	putItems(t, e, tenantScope(t, a, "PutItem"), "silo_t", attr.Item{"pk": sval("a1")})
}
