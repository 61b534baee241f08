package webhook

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// fakeLog is an in-memory change log with the consumer API's contract:
// per scope (tenant and environment) and table, entries in sequence order.
type fakeLog struct {
	mu       sync.Mutex
	tables   map[string]bool // "tenant/env/table" that exist
	entries  map[string][]changelog.Entry
	seq      map[string]uint64 // per "tenant/env"
	retained map[string]bool   // "tenant/env/table/consumer"
	changed  chan struct{}
	follows  atomic.Int64 // FollowLog calls
	// beforeFollow, if set, runs at the start of every FollowLog (before
	// the read), outside the lock.
	beforeFollow atomic.Pointer[func()]
}

func newFakeLog() *fakeLog {
	return &fakeLog{tables: map[string]bool{}, entries: map[string][]changelog.Entry{}, seq: map[string]uint64{},
		retained: map[string]bool{}, changed: make(chan struct{})}
}

func fkey(t tenancy.TenantID, env, table string) string { return t.String() + "/" + env + "/" + table }

func (f *fakeLog) addTable(t tenancy.TenantID, env, table string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tables[fkey(t, env, table)] = true
}

// put appends a change of item (pk, sk) of table.
func (f *fakeLog) put(t tenancy.TenantID, env, table string, ev changelog.Event, oldImg, newImg attr.Item) changelog.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	ns := t.String() + "/" + env
	f.seq[ns]++
	n := f.seq[ns]
	img := newImg
	if img == nil {
		img = oldImg
	}
	keys := attr.Item{"pk": img["pk"], "sk": img["sk"]}
	e := changelog.Entry{
		Record:         changelog.Record{Seq: n, Event: ev, Time: time.Now(), Keys: keys, Old: oldImg, New: newImg},
		Stream:         1,
		Next:           changelog.Cursor{Stream: 1, Seq: n},
		EventID:        fmt.Sprintf("ev-%s-%d", ns, n),
		SequenceNumber: changelog.FormatSequenceNumber(changelog.Position{Seq: n}),
	}
	k := fkey(t, env, table)
	f.entries[k] = append(f.entries[k], e)
	close(f.changed)
	f.changed = make(chan struct{})
	return e
}

func (f *fakeLog) check(s tenancy.Scope, table string) error {
	if !f.tables[fkey(s.Tenant(), s.Env(), table)] {
		return apierr.New(apierr.ResourceNotFound, "Requested resource not found: Table: %s not found", table)
	}
	return nil
}

func (f *fakeLog) RetainLog(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(s, table); err != nil {
		return err
	}
	f.retained[fkey(s.Tenant(), s.Env(), table)+"/"+consumer] = true
	return nil
}

func (f *fakeLog) ReleaseLog(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.retained, fkey(s.Tenant(), s.Env(), table)+"/"+consumer)
	return nil
}

func (f *fakeLog) FollowLog(ctx context.Context, s tenancy.Scope, table string, from changelog.Cursor, limit int) (changelog.FollowPage, error) {
	if fn := f.beforeFollow.Load(); fn != nil {
		(*fn)()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(s, table); err != nil {
		return changelog.FollowPage{}, err
	}
	f.follows.Add(1)
	pg := changelog.FollowPage{Next: from}
	es := f.entries[fkey(s.Tenant(), s.Env(), table)]
	i := 0
	for i < len(es) && es[i].Seq <= from.Seq {
		i++
	}
	for ; i < len(es) && len(pg.Entries) < limit; i++ {
		pg.Entries = append(pg.Entries, es[i])
		pg.Next = es[i].Next
	}
	pg.CaughtUp = i == len(es)
	return pg, nil
}

func (f *fakeLog) WaitLog(ctx context.Context, s tenancy.Scope, table string, from changelog.Cursor) error {
	f.mu.Lock()
	es := f.entries[fkey(s.Tenant(), s.Env(), table)]
	if len(es) > 0 && es[len(es)-1].Seq > from.Seq {
		f.mu.Unlock()
		return nil
	}
	ch := f.changed
	f.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeLog) LogCursorAt(ctx context.Context, s tenancy.Scope, table string, t time.Time) (changelog.Cursor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(s, table); err != nil {
		return changelog.Cursor{}, err
	}
	c := changelog.Cursor{Stream: 1}
	for _, e := range f.entries[fkey(s.Tenant(), s.Env(), table)] {
		if !e.Time.Before(t) {
			break
		}
		c = e.Next
	}
	return c, nil
}

var _ Log = (*fakeLog)(nil)
