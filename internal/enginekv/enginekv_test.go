package enginekv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tenantdb/tenantdb/internal/enginekv"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// open returns two Stores, as two gateways have, over a fresh engine
// table of a stand-in engine (a tenantdb reached through the DynamoDB
// API only).
func open(t *testing.T) (*enginekv.Store, *enginekv.Store) {
	t.Helper()
	table, client := harness.EngineTable(t)
	return enginekv.New(client(), table, nil), enginekv.New(client(), table, nil)
}

func TestConditionsAndRanges(t *testing.T) {
	s1, s2 := open(t)
	ctx := context.Background()
	ten := tenancy.NewTenantID()
	k1, k2 := keyspace.Credential(ten, "a"), keyspace.Credential(ten, "b")
	apply := func(s *enginekv.Store, fill func(*kv.Batch)) error {
		var b kv.Batch
		fill(&b)
		return s.Apply(ctx, &b)
	}
	if err := apply(s1, func(b *kv.Batch) { b.SetIfAbsent(k1, []byte("one")) }); err != nil {
		t.Fatal(err)
	}
	if err := apply(s2, func(b *kv.Batch) { b.SetIfAbsent(k1, []byte("two")) }); !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("second SetIfAbsent: %v, want ErrConflict", err)
	}
	// A transaction: one condition fails, nothing is written.
	err := apply(s2, func(b *kv.Batch) {
		b.SetIfAbsent(k2, []byte("x"))
		b.SetIfEquals(k1, []byte("stale"), []byte("three"))
	})
	if !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("transaction with a stale condition: %v", err)
	}
	if _, err := s1.Get(ctx, k2); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("a cancelled transaction wrote k2: %v", err)
	}
	if err := apply(s2, func(b *kv.Batch) {
		b.SetIfAbsent(k2, nil) // empty values are stored too
		b.SetIfEquals(k1, []byte("one"), []byte("three"))
	}); err != nil {
		t.Fatal(err)
	}
	if v, err := s1.Get(ctx, k1); err != nil || string(v) != "three" {
		t.Fatalf("k1 = %q, %v", v, err)
	}
	if v, err := s1.Get(ctx, k2); err != nil || len(v) != 0 {
		t.Fatalf("k2 = %q, %v", v, err)
	}

	// Counters: concurrent ADDs from two stores add up.
	ck := keyspace.Usage(ten, 1, "c")
	var wg sync.WaitGroup
	for _, s := range []*enginekv.Store{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if err := apply(s, func(b *kv.Batch) { b.Add(ck, 3) }); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	v, err := s1.Get(ctx, ck)
	if n, derr := kv.DecodeCounter(v); err != nil || derr != nil || n != 60 {
		t.Fatalf("counter = %d (%v %v), want 60", n, err, derr)
	}

	// Ranges: a tenant's credentials, and its whole range up to the next
	// partition; another tenant's records are never read.
	other := tenancy.NewTenantID()
	if err := apply(s1, func(b *kv.Batch) { b.Set(keyspace.Credential(other, "a"), []byte("other")) }); err != nil {
		t.Fatal(err)
	}
	var got []string
	lo, hi := keyspace.Credentials(ten)
	if err := s2.Scan(ctx, lo, hi, func(k, v []byte) bool { got = append(got, string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[three ]" {
		t.Fatalf("credentials scan = %q", got)
	}
	got = nil
	lo, hi = keyspace.TenantRange(ten)
	if err := s2.Scan(ctx, lo, hi, func(k, v []byte) bool { got = append(got, string(k)); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("tenant range holds %d records, want 3", len(got))
	}
	// DeleteRange removes the tenant's records, not the other's.
	if err := apply(s1, func(b *kv.Batch) { b.DeleteRange(lo, hi) }); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s2.Scan(ctx, lo, hi, func(k, v []byte) bool { n++; return true }); err != nil || n != 0 {
		t.Fatalf("after DeleteRange: %d records, %v", n, err)
	}
	if v, err := s2.Get(ctx, keyspace.Credential(other, "a")); err != nil || string(v) != "other" {
		t.Fatalf("the other tenant's record: %q, %v", v, err)
	}
}

// TestSlugRaceInEngine: many writers race for one key; exactly one wins.
func TestSlugRaceInEngine(t *testing.T) {
	s1, s2 := open(t)
	ctx := context.Background()
	for round := range 5 {
		k := keyspace.TenantSlug(fmt.Sprintf("slug-%d", round))
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range 8 {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b kv.Batch
				b.SetIfAbsent(k, []byte{byte(i)})
				b.SetIfAbsent(append(keyspace.TenantRecord(tenancy.NewTenantID()), byte(i)), []byte("rec"))
				err := s.Apply(ctx, &b)
				if err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				} else if !errors.Is(err, kv.ErrConflict) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("round %d: %d winners", round, won)
		}
	}
}
