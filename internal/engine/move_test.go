package engine

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// moveScope is the operator admitted to tenant's admin routes.
func moveScope(t testing.TB, tenant tenancy.TenantID) tenancy.Scope {
	t.Helper()
	var g tenancy.Guard
	s, err := g.AdmitAdmin(operatorPrincipal(), tenancy.AdminTenant, "POST /v1/tenants/{tenant}/moves", tenant)
	noErr(t, err)
	return s
}

// waitMove starts a move of tenant's data of table to to and waits for
// it to end.
func waitMove(t testing.TB, e *Engine, tenant tenancy.TenantID, table, to string) schema.MoveStatus {
	t.Helper()
	s := moveScope(t, tenant)
	sts, err := e.StartMove(context.Background(), s, table, to)
	noErr(t, err)
	if len(sts) != 1 {
		t.Fatalf("StartMove: %+v", sts)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		all, err := e.Moves(context.Background(), s)
		noErr(t, err)
		if len(all) > 0 && all[0].Table == table && all[0].Finished.IsZero() == false {
			return all[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("move not done: %+v", all)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMoveUnderWrites: a tenant's data of a shared table (items, GSI
// entries, counters, stream records) moves to its silo store and back
// while a writer of that tenant and one of another tenant keep writing;
// afterwards every acknowledged write is there exactly, the index and
// counters agree, the stream shows every change once with increasing
// sequence numbers, and the other tenant's data never moved.
func TestMoveUnderWrites(t *testing.T) {
	env := streamsOpen(t)
	createShared(t, env.e, "Moves", "pk:S", "", []indexSpec{{name: "byG", hash: "g:S", proj: "ALL"}})
	op := env.operator()
	_, err := env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Moves",
		StreamSpecification: &wire.StreamSpecification{StreamEnabled: boolPtr(true), StreamViewType: "NEW_AND_OLD_IMAGES"}})
	noErr(t, err)
	a, b := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	item := func(k, v int) attr.Item {
		return itemOf(t, fmt.Sprintf(`{"pk":{"S":"k%d"},"g":{"S":"G%d"},"v":{"N":"%d"}}`, k, v%5, v))
	}
	var pre []attr.Item
	for k := range 500 {
		pre = append(pre, item(k, k))
	}
	putItems(t, env.e, a.scope("BatchWriteItem"), "Moves", pre...)
	putItems(t, env.e, b.scope("BatchWriteItem"), "Moves", pre[:50]...)

	// The writers: a writes and deletes, and keeps the acknowledged state.
	want := map[string]int{}
	for k := range 500 {
		want[fmt.Sprintf("k%d", k)] = k
	}
	writes := 500
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := i % 700
			key := fmt.Sprintf("k%d", k)
			if _, ok := want[key]; ok && i%10 == 0 {
				_, err := env.e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: "Moves", Key: itemOf(t, `{"pk":{"S":"`+key+`"}}`)})
				if err != nil {
					werr = err
					return
				}
				delete(want, key)
			} else {
				v := 1000 + i
				if _, err := env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Moves", Item: item(k, v)}); err != nil {
					werr = err
					return
				}
				want[key] = v
			}
			writes++
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := env.e.PutItem(testCtx, b.scope("PutItem"), &wire.PutItemInput{TableName: "Moves", Item: item(i%50, i)}); err != nil {
				werr = err
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	st := waitMove(t, env.e, a.p.Tenant, "Moves", "silo")
	if st.Phase != "done" {
		t.Fatalf("move to silo: %+v", st)
	}
	t.Logf("to silo: %+v", st)
	ps, err := env.e.Placement(testCtx, a.scope("GetItem"))
	noErr(t, err)
	if len(ps) != 1 || ps[0].Store != "silo" {
		t.Fatalf("placement after the move: %+v", ps)
	}
	time.Sleep(20 * time.Millisecond)
	st = waitMove(t, env.e, a.p.Tenant, "Moves", "pool")
	if st.Phase != "done" {
		t.Fatalf("move to pool: %+v", st)
	}
	t.Logf("to pool: %+v", st)
	time.Sleep(10 * time.Millisecond)
	close(stop)
	wg.Wait()
	noErr(t, werr)

	checkMoved(t, env, a, want)
	// The other tenant's data stayed in the main store, whole.
	if n, _ := b.counters("Moves", 0); n != 50 {
		t.Fatalf("other tenant's count: %d", n)
	}

	// The stream: every change once, numbers increasing, last image right.
	s := a.scope("GetRecords")
	var cur changelog.Cursor
	last := map[string]int{}
	n := 0
	var prev uint64
	for {
		page, err := env.e.FollowLog(testCtx, s, "Moves", cur, 1000)
		noErr(t, err)
		for _, en := range page.Entries {
			if en.Seq <= prev {
				t.Fatalf("sequence %d after %d", en.Seq, prev)
			}
			prev = en.Seq
			n++
			k := en.Keys["pk"].S
			if en.New == nil {
				last[k] = -1
			} else {
				v := en.New["v"].N
				var x int
				fmt.Sscan(v.String(), &x)
				last[k] = x
			}
		}
		cur = page.Next
		if len(page.Entries) == 0 {
			break
		}
	}
	if n != writes {
		t.Fatalf("stream records: %d, acknowledged writes: %d", n, writes)
	}
	for k, v := range last {
		if w, ok := want[k]; ok && w != v || !ok && v != -1 {
			t.Fatalf("stream's last change of %s: %d, want %d (present %v)", k, v, w, ok)
		}
	}
}

