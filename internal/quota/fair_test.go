package quota

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

func tid(b byte) tenancy.TenantID { return tenancy.TenantID{0: b, 15: 1} }

// flows hands out one flow per tenant, as the Manager does.
type flows map[tenancy.TenantID]*flow

var testFlows = struct {
	sync.Mutex
	m map[*gate]flows
}{m: map[*gate]flows{}}

func flowOf(g *gate, t tenancy.TenantID) *flow {
	testFlows.Lock()
	defer testFlows.Unlock()
	fs := testFlows.m[g]
	if fs == nil {
		fs = flows{}
		testFlows.m[g] = fs
	}
	if fs[t] == nil {
		fs[t] = &flow{tenant: t}
	}
	return fs[t]
}

// acq acquires a slot of g for tenant t.
func acq(ctx context.Context, g *gate, t tenancy.TenantID, weight float64) (*flow, error) {
	f := flowOf(g, t)
	if _, err := g.acquire(ctx, f, weight, 0, t0); err != nil {
		return nil, err
	}
	return f, nil
}

// queueUp starts n goroutines of tenant t that wait in g, and returns
// once all of them are queued. Each granted waiter sends its flow on got.
func queueUp(t *testing.T, g *gate, tenant tenancy.TenantID, n int, weight float64, got chan<- *flow) {
	t.Helper()
	_, before := g.stats()
	for i := 0; i < n; i++ {
		go func() {
			f, err := acq(context.Background(), g, tenant, weight)
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			got <- f
		}()
		// Wait until this one is queued, so that FIFO order is known.
		for {
			if _, q := g.stats(); q == before+i+1 {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// TestFairQueueManyWaitersCannotStarveFew: with one slot, a tenant with
// 50 queued requests and a tenant with 3 alternate; the few are all
// served within the first rounds, not after the many.
func TestFairQueueManyWaitersCannotStarveFew(t *testing.T) {
	g := newGate(1, 1, 1, 1000, 1000, 0)
	var order []string
	g.onGrant = func(id tenancy.TenantID) {
		order = append(order, map[byte]string{1: "A", 2: "B"}[id[0]])
	}
	hold, err := acq(context.Background(), g, tid(9), 1)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *flow, 100)
	queueUp(t, g, tid(1), 50, 1, got)
	queueUp(t, g, tid(2), 3, 1, got)

	g.release(hold, 0)
	for i := 0; i < 53; i++ {
		f := <-got
		g.release(f, 0)
	}
	want := "ABABAB" + strings.Repeat("A", 47)
	if s := strings.Join(order, ""); s != want {
		t.Fatalf("grant order\n got %s\nwant %s", s, want)
	}
}

// TestFairQueueWeights: weight 3 gets three grants per round to weight 1's
// one.
func TestFairQueueWeights(t *testing.T) {
	g := newGate(1, 1, 1, 1000, 1000, 0)
	var order []string
	g.onGrant = func(id tenancy.TenantID) { order = append(order, map[byte]string{1: "A", 2: "B"}[id[0]]) }
	hold, _ := acq(context.Background(), g, tid(9), 1)
	got := make(chan *flow, 100)
	queueUp(t, g, tid(1), 8, 1, got)
	queueUp(t, g, tid(2), 8, 3, got)
	g.release(hold, 0)
	for i := 0; i < 16; i++ {
		g.release(<-got, 0)
	}
	if s, want := strings.Join(order, ""), "ABBBABBBABBAAAAA"; s != want {
		t.Fatalf("grant order %s, want %s", s, want)
	}
}

// TestFairQueueCostCharging: a tenant whose requests cost 4 units each gets
// one request per four of a tenant of 1-unit requests.
func TestFairQueueCostCharging(t *testing.T) {
	g := newGate(1, 1, 1, 1000, 1000, 0)
	var order []string
	g.onGrant = func(id tenancy.TenantID) { order = append(order, map[byte]string{1: "H", 2: "L"}[id[0]]) }
	hold, _ := acq(context.Background(), g, tid(9), 1)
	got := make(chan *flow, 100)
	queueUp(t, g, tid(1), 6, 1, got)
	queueUp(t, g, tid(2), 12, 1, got)
	g.release(hold, 0)
	for i := 0; i < 18; i++ {
		f := <-got
		cost := 1.0
		if f.tenant == tid(1) {
			cost = 4
		}
		g.release(f, cost)
	}
	// H pays 3 extra units per request, so after its first grant it waits
	// out three rounds of L for each further one.
	if s, want := strings.Join(order, ""), "HLLLLHLLLLHLLLLHHH"; s != want {
		t.Fatalf("grant order %s, want %s", s, want)
	}
}

// TestTenantCapLeavesRoomForOthers: a tenant that has reached its cap
// waits even though server slots are free, and another tenant runs at
// once.
func TestTenantCapLeavesRoomForOthers(t *testing.T) {
	g := newGate(4, 3, 3, 100, 100, 0)
	var held []*flow
	for i := 0; i < 3; i++ {
		f, err := acq(context.Background(), g, tid(1), 1)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, f)
	}
	got := make(chan *flow, 1)
	queueUp(t, g, tid(1), 1, 1, got) // 4th of tenant 1 waits at its cap
	f, err := acq(context.Background(), g, tid(2), 1)
	if err != nil {
		t.Fatalf("other tenant: %v", err)
	}
	if in, q := g.stats(); in != 4 || q != 1 {
		t.Fatalf("inflight, queued = %d, %d; want 4, 1", in, q)
	}
	g.release(f, 0) // a free slot, but tenant 1 is still at its cap
	select {
	case <-got:
		t.Fatal("tenant past its cap was granted a slot")
	default:
	}
	g.release(held[0], 0)
	g.release(<-got, 0)
	for _, f := range held[1:] {
		g.release(f, 0)
	}
	if in, q := g.stats(); in != 0 || q != 0 || !g.idle(flowOf(g, tid(1))) || !g.idle(flowOf(g, tid(2))) {
		t.Fatalf("after all releases inflight=%d queued=%d; want all 0 and idle flows", in, q)
	}
}

func TestGateShedding(t *testing.T) {
	g := newGate(1, 1, 1, 2, 3, 0)
	hold, _ := acq(context.Background(), g, tid(9), 1)
	got := make(chan *flow, 10)
	queueUp(t, g, tid(1), 2, 1, got)
	if _, err := acq(context.Background(), g, tid(1), 1); !errors.Is(err, errTenantQueueFull) {
		t.Fatalf("third waiter of one tenant: err = %v, want errTenantQueueFull", err)
	}
	queueUp(t, g, tid(2), 1, 1, got)
	if _, err := acq(context.Background(), g, tid(3), 1); !errors.Is(err, errOverloaded) {
		t.Fatalf("waiter past the total bound: err = %v, want errOverloaded", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g2 := newGate(1, 1, 1, 10, 10, 0)
	h2, _ := acq(ctx, g2, tid(1), 1)
	errc := make(chan error)
	go func() { _, err := acq(ctx, g2, tid(2), 1); errc <- err }()
	for _, q := g2.stats(); q != 1; _, q = g2.stats() {
		time.Sleep(50 * time.Microsecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: err = %v", err)
	}
	g2.release(h2, 0)
	if in, q := g2.stats(); in != 0 || q != 0 {
		t.Fatalf("after cancel inflight=%d queued=%d", in, q)
	}
	g.release(hold, 0)
	for i := 0; i < 3; i++ {
		g.release(<-got, 0)
	}
}

func TestGateQueueTimeout(t *testing.T) {
	g := newGate(1, 1, 1, 10, 10, time.Millisecond)
	hold, _ := acq(context.Background(), g, tid(1), 1)
	if _, err := acq(context.Background(), g, tid(2), 1); !errors.Is(err, errQueueTimeout) {
		t.Fatalf("err = %v, want errQueueTimeout", err)
	}
	g.release(hold, 0)
	if in, q := g.stats(); in != 0 || q != 0 {
		t.Fatalf("inflight=%d queued=%d", in, q)
	}
}

// TestGateConcurrent hammers the gate and checks that the bound holds and
// every slot is returned.
func TestGateConcurrent(t *testing.T) {
	g := newGate(3, 2, 2, 1000, 1000, 0)
	var mu sync.Mutex
	running, peak := 0, 0
	var wg sync.WaitGroup
	for w := 0; w < 40; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				f, err := acq(context.Background(), g, tid(byte(w%4)), 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				running++
				peak = max(peak, running)
				mu.Unlock()
				mu.Lock()
				running--
				mu.Unlock()
				g.release(f, float64(i%3))
			}
		}()
	}
	wg.Wait()
	if peak > 3 {
		t.Fatalf("peak running = %d, want <= 3", peak)
	}
	if in, q := g.stats(); in != 0 || q != 0 || g.ring.Len() != 0 {
		t.Fatalf("leftovers: inflight=%d queued=%d ring=%d", in, q, g.ring.Len())
	}
}

// TestSharedCapWhileOthersActive: a tenant alone may fill every slot; once
// another tenant has made a request it is held to the shared cap, and two
// windows after the other tenant's last request it is alone again.
func TestSharedCapWhileOthersActive(t *testing.T) {
	g := newGate(4, 4, 1, 100, 100, 0)
	a, b := &flow{tenant: tid(1)}, &flow{tenant: tid(2)}
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if waited, err := g.acquire(ctx, a, 1, 0, t0); err != nil || waited {
			t.Fatalf("alone, request %d: waited=%v err=%v", i, waited, err)
		}
	}
	for i := 0; i < 4; i++ {
		g.release(a, 0)
	}
	// b arrives: from now on a may run one request at a time.
	if _, err := g.acquire(ctx, b, 1, 0, t0); err != nil {
		t.Fatal(err)
	}
	g.release(b, 0)
	if _, err := g.acquire(ctx, a, 1, 0, t0); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := g.acquire(ctx, a, 1, 0, t0); got <- err }()
	for _, q := g.stats(); q != 1; _, q = g.stats() {
		time.Sleep(50 * time.Microsecond)
	}
	if in, _ := g.stats(); in != 1 {
		t.Fatalf("inflight = %d with free slots; want a held to the shared cap of 1", in)
	}
	g.release(a, 0)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	g.release(a, 0)
	// Two windows later b is no longer active.
	later := t0.Add(2 * contentionWindow)
	for i := 0; i < 4; i++ {
		if waited, err := g.acquire(ctx, a, 1, 0, later); err != nil || waited {
			t.Fatalf("alone again, request %d: waited=%v err=%v", i, waited, err)
		}
	}
	// A tenant's own max_inflight overrides the shared cap.
	g2 := newGate(4, 4, 1, 100, 100, 0)
	a2, b2 := &flow{tenant: tid(1)}, &flow{tenant: tid(2)}
	g2.acquire(ctx, b2, 1, 0, t0)
	for i := 0; i < 3; i++ {
		if waited, err := g2.acquire(ctx, a2, 1, 3, t0); err != nil || waited {
			t.Fatalf("max_inflight 3, request %d: waited=%v err=%v", i, waited, err)
		}
	}
}

// TestActiveTenants: a tenant counts as active while it has requests
// running (however long ago it made them) and for the window after its
// last request, also when the other tenant's request falls in the next
// window; a request read before a window boundary but locked after one
// does not reset the count.
func TestActiveTenants(t *testing.T) {
	ctx := context.Background()
	mustRun := func(g *gate, f *flow, now time.Time) {
		t.Helper()
		if waited, err := g.acquire(ctx, f, 1, 0, now); err != nil || waited {
			t.Fatalf("acquire of %v: waited=%v err=%v", f.tenant, waited, err)
		}
	}
	// mustQueue starts an acquire of f at now and waits until it is queued.
	mustQueue := func(g *gate, f *flow, now time.Time) <-chan error {
		t.Helper()
		_, before := g.stats()
		got := make(chan error, 1)
		go func() { _, err := g.acquire(ctx, f, 1, 0, now); got <- err }()
		for _, q := g.stats(); q == before; _, q = g.stats() {
			time.Sleep(50 * time.Microsecond)
		}
		return got
	}

	// a fills both slots, and its requests are still running two windows
	// later when b arrives: a freed slot goes to b, not to a's waiter.
	g := newGate(2, 2, 1, 100, 100, 0)
	a, b := &flow{tenant: tid(1)}, &flow{tenant: tid(2)}
	w0 := time.Unix(1000, 0)
	mustRun(g, a, w0)
	mustRun(g, a, w0)
	moreA := mustQueue(g, a, w0)
	later := w0.Add(2 * contentionWindow)
	gotB := mustQueue(g, b, later)
	if n := g.active(); n != 2 {
		t.Fatalf("active tenants = %d with a's requests running and b waiting, want 2", n)
	}
	g.release(a, 0)
	if err := <-gotB; err != nil {
		t.Fatal(err)
	}
	select {
	case <-moreA:
		t.Fatal("a, with a request running, got a second slot while b was active")
	default:
	}
	g.release(b, 0)
	g.release(a, 0)
	if err := <-moreA; err != nil {
		t.Fatal(err)
	}
	g.release(a, 0)

	// a's last request at the end of a window, b's at the start of the
	// next: both are active.
	g = newGate(2, 2, 1, 100, 100, 0)
	a, b = &flow{tenant: tid(1)}, &flow{tenant: tid(2)}
	end := w0.Add(contentionWindow - time.Millisecond)
	mustRun(g, a, end)
	g.release(a, 0)
	mustRun(g, b, end.Add(2*time.Millisecond))
	if n := g.active(); n != 2 {
		t.Fatalf("active tenants = %d across a window boundary, want 2", n)
	}
	mustRun(g, a, end.Add(3*time.Millisecond)) // a second window for a: counted once
	if n := g.active(); n != 2 {
		t.Fatalf("active tenants = %d after a's second request, want 2", n)
	}
	g.release(a, 0)
	// A time read before the boundary, locked after it, changes nothing.
	mustRun(g, a, end)
	if n := g.active(); n != 2 || g.window != end.Add(2*time.Millisecond).UnixNano()/int64(contentionWindow) {
		t.Fatalf("a late time moved the window: active %d", n)
	}
	g.release(a, 0)
	g.release(b, 0)
	if g.busy.Len() != 0 {
		t.Fatalf("%d flows busy after every release", g.busy.Len())
	}
}
