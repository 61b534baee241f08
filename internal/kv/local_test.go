package kv_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
)

func TestLocalConditions(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := kv.NewLocal(db)
	ctx := context.Background()
	apply := func(fill func(*kv.Batch)) error {
		var b kv.Batch
		fill(&b)
		return l.Apply(ctx, &b)
	}
	if err := apply(func(b *kv.Batch) { b.SetIfAbsent([]byte("a"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	for name, fill := range map[string]func(*kv.Batch){
		"absent on a present key": func(b *kv.Batch) { b.SetIfAbsent([]byte("a"), []byte("2")) },
		"equals a stale value":    func(b *kv.Batch) { b.SetIfEquals([]byte("a"), []byte("0"), []byte("2")) },
		"expect absent":           func(b *kv.Batch) { b.Set([]byte("b"), []byte("x")); b.Expect([]byte("a"), nil) },
		"delete if stale":         func(b *kv.Batch) { b.DeleteIfEquals([]byte("a"), []byte("0")) },
	} {
		if err := apply(fill); !errors.Is(err, kv.ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	if _, err := l.Get(ctx, []byte("b")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("a refused batch wrote b: %v", err)
	}
	if err := apply(func(b *kv.Batch) {
		b.SetIfEquals([]byte("a"), []byte("1"), []byte("2"))
		b.Add([]byte("n"), 5)
		b.Add([]byte("m"), -2)
	}); err != nil {
		t.Fatal(err)
	}
	if v, _ := l.Get(ctx, []byte("a")); string(v) != "2" {
		t.Fatalf("a = %q", v)
	}
	v, _ := l.Get(ctx, []byte("n"))
	if n, err := kv.DecodeCounter(v); err != nil || n != 5 {
		t.Fatalf("n = %d, %v", n, err)
	}
	var keys []string
	if err := l.Scan(ctx, []byte("a"), []byte("n"), func(k, _ []byte) bool { keys = append(keys, string(k)); return true }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != "a" || keys[1] != "m" {
		t.Fatalf("scan [a, n) = %q", keys)
	}
	if err := apply(func(b *kv.Batch) { b.DeleteRange([]byte("a"), []byte("z")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, []byte("n")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("after DeleteRange: %v", err)
	}
}
