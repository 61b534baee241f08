package tenantkey

import (
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// fleet opens n keyrings over one store, as n gateways over one engine.
func fleet(t *testing.T, n int, stale time.Duration) []*Keyring {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := kv.NewLocal(db)
	var out []*Keyring
	for range n {
		kr, err := Open(Options{KEK: testKEK(7), Store: st, MaxStale: stale})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, kr)
	}
	return out
}

// TestFleetRotationOneVersion: two gateways starting a rotation of one
// tenant at once make one new version between them (the key record is
// written on condition that it is what was read), so a value one seals
// under it opens on the other, which reads the key again on meeting a
// version it has not seen — however fresh its cached copy.
func TestFleetRotationOneVersion(t *testing.T) {
	krs := fleet(t, 2, time.Hour)
	a := tenancy.NewTenantID()
	if err := krs[0].Create(a); err != nil {
		t.Fatal(err)
	}
	k1 := key(t, krs[1], a) // cached at version 1 for an hour
	var wg sync.WaitGroup
	rs := make([]RotationInfo, 2)
	for i := range krs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := krs[i].StartRotation(a, time.Now())
			if err != nil {
				t.Error(err)
			}
			rs[i] = r
		}()
	}
	wg.Wait()
	if rs[0].To != 2 || rs[1].To != 2 {
		t.Fatalf("rotations %+v, want both to version 2", rs)
	}
	sealed, err := key(t, krs[0], a).Seal(nil, []byte("v"), []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k1.Open(nil, sealed, []byte("k")); err != nil || string(got) != "v" {
		t.Fatalf("a value sealed under the new version on one gateway, opened on the other: %q, %v", got, err)
	}
	if v := k1.Status().Version; v != 2 {
		t.Fatalf("the other gateway's cached key is at version %d after reading it again, want 2", v)
	}
}

// TestFleetClaim: one gateway at a time works on a rotation; another
// takes it over once the claim has not been renewed for the lease.
func TestFleetClaim(t *testing.T) {
	krs := fleet(t, 2, 0)
	a := tenancy.NewTenantID()
	if err := krs[0].Create(a); err != nil {
		t.Fatal(err)
	}
	if _, err := krs[0].StartRotation(a, time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if held, err := krs[0].Claim(a, "g1", now, 5*time.Second); err != nil || !held {
		t.Fatalf("first claim: %v, %v", held, err)
	}
	if held, err := krs[1].Claim(a, "g2", now.Add(time.Second), 5*time.Second); err != nil || held {
		t.Fatalf("claim of a rotation another gateway holds: %v, %v", held, err)
	}
	if held, err := krs[1].Claim(a, "g2", now.Add(6*time.Second), 5*time.Second); err != nil || !held {
		t.Fatalf("claim after the lease lapsed: %v, %v", held, err)
	}
	rs, err := krs[0].Rotations()
	if err != nil || rs[a].Owner != "g2" {
		t.Fatalf("rotations: %+v, %v", rs, err)
	}
	if ended, err := krs[0].FinishRotationTo(a, 2); err != nil || !ended {
		t.Fatalf("finish: %v, %v", ended, err)
	}
	if ended, err := krs[1].FinishRotationTo(a, 2); err != nil || ended {
		t.Fatalf("finishing it again: %v, %v (want not ended)", ended, err)
	}
	if rs, err := krs[1].Rotations(); err != nil || len(rs) != 0 {
		t.Fatalf("rotations after the end: %+v, %v (the mark must go with the rotation)", rs, err)
	}
}
