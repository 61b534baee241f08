package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// fixedClock is a clock the test moves by hand.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixedLog returns a log over a fresh store whose clock the test moves.
func fixedLog(t *testing.T) (*Log, *fixedClock) {
	t.Helper()
	clk := &fixedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return Open(kv.NewLocal(openDB(t)), Options{Now: clk.now}), clk
}

func records(t *testing.T, l *Log, ten tenancy.TenantID) []Record {
	t.Helper()
	rs, err := l.Query(context.Background(), sys(ten), time.Time{}, time.Time{}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// A flood of denials in one tenant's name is recorded as deniedBurst
// records, then deniedRate a second, and summaries by (actor, action)
// that count the rest; another tenant's denials have their own budget;
// the chain stays verifiable; every attempt is accounted for.
func TestDeniedFloodIsCoalesced(t *testing.T) {
	l, clk := fixedLog(t)
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	ctx := context.Background()
	pa := tenancy.Principal{Tenant: a, KeyID: "sk_live_a", Role: tenancy.RoleApp}
	pb := tenancy.Principal{Tenant: b, KeyID: "sk_live_b", Role: tenancy.RoleApp}

	for i := range 300 {
		action := "dynamodb:GetItem"
		if i%3 == 0 {
			action = "dynamodb:PutItem"
		}
		l.Denied(ctx, pa, action, fmt.Sprintf("bad signature %d", i))
	}
	l.Denied(ctx, pb, "dynamodb:PutItem", "not allowed")
	if got := len(records(t, l, b)); got != 1 {
		t.Fatalf("tenant B has %d records, want 1 (its own budget)", got)
	}

	// The timer writes the summaries (a real one: wait for it). NB: wait
	// for the records themselves, not for the pending counts to empty: the
	// timer takes those before it appends, and a read in between would
	// flush nothing and miss the summaries.
	deadline := time.Now().Add(5 * time.Second)
	appended := func() uint64 {
		c := l.chain(a)
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.seq
	}
	for appended() < deniedBurst+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rs := records(t, l, a)
	if len(rs) != deniedBurst+2 {
		t.Fatalf("tenant A has %d records, want %d individual + 2 summaries", len(rs), deniedBurst)
	}
	var total int64
	by := map[string]int64{}
	for i, r := range rs {
		total += DeniedAttempts(r)
		if i < deniedBurst {
			if r.Outcome != OutcomeDenied || r.Count != 0 {
				t.Fatalf("record %d = %+v", i, r)
			}
			continue
		}
		if r.Outcome != OutcomeDeniedCoalesced || r.Actor != "sk_live_a" || !strings.Contains(r.Reason, "the last: bad signature 29") {
			t.Fatalf("summary record = %+v", r)
		}
		by[r.Action] = r.Count
	}
	if total != 300 || by["dynamodb:PutItem"] != 66 || by["dynamodb:GetItem"] != 134 {
		t.Fatalf("accounted for %d attempts (%v), want 300 (66 put + 134 get coalesced)", total, by)
	}
	if _, err := l.Verify(ctx, sys(a)); err != nil {
		t.Fatalf("Verify: %v", err)
	}

	// Half a second later, ten more may be recorded on their own.
	clk.add(500 * time.Millisecond)
	for range 15 {
		l.Denied(ctx, pa, "dynamodb:Scan", "again")
	}
	rs = records(t, l, a) // reading flushes the pending summary
	if len(rs) != deniedBurst+2+10+1 {
		t.Fatalf("after 0.5s: %d records, want %d", len(rs), deniedBurst+2+10+1)
	}
	if last := rs[len(rs)-1]; last.Outcome != OutcomeDeniedCoalesced || last.Count != 5 || last.Action != "dynamodb:Scan" {
		t.Fatalf("last record = %+v", last)
	}
}

// Distinct (actor, action) pairs beyond deniedPairs are counted together.
func TestDeniedPairsAreBounded(t *testing.T) {
	l, _ := fixedLog(t)
	a := tenancy.NewTenantID()
	ctx := context.Background()
	for i := range deniedBurst + 1000 {
		l.Denied(ctx, tenancy.Principal{Tenant: a, KeyID: fmt.Sprintf("sk_live_guess%d", i)}, "dynamodb:GetItem", "unknown key")
	}
	rs := records(t, l, a)
	if len(rs) != deniedBurst+deniedPairs+1 {
		t.Fatalf("%d records, want %d + %d pairs + 1 various", len(rs), deniedBurst, deniedPairs)
	}
	var total int64
	for _, r := range rs {
		total += DeniedAttempts(r)
	}
	if last := rs[len(rs)-1]; total != deniedBurst+1000 || last.Actor != "(various)" || last.Count != 1000-deniedPairs {
		t.Fatalf("total %d, last %+v", total, last)
	}
}

// Close writes pending summaries at once; Forget drops them.
func TestDeniedCloseAndForget(t *testing.T) {
	l, _ := fixedLog(t)
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	ctx := context.Background()
	for _, ten := range []tenancy.TenantID{a, b} {
		p := tenancy.Principal{Tenant: ten, KeyID: "k", Role: tenancy.RoleRead}
		for range deniedBurst + 5 {
			l.Denied(ctx, p, "dynamodb:Scan", "denied")
		}
	}
	l.Forget(b)
	l.Close()
	l.denials.mu.Lock()
	closed := l.denials.closed
	l.denials.mu.Unlock()
	if !closed {
		t.Fatal("not closed")
	}
	rs := records(t, l, a)
	if len(rs) != deniedBurst+1 || rs[len(rs)-1].Count != 5 {
		t.Fatalf("after Close, tenant A has %d records (last %+v), want %d + summary of 5", len(rs), rs[len(rs)-1], deniedBurst)
	}
	if got := len(records(t, l, b)); got != deniedBurst {
		t.Fatalf("forgotten tenant B has %d records, want %d and no summary", got, deniedBurst)
	}
	// Nothing fires later.
	time.Sleep(deniedWindow + 200*time.Millisecond)
	if got := len(records(t, l, a)); got != deniedBurst+1 {
		t.Fatalf("a summary was written twice: %d records", got)
	}
}

// The per-tenant rate state is bounded: tenants with nothing pending and a
// full bucket are swept once many tenants have state.
func TestDeniedStateIsSwept(t *testing.T) {
	l, clk := fixedLog(t)
	ctx := context.Background()
	for i := range deniedSweepAt + 10 {
		if i == deniedSweepAt/2 {
			clk.add(time.Minute)
		}
		l.Denied(ctx, tenancy.Principal{Tenant: tenancy.NewTenantID(), KeyID: "k"}, "x", "y")
	}
	l.denials.mu.Lock()
	n := len(l.denials.tenants)
	l.denials.mu.Unlock()
	if n > deniedSweepAt {
		t.Fatalf("%d tenants with rate state, want at most %d", n, deniedSweepAt)
	}
}

// Retire stops every append to a tenant's log (denials, pending
// summaries, admin records); Unretire resumes them.
func TestRetire(t *testing.T) {
	l, _ := fixedLog(t)
	a := tenancy.NewTenantID()
	ctx := context.Background()
	p := tenancy.Principal{Tenant: a, KeyID: "k", Role: tenancy.RoleApp}
	for range deniedBurst + 5 {
		l.Denied(ctx, p, "dynamodb:GetItem", "denied") // 5 pending
	}
	l.Retire(a)
	l.Denied(ctx, p, "dynamodb:GetItem", "after retire")
	if _, err := l.Append(ctx, sys(a), Event{Actor: "op", Action: "key.create"}); !errors.Is(err, ErrRetired) {
		t.Fatalf("Append after Retire: %v, want ErrRetired", err)
	}
	time.Sleep(deniedWindow + 200*time.Millisecond) // the pending summary's timer
	l.Close()
	l.Unretire(a)
	rs := records(t, l, a)
	if len(rs) != deniedBurst {
		t.Fatalf("%d records after Retire, want the %d from before it and nothing after", len(rs), deniedBurst)
	}
	if _, err := l.Append(ctx, sys(a), Event{Actor: "op", Action: "key.create"}); err != nil {
		t.Fatalf("Append after Unretire: %v", err)
	}
}
