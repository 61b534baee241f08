package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestSnapshotLogSyncsItsStore: SnapshotLog makes what its snapshot holds
// durable before it hands it out. A snapshot can hold a change whose
// writer has not seen its fsync yet (Pebble makes a batch visible before
// the WAL sync returns); the aggregate counts it and commits a synced
// rebuild. For a silo table that batch is in the main store while the
// change is in the tenant's silo store, so without a sync of the silo
// store a kill -9 could keep the rebuild and lose the change it counted.
func TestSnapshotLogSyncsItsStore(t *testing.T) {
	e, _, _ := boundedSiloEngine(t, 4)
	var mu sync.Mutex
	var silos []*storage.DB
	e.openStore = func(dir string, o storage.Options) (*storage.DB, error) {
		db, err := storage.Open(dir, o)
		mu.Lock()
		silos = append(silos, db)
		mu.Unlock()
		return db, err
	}
	createShared(t, e, "silo_s", "pk:S", "", nil, wire.Tag{Key: tenancy.TagIsolation, Value: "silo"})
	id := tenancy.NewTenantID()
	ctx := context.Background()
	sys := tenancy.SystemScopeIn(id, "live", "test")
	for i := range 3 {
		if _, err := e.PutItem(ctx, tenantScope(t, id, "PutItem"), &wire.PutItemInput{TableName: "silo_s",
			Item: attr.Item{"pk": sval(fmt.Sprint(i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.RetainLog(ctx, sys, "silo_s", "test:snap"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(silos) != 1 {
		t.Fatalf("%d silo stores opened, want 1", len(silos))
	}
	db := silos[0]
	mu.Unlock()
	syncs := func() uint64 {
		m, err := db.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		return m.WALSyncsTotal
	}
	before := syncs()
	n := 0
	if _, _, err := e.SnapshotLog(ctx, sys, "silo_s", func(attr.Item) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("the snapshot holds %d items, want 3", n)
	}
	// NB: Pebble may count an fsync in its metrics just after it wakes
	// the writer that waited for it, so the count is polled briefly; an
	// idle store syncs nothing else meanwhile.
	after := syncs()
	for deadline := time.Now().Add(2 * time.Second); after <= before && time.Now().Before(deadline); after = syncs() {
		time.Sleep(time.Millisecond)
	}
	if after <= before {
		t.Errorf("the silo store's WAL syncs went from %d to %d over SnapshotLog: its snapshot was handed out before it was durable", before, after)
	}
}
