package changelog

import (
	"reflect"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// sameMap reports whether a and b (maps) are one map.
func sameMap(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }

// TestFollowDecodesOnceForAllReaders: two readers following the same
// records get equal entries from one decoding (the same images); a
// record whose stored bytes changed (re-sealed under a new key version)
// is decoded afresh; a destroyed tenant key fails the read although the
// record was decoded before, and drops it from the cache.
func TestFollowDecodesOnceForAllReaders(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(t, "")
	kr, err := tenantkey.Open(tenantkey.Options{KEK: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	l := newLog(t, db, c, func(o *Options) { o.Keys = kr })
	ns := tenantNS(7, "live")
	other := tenantNS(8, "live")
	s, _ := l.CreateStream(1, NewAndOldImage, "tbl", nil, nil)
	for _, v := range []string{"1", "2", "3"} {
		commit(t, l, db, ns, s, Change{Keys: key("a"), Old: item("a", "0"), New: item("a", v)})
		commit(t, l, db, other, s, Change{Keys: key("a"), New: item("a", v)})
	}
	first, err := l.Follow(db, ns, 1, Cursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	second, err := l.Follow(db, ns, 1, Cursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Entries) != 3 || !reflect.DeepEqual(first.Entries, second.Entries) {
		t.Fatalf("two reads of the same records differ:\n%v\n%v", first.Entries, second.Entries)
	}
	for i := range first.Entries {
		a, b := first.Entries[i], second.Entries[i]
		if !sameMap(a.New, b.New) || !sameMap(a.Old, b.Old) {
			t.Errorf("entry %d was decoded twice", i)
		}
	}

	// Re-sealed under a new key version: other bytes, decoded again.
	var id tenancy.TenantID
	id[0], id[15] = 0x40, 7
	if _, err := kr.StartRotation(id, c.now()); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Reseal(db, ns); err != nil || n == 0 {
		t.Fatalf("Reseal: %d records, %v", n, err)
	}
	third, err := l.Follow(db, ns, 1, Cursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first.Entries, third.Entries) {
		t.Fatalf("after re-sealing: %v, want %v", third.Entries, first.Entries)
	}
	if sameMap(first.Entries[0].New, third.Entries[0].New) {
		t.Error("a re-sealed record was served from what its old bytes decoded to")
	}

	// The key destroyed: the cached records are unreadable and gone.
	if err := kr.Destroy(id); err != nil {
		t.Fatal(err)
	}
	if pg, err := l.Follow(db, ns, 1, Cursor{}, 10); err == nil {
		t.Fatalf("read %d records of a tenant whose key was destroyed", len(pg.Entries))
	}
	l.decoded.mu.Lock()
	for k := range l.decoded.m {
		if len(k) > len(ns) && k[:len(ns)] == string(ns) {
			t.Errorf("a record of the destroyed tenant is still cached")
		}
	}
	l.decoded.mu.Unlock()
	// The other tenant's records are unaffected.
	if pg, err := l.Follow(db, other, 1, Cursor{}, 10); err != nil || len(pg.Entries) != 3 {
		t.Fatalf("other tenant: %d records, %v", len(pg.Entries), err)
	}
}
