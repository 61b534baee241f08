package transfer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// clock is a settable time shared by two "gateways".
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func twoGateways(t *testing.T) (a, b *kvRecords, c *clock, st *kv.Local) {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st = kv.NewLocal(db)
	c = &clock{t: time.Unix(1_800_000_000, 0)}
	mk := func(owner string) *kvRecords {
		// NB: a lease of an hour: the beat (every 20 min) never runs
		// during the test; the clock says when a lease lapsed.
		return &kvRecords{st: st, owner: owner, lease: time.Hour, now: c.now, log: slog.New(slog.DiscardHandler), running: map[string]bool{}}
	}
	return mk("gw-a"), mk("gw-b"), c, st
}

// A job whose runner stops renewing its lease is claimed by exactly one
// other gateway once the lease lapses, not before; the first runner's
// next write then fails and its hold is lost; the claimer's end removes
// the registry entry.
func TestKVRecordsClaimLapsedLease(t *testing.T) {
	ctx := context.Background()
	a, b, c, st := twoGateways(t)
	tenant, _ := tenancy.ParseTenantID("0123456789abcdef0123456789abcdef")
	ref := jobRef{t: tenant, env: "prod", kind: importsDir, id: "01800000000000-0000abcd"}
	d := &wire.ImportTableDescription{ImportArn: "arn:x/import/" + ref.id, ImportStatus: "IN_PROGRESS"}
	h, err := a.create(ctx, ref, jobScope{KeyID: "k1", Role: "admin"}, d)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.interrupted(ctx); err != nil || len(got) != 0 {
		t.Fatalf("claimed while the lease holds: %v %v", got, err)
	}
	c.add(time.Hour + time.Second)
	got, err := b.interrupted(ctx)
	if err != nil || len(got) != 1 || !got[0].ok || got[0].js.KeyID != "k1" || got[0].ref != ref {
		t.Fatalf("after the lease lapsed: %+v %v", got, err)
	}
	if again, err := a.interrupted(ctx); err != nil || len(again) != 0 {
		t.Fatalf("claimed twice: %+v %v", again, err)
	}
	d.ImportedItemCount = 500
	if err := h.save(d); !errors.Is(err, errLost) {
		t.Fatalf("the first runner's save after the claim: %v", err)
	}
	select {
	case <-h.lost():
	default:
		t.Fatal("the first runner's hold is not lost")
	}
	if err := got[0].hold.end(&wire.ImportTableDescription{ImportArn: d.ImportArn, ImportStatus: "FAILED"}); err != nil {
		t.Fatal(err)
	}
	var back wire.ImportTableDescription
	if ok, err := b.load(ctx, ref, &back); !ok || err != nil || back.ImportStatus != "FAILED" || back.ImportedItemCount != 0 {
		t.Fatalf("the record: %+v %v %v", back, ok, err)
	}
	lo, hi := keyspace.TransfersRunning()
	n := 0
	st.Scan(ctx, lo, hi, func(k, v []byte) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d registry entries left after the end", n)
	}
	if ids, err := a.ids(ctx, tenant, "prod", importsDir); err != nil || len(ids) != 1 || ids[0] != ref.id {
		t.Fatalf("ids: %v %v", ids, err)
	}
	if ids, err := a.ids(ctx, tenant, "other", importsDir); err != nil || len(ids) != 0 {
		t.Fatalf("ids of another environment: %v %v", ids, err)
	}
}

// A stopped runner (shutdown) releases its lease at once: another
// gateway claims the job without waiting. removeTenant removes the
// records and the registry.
func TestKVRecordsStopReleases(t *testing.T) {
	ctx := context.Background()
	a, b, _, st := twoGateways(t)
	tenant, _ := tenancy.ParseTenantID("0123456789abcdef0123456789abcdef")
	ref := jobRef{t: tenant, env: "prod", kind: exportsDir, id: "01800000000000-0000abcd"}
	h, err := a.create(ctx, ref, jobScope{KeyID: "k1", Role: "admin"}, &wire.ExportDescription{ExportStatus: "IN_PROGRESS"})
	if err != nil {
		t.Fatal(err)
	}
	h.stop()
	got, err := b.interrupted(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("after a stop: %+v %v", got, err)
	}
	got[0].hold.stop()
	if err := b.removeTenant(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2][]byte{pair(keyspace.TenantTransferJobs(tenant)), pair(keyspace.TransfersRunning())} {
		n := 0
		st.Scan(ctx, r[0], r[1], func(k, v []byte) bool { n++; return true })
		if n != 0 {
			t.Fatalf("%d keys left after removeTenant", n)
		}
	}
}