// checkMoved checks that actor a's items of table Moves are exactly want
// (key -> v), with index entries and counters in agreement, and that
// none is left in its silo store.
func checkMoved(t *testing.T, env *testEnv, a testActor, want map[string]int) {
	t.Helper()
	out, err := runScan(t, env.e, a.scope("Scan"), &wire.ScanInput{TableName: "Moves", ConsistentRead: boolPtr(true)})
	noErr(t, err)
	got := map[string]int{}
	for _, it := range out.Items {
		v := it["v"].N
		var x int
		fmt.Sscan(v.String(), &x)
		got[it["pk"].S] = x
	}
	if out.LastEvaluatedKey != nil {
		t.Fatal("scan paged; test expects one page")
	}
	if len(got) != len(want) {
		t.Fatalf("items: %d, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("item %s: v=%d, want %d", k, got[k], v)
		}
	}
	if n, _ := a.counters("Moves", 0); n != int64(len(want)) {
		t.Fatalf("item counter %d, want %d", n, len(want))
	}
	entries := a.indexEntries("Moves", 1)
	if len(entries) != len(want) {
		t.Fatalf("index entries %d, want %d", len(entries), len(want))
	}
	if n, _ := a.counters("Moves", 1); n != int64(len(want)) {
		t.Fatalf("index counter %d, want %d", n, len(want))
	}
	for _, e := range entries {
		v := e["v"].N
		var x int
		fmt.Sscan(v.String(), &x)
		if want[e["pk"].S] != x || e["g"].S != fmt.Sprintf("G%d", x%5) {
			t.Fatalf("index entry %s", showItem(e))
		}
	}
	// Nothing of a's table is left in its silo store.
	db, rel, err := env.e.siloStoreOf(testCtx, a.p.Tenant)
	noErr(t, err)
	defer rel()
	if db != nil {
		lo, hi := keyspace.NamespaceRange(a.p.Tenant, a.p.Env)
		it := db.NewIter(lo, hi)
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if !bytes.HasPrefix(it.Key(), keyspace.ChangeCeiling(keyspace.Namespace(a.p.Tenant, a.p.Env))) {
				t.Fatalf("left in the silo store: %x", it.Key())
			}
		}
	}
}

// TestMoveWaitsForEarlierReaders: a request that opened its handle before
// the cutover keeps reading the data where it was; the move deletes the
// source's copy only once that request is done.
func TestMoveWaitsForEarlierReaders(t *testing.T) {
	env := streamsOpen(t)
	createShared(t, env.e, "Moves", "pk:S", "", nil)
	a := env.tenant(tenancy.RoleApp)
	a.put("Moves", itemOf(t, `{"pk":{"S":"k1"},"v":{"N":"1"}}`))
	h, err := env.e.open(testCtx, a.scope("GetItem"), "Moves")
	noErr(t, err)
	if h.db != env.db {
		t.Fatal("handle not on the main store")
	}
	s := moveScope(t, a.p.Tenant)
	_, err = env.e.StartMove(testCtx, s, "Moves", "silo")
	noErr(t, err)
	phase := func() string {
		ms, err := env.e.Moves(testCtx, s)
		noErr(t, err)
		return ms[0].Phase
	}
	for deadline := time.Now().Add(30 * time.Second); phase() != "cleaning"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("phase %s", phase())
		}
	}
	// New requests read the silo store; the early one still finds its item.
	if got := a.get("Moves", itemOf(t, `{"pk":{"S":"k1"}}`)); got == nil {
		t.Fatal("item not found after the cutover")
	}
	time.Sleep(50 * time.Millisecond)
	if p := phase(); p != "cleaning" {
		t.Fatalf("the move went on to %s with an earlier request open", p)
	}
	// Both stores hold the item now; the tenant's storage counts it once.
	if ts, err := env.e.TenantStorage(testCtx, a.p.Tenant); err != nil || len(ts) != 1 || ts[0].Items != 1 {
		t.Fatalf("TenantStorage while the source's copy waits: %+v, %v (want 1 item)", ts, err)
	}
	it, err := h.getItem(itemOf(t, `{"pk":{"S":"k1"}}`))
	noErr(t, err)
	if it == nil {
		t.Fatal("the earlier request lost its item")
	}
	h.close()
	for deadline := time.Now().Add(30 * time.Second); phase() != "done"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("phase %s after the request closed", phase())
		}
	}
	if it, err := h.getItem(itemOf(t, `{"pk":{"S":"k1"}}`)); err != nil || it != nil {
		t.Fatalf("source copy after the cleanup: %v, %v", it, err)
	}
}

// TestDropTenantForgetsPlacements: dropping a moved tenant removes its
// placement overrides, so a tenant created again with its id starts where
// its tier says.
func TestDropTenantForgetsPlacements(t *testing.T) {
	env := streamsOpen(t)
	tb := createShared(t, env.e, "Moves", "pk:S", "", nil)
	a := env.tenant(tenancy.RoleApp)
	a.put("Moves", itemOf(t, `{"pk":{"S":"k1"}}`))
	if st := waitMove(t, env.e, a.p.Tenant, "Moves", "silo"); st.Phase != "done" {
		t.Fatalf("move: %+v", st)
	}
	if silo, ok := env.e.placedIn(a.p.Tenant, tb.ID); !ok || !silo {
		t.Fatalf("placement after the move: %v %v", silo, ok)
	}
	noErr(t, env.e.DropTenant(testCtx, tenancy.SystemScope(a.p.Tenant, "test")))
	if _, ok := env.e.placedIn(a.p.Tenant, tb.ID); ok {
		t.Fatal("placement kept after the drop")
	}
	if _, err := env.db.Get(keyspace.TablePlacement(a.p.Tenant, tb.ID)); err == nil {
		t.Fatal("placement key kept after the drop")
	}
	env.reopen()
	if _, ok := env.e.placedIn(a.p.Tenant, tb.ID); ok {
		t.Fatal("placement back after a restart")
	}
}
