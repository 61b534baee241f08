package audit

import (
	"context"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Two gateways' logs over one store (Options.Shared): a flood of denials
// in one tenant's name, alternating between them, is recorded as the
// fleet's deniedBurst (not per gateway), the rest counted in the store;
// a read through either log accounts for every attempt at once, each
// exactly once, and the chain verifies.
func TestDeniedFloodCoalescedAcrossGateways(t *testing.T) {
	clk := &fixedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := kv.NewLocal(openDB(t))
	l0 := Open(st, Options{Now: clk.now, Shared: true})
	l1 := Open(st, Options{Now: clk.now, Shared: true, Keys: l0.keys})
	defer l0.Close()
	defer l1.Close()
	ctx := context.Background()
	ten := tenancy.NewTenantID()
	var b kv.Batch
	b.Set(keyspace.TenantRecord(ten), []byte("tenant"))
	if err := st.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}
	p := tenancy.Principal{Tenant: ten, KeyID: "sk_live_x", Role: tenancy.RoleApp}
	const flood = 300
	for i := range flood {
		l := l0
		if i%2 == 1 {
			l = l1
		}
		l.Denied(ctx, p, "auth:sigv4", "bad signature")
	}
	for gi, l := range []*Log{l1, l0} {
		rs := records(t, l, ten)
		var n, one, sums int64
		for _, r := range rs {
			n += DeniedAttempts(r)
			switch r.Outcome {
			case OutcomeDenied:
				one++
			case OutcomeDeniedCoalesced:
				sums++
			}
		}
		if n != flood {
			t.Errorf("read through log %d: %d of %d attempts accounted for", gi, n, flood)
		}
		// NB: a gateway's timer may have taken its counts once already
		// (a slow run): then it has two summaries.
		if one != deniedBurst || sums < 2 || sums > 4 {
			t.Errorf("read through log %d: %d denials recorded one by one and %d summaries, want the fleet's %d and one or two per gateway", gi, one, sums, deniedBurst)
		}
	}
	if _, err := l0.Verify(ctx, sys(ten)); err != nil {
		t.Fatal(err)
	}
	// An hour later the bucket is full again, fleet-wide.
	clk.add(time.Hour)
	l1.Denied(ctx, p, "auth:sigv4", "bad signature")
	if rs := records(t, l0, ten); rs[len(rs)-1].Outcome != OutcomeDenied {
		t.Errorf("after the bucket refilled: last record %+v, want a denial recorded on its own", rs[len(rs)-1])
	}
}
