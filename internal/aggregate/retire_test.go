package aggregate

import (
	"context"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// holdPage makes the next page with entries that the worker reads wait:
// read receives once the worker holds it, and it goes on when release is
// closed.
func holdPage(l *fakeLog) (read chan struct{}, release chan struct{}) {
	read, release = make(chan struct{}), make(chan struct{})
	l.mu.Lock()
	l.onPage = func() {
		l.mu.Lock()
		l.onPage = nil
		l.mu.Unlock()
		read <- struct{}{}
		<-release
	}
	l.mu.Unlock()
	return read, release
}

func deleteTenantRange(t *testing.T, db *storage.DB) {
	t.Helper()
	lo, hi := keyspace.TenantRange(tenant)
	b := db.NewBatch()
	defer b.Close()
	b.DeleteRange(lo, hi)
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
}

func rangeKeys(t *testing.T, db *storage.DB) int {
	t.Helper()
	lo, hi := keyspace.TenantRange(tenant)
	it := db.NewIter(lo, hi)
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

func recv(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen within 10 s", what)
	}
}

// TestNoWriteIntoDeletedRange: a worker that read a page before its
// tenant's range was deleted writes nothing back into the range (its
// groups and progress would outlive the tenant), and stops.
func TestNoWriteIntoDeletedRange(t *testing.T) {
	ctx := context.Background()
	db := memDB(t)
	l := newFakeLog("tickets")
	s := openService(t, db, l, nil)
	defer s.Close()
	d := Definition{Name: "by-status", Table: "tickets", GroupBy: "status", Count: true}
	if _, err := s.Create(ctx, testScope(), d); err != nil {
		t.Fatal(err)
	}
	l.put("t1", ticket("OPEN", "1"))
	waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))

	read, release := holdPage(l)
	l.put("t2", ticket("OPEN", "1"))
	recv(t, read, "the worker's read of t2")
	deleteTenantRange(t, db)
	s.mu.Lock()
	w := s.workers[workerKey(ns(), d.Name)]
	s.mu.Unlock()
	close(release)
	stopped := false
	select {
	case <-w.done:
		stopped = true
	case <-time.After(5 * time.Second):
	}
	if n := rangeKeys(t, db); n != 0 {
		t.Errorf("%d keys in the deleted tenant's range after its aggregate's worker went on", n)
	}
	if !stopped {
		t.Error("the worker of an aggregate whose range was deleted did not stop")
	}
}

// TestRetireTenantFencesWorkers: once RetireTenant returns, a worker that
// was folding a page has written nothing (the deletion of the range may
// follow at once); UnretireTenant starts it again and it folds the page.
func TestRetireTenantFencesWorkers(t *testing.T) {
	ctx := context.Background()
	db := memDB(t)
	l := newFakeLog("tickets")
	s := openService(t, db, l, nil)
	defer s.Close()
	d := Definition{Name: "by-status", Table: "tickets", GroupBy: "status", Count: true}
	if _, err := s.Create(ctx, testScope(), d); err != nil {
		t.Fatal(err)
	}
	l.put("t1", ticket("OPEN", "1"))
	before := waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))

	read, release := holdPage(l)
	l.put("t2", ticket("OPEN", "1"))
	recv(t, read, "the worker's read of t2")
	retired := make(chan struct{})
	go func() {
		s.RetireTenant(tenant)
		close(retired)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.fence.RLock()
		r := s.retired[tenant]
		s.fence.RUnlock()
		if r {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("RetireTenant did not retire the tenant")
		}
	}
	close(release) // the worker goes on to write t2's fold
	recv(t, retired, "RetireTenant's return")
	p, err := s.st.progress(ns(), d.Name)
	if err != nil {
		t.Fatal(err)
	}
	if p.Applied != before.Applied || p.Cursor != before.Cursor {
		t.Fatalf("a retired tenant's worker wrote its progress: applied %d cursor %s, before %d %s", p.Applied, p.Cursor, before.Applied, before.Cursor)
	}
	if _, err := s.Create(ctx, testScope(), Definition{Name: "other", Table: "tickets", GroupBy: "status", Count: true}); err == nil {
		t.Error("an aggregate was created for a retired tenant")
	}

	s.UnretireTenant(tenant)
	in := waitFor(t, s, d.Name, caughtUpTo(l, l.recount(t, d)))
	if in.Applied != before.Applied+1 {
		t.Errorf("applied = %d after the tenant was unretired, want %d", in.Applied, before.Applied+1)
	}
}

// ns is the namespace of testScope.
func ns() []byte {
	_, _, n := namespace(testScope())
	return n
}
