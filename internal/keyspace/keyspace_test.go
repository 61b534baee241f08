package keyspace

import (
	"bytes"
	"testing"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

func within(k, lo, hi []byte) bool {
	return bytes.Compare(k, lo) >= 0 && (hi == nil || bytes.Compare(k, hi) < 0)
}

// TestTenantIsOneRange checks the layout's central promise: everything of a
// tenant (credentials, audit, usage, quotas, tables, items, index entries,
// counters, in every environment) lies in TenantRange, and nothing of
// another tenant does.
func TestTenantIsOneRange(t *testing.T) {
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	lo, hi := TenantRange(a)
	keysOf := func(id tenancy.TenantID) [][]byte {
		var ks [][]byte
		for _, env := range []string{"live", "test"} {
			ns := Namespace(id, env)
			ks = append(ks, TenantTable(ns, "t"), append(Items(ns, 7), 1, 2, 3), append(Index(ns, 7, 1), 9),
				Counter(ns, 7, 0, "n"))
		}
		return append(ks, TenantRecord(id), Credential(id, "key"), Audit(id, 5), Usage(id, 100, "r"), Quota(id, "t"))
	}
	for _, k := range keysOf(a) {
		if !within(k, lo, hi) {
			t.Errorf("key %x of tenant A outside its range", k)
		}
	}
	for _, k := range keysOf(b) {
		if within(k, lo, hi) {
			t.Errorf("key %x of tenant B inside A's range", k)
		}
	}
	// Environments are disjoint, even when one name prefixes another.
	l1, h1 := NamespaceRange(a, "test")
	if k := append(Items(Namespace(a, "test2"), 1), 0); within(k, l1, h1) {
		t.Error("namespace test2 overlaps namespace test")
	}
	for _, k := range [][]byte{System("seq/table"), SharedTable("x"), TenantSlug("acme")} {
		if within(k, lo, hi) {
			t.Errorf("server key %x inside a tenant range", k)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte("ab"), []byte("ac")}, {[]byte{1, 0xFF}, []byte{2}}, {[]byte{0xFF, 0xFF}, nil},
	} {
		if got := PrefixEnd(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", tc.in, got, tc.want)
		}
	}
}

func TestSegmentRangeCovers(t *testing.T) {
	for _, total := range []int{1, 2, 3, 7, 1000} {
		var next uint64
		for s := 0; s < total; s++ {
			lo, hi := SegmentRange(s, total)
			if lo != next || hi < lo {
				t.Fatalf("total %d segment %d = [%d,%d), want start %d", total, s, lo, hi, next)
			}
			next = hi
		}
		if next != 1<<32 {
			t.Errorf("total %d: segments end at %d", total, next)
		}
	}
}
