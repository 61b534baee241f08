package remote

import (
	"context"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// FuzzHookPos: a position given back by a client (replay --from) either
// parses into one that prints back to itself, or is refused; never a
// panic.
func FuzzHookPos(f *testing.F) {
	f.Add(hookPos{Table: 7, Floor: 1700000000, Shards: map[string]string{"shardId-00000001-aa": "F123", "shardId-2": "D", "s3": "T", "s4": "A9"}}.String())
	f.Add(hookPos{Table: 1}.String())
	f.Add("r1.e30")
	f.Add("r1.!!")
	f.Add("0000000000000001-00000000-0000000000000002")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseHookPos(s)
		if err != nil {
			return
		}
		q, err := parseHookPos(p.String())
		if err != nil {
			t.Fatalf("%q parsed, printed %q, which does not parse: %v", s, p.String(), err)
		}
		if q.String() != p.String() {
			t.Fatalf("%q: printed %q, then %q", s, p.String(), q.String())
		}
	})
}

func TestHookPosRefuses(t *testing.T) {
	for _, s := range []string{"", "r1.", "r1.e30", hookPos{Table: 1, Shards: map[string]string{"s": "X"}}.String(),
		hookPos{Table: 1, Shards: map[string]string{"s": "F12a"}}.String(), hookPos{Table: 1, Shards: map[string]string{"": "T"}}.String(),
		hookPos{Table: 1, Shards: map[string]string{"s": "Tx"}}.String()} {
		if _, err := parseHookPos(s); err == nil {
			t.Errorf("parseHookPos(%q) accepted", s)
		}
	}
	p := hookPos{Table: 3, Floor: 5, Shards: map[string]string{"a": "F1", "b": "D"}}
	if q, err := parseHookPos(p.String()); err != nil || q.Table != 3 || q.Floor != 5 || q.Shards["a"] != "F1" || q.Shards["b"] != "D" {
		t.Errorf("round trip of %+v: %+v %v", p, q, err)
	}
	if !seqLess("99", "100") || seqLess("100", "99") || seqLess("5", "5") {
		t.Error("seqLess does not compare numbers")
	}
}

// TestWaitPaces: after a Follow that found records a reader's Wait is
// poll/paceDivisor, doubling at each Wait back to poll, where the pace is
// forgotten (an idle reader waits poll, as before); another table's or
// tenant's reader is not hurried.
func TestWaitPaces(t *testing.T) {
	f := &Follower{poll: 40 * time.Millisecond}
	a := tenancy.SystemScopeIn(tenancy.NewTenantID(), "live", "test")
	b := tenancy.SystemScopeIn(tenancy.NewTenantID(), "live", "test")
	f.pace.Store(paceOf(a, "t"), f.poll/paceDivisor) // as a Follow that found records does
	pace := func(s tenancy.Scope, table string) time.Duration {
		v, ok := f.pace.Load(paceOf(s, table))
		if !ok {
			return 0
		}
		return v.(time.Duration)
	}
	if d := pace(b, "t"); d != 0 {
		t.Fatalf("another tenant's reader is paced: %v", d)
	}
	ctx := context.Background()
	var got []time.Duration
	for range 3 {
		got = append(got, pace(a, "t"))
		if err := f.Wait(ctx, a, "t", "x"); err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != f.poll/paceDivisor || got[1] != 0 || got[2] != 0 {
		t.Errorf("paces before each Wait %v: want %v, then forgotten (poll)", got, f.poll/paceDivisor)
	}
	if _, ok := f.pace.Load(paceOf(a, "other")); ok {
		t.Error("another table of the tenant is paced")
	}
}
