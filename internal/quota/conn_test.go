package quota

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// acquireConnAsync starts AcquireConn for t and returns a channel that
// receives its release (or nil on error) once it is granted.
func acquireConnAsync(t *testing.T, m *Manager, ctx context.Context, tenant tenancy.TenantID) <-chan func() {
	t.Helper()
	ch := make(chan func(), 1)
	_, before := m.conns.stats()
	go func() {
		rel, err := m.AcquireConn(ctx, tenant)
		if err != nil {
			ch <- nil
			return
		}
		ch <- rel
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, q := m.conns.stats(); q > before {
			return ch
		}
		select {
		case rel := <-ch:
			t.Fatalf("AcquireConn for %v did not wait (granted: %v)", tenant, rel != nil)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("AcquireConn neither waited nor returned")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func mustAcquireConn(t *testing.T, m *Manager, tenant tenancy.TenantID) func() {
	t.Helper()
	rel, err := m.AcquireConn(context.Background(), tenant)
	if err != nil {
		t.Fatalf("AcquireConn(%v): %v", tenant, err)
	}
	return rel
}

// TestConnGateShare: a tenant alone may use every slot; once another
// tenant waits, a freed slot goes to the other tenant, not to the tenant
// already over its share.
func TestConnGateShare(t *testing.T) {
	m := newManager(t, Options{DB: memDB(t), ConnInflight: 4, ConnTenantInflight: 1})
	a, b := tid(1), tid(2)
	var held []func()
	for i := 0; i < 4; i++ {
		held = append(held, mustAcquireConn(t, m, a))
	}
	moreA := acquireConnAsync(t, m, context.Background(), a)
	gotB := acquireConnAsync(t, m, context.Background(), b)
	held[0]()
	select {
	case rel := <-gotB:
		rel()
	case <-time.After(5 * time.Second):
		t.Fatal("tenant b did not get the freed slot")
	}
	select {
	case <-moreA:
		t.Fatal("tenant a, over its share, got a slot while b was waiting")
	default:
	}
	for _, rel := range held[1:] {
		rel()
	}
	select {
	case rel := <-moreA:
		rel()
	case <-time.After(5 * time.Second):
		t.Fatal("tenant a's waiter was never granted")
	}
	if in, q := m.conns.stats(); in != 0 || q != 0 {
		t.Fatalf("after all releases: inflight %d, queued %d; want 0, 0", in, q)
	}
}

// TestConnGateNeedsATenant: connections not bound to a tenant are not
// gated (the server does not call AcquireConn for them); a call with the
// zero tenant is an error, not a slot.
func TestConnGateNeedsATenant(t *testing.T) {
	m := newManager(t, Options{DB: memDB(t), ConnInflight: 1})
	if rel, err := m.AcquireConn(context.Background(), tenancy.TenantID{}); err == nil {
		rel()
		t.Fatal("AcquireConn with the zero tenant granted a slot")
	}
	if in, q := m.conns.stats(); in != 0 || q != 0 {
		t.Fatalf("inflight %d, queued %d; want 0, 0", in, q)
	}
}

// TestConnGateShedAndCancel: a wait longer than ConnQueueTimeout is shed
// with ErrConnShed; a cancelled wait returns ctx's error; neither keeps a
// slot.
func TestConnGateShedAndCancel(t *testing.T) {
	m := newManager(t, Options{DB: memDB(t), ConnInflight: 1, ConnQueueTimeout: 20 * time.Millisecond})
	rel := mustAcquireConn(t, m, tid(1))
	if _, err := m.AcquireConn(context.Background(), tid(2)); !errors.Is(err, ErrConnShed) {
		t.Fatalf("AcquireConn past the timeout: got %v, want ErrConnShed", err)
	}
	rel()
	if in, q := m.conns.stats(); in != 0 || q != 0 {
		t.Fatalf("after the shed wait: inflight %d, queued %d; want 0, 0", in, q)
	}

	// NB: the cancellation must win against the queue timeout however
	// slowly the goroutines run, so this gate's timeout is out of reach
	// and the wait is cancelled only once it is queued.
	m = newManager(t, Options{DB: memDB(t), ConnInflight: 1, ConnQueueTimeout: time.Hour})
	rel = mustAcquireConn(t, m, tid(1))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.AcquireConn(ctx, tid(2))
		errc <- err
	}()
	waitQueued(t, m, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled AcquireConn: got %v, want context.Canceled", err)
	}
	rel()
	if in, q := m.conns.stats(); in != 0 || q != 0 {
		t.Fatalf("inflight %d, queued %d; want 0, 0", in, q)
	}
}

// waitQueued waits until n connections wait in m's connection gate.
func waitQueued(t *testing.T, m *Manager, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, q := m.conns.stats(); q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections never waited in the gate", n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestConnGateDisabled(t *testing.T) {
	m := newManager(t, Options{DB: memDB(t), Disabled: true, ConnInflight: 1})
	for i := 0; i < 3; i++ {
		if _, err := m.AcquireConn(context.Background(), tid(1)); err != nil {
			t.Fatal(err)
		}
	}
}
