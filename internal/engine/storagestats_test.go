package engine

import (
	"context"
	"log/slog"
	"testing"

	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// A silo store closed while a usage report reads it (its table or tenant
// is being dropped) counts for nothing; it does not fail the report.
func TestTenantStorageSkipsClosedSilo(t *testing.T) {
	open := func(name string) *storage.DB {
		db, err := storage.Open(name, storage.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open("main")
	defer db.Close()
	silo := open("silo")
	if err := silo.Close(); err != nil {
		t.Fatal(err)
	}
	silos := func(context.Context, tenancy.TenantID) (*storage.DB, releaser, error) {
		return silo, noRelease, nil
	}
	if _, err := tenantStorage(context.Background(), db, tenancy.NewTenantID(), silos, func(uint64) (bool, bool) { return false, false }); err != nil {
		t.Fatalf("TenantStorage with a closed silo store: %v", err)
	}
}
