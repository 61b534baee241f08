package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

func openDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func fill(t *testing.T, l *Log, ten tenancy.TenantID, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(context.Background(), sys(ten), Event{Actor: "sk_live_x", Action: fmt.Sprintf("act.%d", i), Target: "t"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendVerifyQuery(t *testing.T) {
	db := openDB(t)
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := Open(kv.NewLocal(db), Options{Now: clk.now})
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	fill(t, l, a, 50)
	fill(t, l, b, 3)

	for _, ten := range []tenancy.TenantID{a, b} {
		if _, err := l.Verify(context.Background(), sys(ten)); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	// A fresh Log (restart) continues the chain.
	l2 := Open(kv.NewLocal(db), Options{Now: clk.now, Keys: l.keys}) // the same data keys
	fill(t, l2, a, 5)
	n, err := l2.Verify(context.Background(), sys(a))
	if err != nil || n != 55 {
		t.Fatalf("Verify after restart = %d, %v; want 55, nil", n, err)
	}

	all, err := l2.Query(context.Background(), sys(a), time.Time{}, time.Time{}, 0, 1000)
	if err != nil || len(all) != 55 {
		t.Fatalf("Query all: %d records, %v", len(all), err)
	}
	for i, r := range all {
		if r.Seq != uint64(i+1) || r.Hash == "" {
			t.Fatalf("record %d: seq %d hash %q", i, r.Seq, r.Hash)
		}
		if i > 0 && r.Prev != all[i-1].Hash {
			t.Fatalf("record %d: prev %s, want %s", i, r.Prev, all[i-1].Hash)
		}
	}
	// A time window: records 10..19 (times are 1 s apart).
	from, to := all[9].Time, all[19].Time
	got, err := l2.Query(context.Background(), sys(a), from, to, 0, 100)
	if err != nil || len(got) != 10 || got[0].Seq != 10 || got[9].Seq != 19 {
		t.Fatalf("Query window: %d records (first %v), %v", len(got), got, err)
	}
	// Paging with after.
	got, err = l2.Query(context.Background(), sys(a), time.Time{}, time.Time{}, 50, 3)
	if err != nil || len(got) != 3 || got[0].Seq != 51 {
		t.Fatalf("Query after=50 limit=3: %v, %v", got, err)
	}
	// Tenant b's log is its own.
	got, _ = l2.Query(context.Background(), sys(b), time.Time{}, time.Time{}, 0, 100)
	if len(got) != 3 {
		t.Fatalf("tenant b: %d records, want 3", len(got))
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	ctx := context.Background()
	ten := tenancy.NewTenantID()
	setup := func(t *testing.T) (*storage.DB, *Log) {
		db := openDB(t)
		l := Open(kv.NewLocal(db), Options{})
		fill(t, l, ten, 10)
		if _, err := l.Verify(ctx, sys(ten)); err != nil {
			t.Fatal(err)
		}
		return db, l
	}
	set := func(t *testing.T, db *storage.DB, k, v []byte) {
		b := db.NewBatch()
		defer b.Close()
		if v == nil {
			b.Delete(k)
		} else {
			b.Set(k, v)
		}
		if err := db.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	// Flip every byte of record 5, one at a time.
	db, l := setup(t)
	orig, err := db.Get(keyspace.Audit(ten, 5))
	if err != nil {
		t.Fatal(err)
	}
	for i := range orig {
		v := append([]byte(nil), orig...)
		v[i] ^= 0x01
		set(t, db, keyspace.Audit(ten, 5), v)
		if _, err := l.Verify(ctx, sys(ten)); !errors.Is(err, ErrTampered) {
			t.Fatalf("byte %d flipped: Verify = %v, want ErrTampered", i, err)
		}
	}
	set(t, db, keyspace.Audit(ten, 5), orig)
	if _, err := l.Verify(ctx, sys(ten)); err != nil {
		t.Fatalf("restored: %v", err)
	}

	cases := map[string]func(t *testing.T, db *storage.DB){
		"delete middle": func(t *testing.T, db *storage.DB) { set(t, db, keyspace.Audit(ten, 4), nil) },
		"truncate tail": func(t *testing.T, db *storage.DB) { set(t, db, keyspace.Audit(ten, 10), nil) },
		"swap records": func(t *testing.T, db *storage.DB) {
			a, _ := db.Get(keyspace.Audit(ten, 2))
			b, _ := db.Get(keyspace.Audit(ten, 3))
			set(t, db, keyspace.Audit(ten, 2), b)
			set(t, db, keyspace.Audit(ten, 3), a)
		},
		"delete head": func(t *testing.T, db *storage.DB) { set(t, db, keyspace.AuditHead(ten), nil) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			db, l := setup(t)
			f(t, db)
			if _, err := l.Verify(ctx, sys(ten)); !errors.Is(err, ErrTampered) {
				t.Fatalf("Verify = %v, want ErrTampered", err)
			}
		})
	}
}

func TestConcurrentAppends(t *testing.T) {
	db := openDB(t)
	l := Open(kv.NewLocal(db), Options{})
	ten := tenancy.NewTenantID()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				l.Denied(WithSource(context.Background(), "127.0.0.1:1"), tenancy.Principal{Tenant: ten, KeyID: "k", Role: tenancy.RoleApp}, "dynamodb:GetItem", fmt.Sprintf("g%d i%d", g, i))
			}
		}()
	}
	wg.Wait()
	rs, _ := l.Query(context.Background(), sys(ten), time.Time{}, time.Time{}, 0, 1000)
	if rs[0].Outcome != OutcomeDenied || rs[0].Source != "127.0.0.1:1" {
		t.Fatalf("record = %+v", rs[0])
	}
	var attempts int64
	for _, r := range rs {
		attempts += DeniedAttempts(r)
	}
	n, err := l.Verify(context.Background(), sys(ten))
	if err != nil || n != uint64(len(rs)) || attempts != 160 {
		t.Fatalf("Verify = %d, %v; %d records account for %d attempts, want 160", n, err, len(rs), attempts)
	}
}

// sys is a scope for tenant t, as the admin plane's guard would admit one.
func sys(t tenancy.TenantID) tenancy.Scope { return tenancy.SystemScope(t, "test") }

// TestRecordsSealed: a tenant's record details are not stored in
// plaintext, and a record copied into another tenant's log does not open
// there.
func TestRecordsSealed(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := Open(kv.NewLocal(db), Options{})
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	const marker = "marker-7f3a9c-audit-detail"
	for _, ten := range []tenancy.TenantID{a, b} {
		if _, err := l.Append(ctx, sys(ten), Event{Actor: "k", Action: "key.create", Target: marker}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := db.Get(keyspace.Audit(a, 1))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(v, []byte(marker)) {
		t.Fatalf("tenant record stored in plaintext: %q", v)
	}
	b1 := db.NewBatch()
	b1.Set(keyspace.Audit(b, 1), v) // A's record in B's log
	if err := db.Apply(b1); err != nil {
		t.Fatal(err)
	}
	b1.Close()
	if _, err := l.Query(ctx, sys(b), time.Time{}, time.Time{}, 0, 10); !errors.Is(err, tenantkey.ErrUnreadable) {
		t.Fatalf("A's record read in B's log: err %v, want ErrUnreadable", err)
	}
	got, err := l.Query(ctx, sys(a), time.Time{}, time.Time{}, 0, 10)
	if err != nil || len(got) != 1 || got[0].Target != marker {
		t.Fatalf("A's own record: %v, %v", got, err)
	}
}
