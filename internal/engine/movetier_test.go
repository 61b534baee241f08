package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// syncTiers is fakeTiers that the tier hook may change while requests
// read it.
type syncTiers struct {
	mu   sync.Mutex
	silo map[tenancy.TenantID]bool
	sets int
}

func (f *syncTiers) SiloTier(_ context.Context, t tenancy.TenantID) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.silo[t], nil
}

func (f *syncTiers) set(_ context.Context, t tenancy.TenantID, tier string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.silo[t] = tier == storeSilo
	f.sets++
	return nil
}

// waitTierMove starts a move of all of tenant's shared tables to to and
// waits for its tier move to end.
func waitTierMove(t *testing.T, e *Engine, tenant tenancy.TenantID, to string) []schema.MoveStatus {
	t.Helper()
	s := moveScope(t, tenant)
	sts, err := e.StartMove(context.Background(), s, "", to)
	noErr(t, err)
	if last := sts[len(sts)-1]; last.Tier != to {
		t.Fatalf("StartMove: no tier move: %+v", sts)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		all, err := e.Moves(context.Background(), s)
		noErr(t, err)
		for _, m := range all {
			if m.Tier == to && !m.Finished.IsZero() {
				return all
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tier move not done: %+v", all)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTierMove: moving all of a tenant's shared tables to its silo store
// sets its tier to silo once they have moved; the tenant's own table
// stays where its data is (pinned), a shared table created afterwards
// puts its data in the silo store from the first write, and another
// tenant is unaffected. The finished moves are listed after a restart.
// Moving back to the pool sets the tier back, and moves the table
// created meanwhile too.
func TestTierMove(t *testing.T) {
	env := openEnv(t)
	env.e.Close()
	tiers := &syncTiers{silo: map[tenancy.TenantID]bool{}}
	env.opts.Tiers = tiers
	env.e = env.open()
	env.e.SetTierHook(tiers.set)
	a, b := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	createShared(t, env.e, "Sh1", "pk:S", "", nil)
	a.as(tenancy.RoleAdmin).create(tableInput("Own", false))
	for i := range 20 {
		a.put("Sh1", itemOf(t, fmt.Sprintf(`{"pk":{"S":"k%d"}}`, i)))
		b.put("Sh1", itemOf(t, fmt.Sprintf(`{"pk":{"S":"k%d"}}`, i)))
		a.put("Own", itemOf(t, fmt.Sprintf(`{"pk":{"S":"o%d"}}`, i)))
	}
	where := func(a testActor) map[string]string {
		t.Helper()
		ps, err := env.e.Placement(testCtx, a.scope("GetItem"))
		noErr(t, err)
		m := map[string]string{}
		for _, p := range ps {
			m[p.Table] = p.Store
		}
		return m
	}

	all := waitTierMove(t, env.e, a.p.Tenant, storeSilo)
	if all[0].Tier != storeSilo || all[0].Phase != "done" || all[0].From != storePool {
		t.Fatalf("tier move: %+v", all[0])
	}
	if silo, _ := tiers.SiloTier(testCtx, a.p.Tenant); !silo {
		t.Fatal("tier not set to silo")
	}
	if got := where(a); got["Sh1"] != storeSilo || got["Own"] != storePool {
		t.Fatalf("placement after the move: %v; want S1 silo, Own pool (where its data is)", got)
	}
	if it := a.get("Own", itemOf(t, `{"pk":{"S":"o7"}}`)); it == nil {
		t.Fatal("the tenant's own table lost its data when the tier changed")
	}

	// A shared table created now puts a's data in its silo store, b's in
	// the pool.
	s2 := createShared(t, env.e, "Sh2", "pk:S", "", nil)
	a.put("Sh2", itemOf(t, `{"pk":{"S":"new"}}`))
	b.put("Sh2", itemOf(t, `{"pk":{"S":"new"}}`))
	if got := where(a); got["Sh2"] != storeSilo {
		t.Fatalf("a's placement of the new table: %v", got)
	}
	if got := where(b); got["Sh1"] != storePool || got["Sh2"] != storePool {
		t.Fatalf("b's placement: %v", got)
	}
	if _, err := env.db.Get(keyspace.Items(keyspace.Namespace(a.p.Tenant, a.p.Env), s2.ID)); err == nil {
		t.Fatal("a's item of the new table is in the main store")
	}

	// Back to the pool: both shared tables move, the tier follows.
	waitTierMove(t, env.e, a.p.Tenant, storePool)
	if silo, _ := tiers.SiloTier(testCtx, a.p.Tenant); silo {
		t.Fatal("tier not set back to pool")
	}
	check := func(when string) {
		t.Helper()
		if w := where(a); w["Sh1"] != storePool || w["Sh2"] != storePool || w["Own"] != storePool {
			t.Fatalf("%s: placement %v", when, w)
		}
		for tb, k := range map[string]string{"Sh1": "k3", "Sh2": "new", "Own": "o4"} {
			if it := a.get(tb, itemOf(t, `{"pk":{"S":"`+k+`"}}`)); it == nil {
				t.Fatalf("%s: %s of %s lost", when, k, tb)
			}
		}
	}
	check("after the move back")

	// Durable: after a restart (silo stores are in memory here: the data
	// is back in the main store) the finished moves are listed, newest
	// first, and the placements kept; b has none.
	env.reopen()
	env.e.SetTierHook(tiers.set)
	check("after a restart")
	got, err := env.e.Moves(testCtx, moveScope(t, a.p.Tenant))
	noErr(t, err)
	var short []string
	for _, m := range got {
		short = append(short, fmt.Sprintf("%s%s>%s:%s", m.Table, m.Tier, m.To, m.Phase))
	}
	if fmt.Sprint(short) != "[pool>pool:done Sh1>pool:done Sh2>pool:done silo>silo:done Sh1>silo:done]" &&
		fmt.Sprint(short) != "[pool>pool:done Sh2>pool:done Sh1>pool:done silo>silo:done Sh1>silo:done]" {
		t.Fatalf("moves after a restart: %v", short)
	}
	if other, _ := env.e.Moves(testCtx, moveScope(t, b.p.Tenant)); len(other) != 0 {
		t.Fatalf("b's moves: %+v", other)
	}

	// Dropping the tenant forgets its history.
	noErr(t, env.e.DropTenant(testCtx, tenancy.SystemScope(a.p.Tenant, "test")))
	lo, hi := keyspace.MoveLogRange(a.p.Tenant)
	it := env.db.NewIter(lo, hi)
	defer it.Close()
	if it.First() {
		t.Fatal("finished moves kept after the tenant was dropped")
	}
}

// TestMoveLogBounded: a tenant's finished moves keep the last moveRecent.
func TestMoveLogBounded(t *testing.T) {
	env := openEnv(t)
	a := env.tenant(tenancy.RoleApp)
	for i := range moveRecent + 5 {
		st := schema.MoveStatus{Table: fmt.Sprintf("t%02d", i), Phase: "done", Finished: time.Unix(1_700_000_000+int64(i), 0)}
		noErr(t, env.e.finishMove(a.p.Tenant, uint64(i+1), keyspace.TableMove(a.p.Tenant, uint64(i+1)), st))
	}
	got, err := env.e.moveLog(a.p.Tenant)
	noErr(t, err)
	if len(got) != moveRecent || got[0].Table != fmt.Sprintf("t%02d", moveRecent+4) || got[moveRecent-1].Table != "t05" {
		t.Fatalf("history: %d entries, first %q, last %q", len(got), got[0].Table, got[len(got)-1].Table)
	}
}

// TestTierMoveResumes: a tier move stopped between the end of its table
// moves and the tier change (here: the engine closes while the tier hook
// is not set yet) resumes when the engine opens again and sets the tier;
// the table keeps its moved placement meanwhile.
func TestTierMoveResumes(t *testing.T) {
	env := openEnv(t)
	env.e.Close()
	tiers := &syncTiers{silo: map[tenancy.TenantID]bool{}}
	env.opts.Tiers = tiers
	env.e = env.open()
	a := env.tenant(tenancy.RoleApp)
	createShared(t, env.e, "Sh1", "pk:S", "", nil)
	a.put("Sh1", itemOf(t, `{"pk":{"S":"k1"}}`))
	s := moveScope(t, a.p.Tenant)
	_, err := env.e.StartMove(testCtx, s, "", storeSilo)
	noErr(t, err)
	phase := func() (table, tier string) {
		ms, err := env.e.Moves(testCtx, s)
		noErr(t, err)
		for _, m := range ms {
			if m.Tier != "" && tier == "" {
				tier = m.Phase
			} else if m.Table == "Sh1" && table == "" {
				table = m.Phase
			}
		}
		return table, tier
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if tb, tr := phase(); tb == "done" && tr == "checking" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(phase())
		}
	}
	env.reopen()
	if tb, tr := phase(); tb != "done" || tr == "" || tr == "done" {
		t.Fatalf("after the restart: table move %q, tier move %q; want done and resumed", tb, tr)
	}
	if silo, _ := tiers.SiloTier(testCtx, a.p.Tenant); silo {
		t.Fatal("tier set before the hook was")
	}
	env.e.SetTierHook(tiers.set)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, tr := phase(); tr == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(phase())
		}
	}
	if silo, _ := tiers.SiloTier(testCtx, a.p.Tenant); !silo {
		t.Fatal("tier not set after the resume")
	}
	if _, err := env.db.Get(keyspace.TierMove(a.p.Tenant)); err == nil {
		t.Fatal("tier move record kept")
	}
	ps, err := env.e.Placement(testCtx, a.scope("GetItem"))
	noErr(t, err)
	if len(ps) != 1 || ps[0].Store != storeSilo {
		t.Fatalf("placement: %+v", ps)
	}
}
