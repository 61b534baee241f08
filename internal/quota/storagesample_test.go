package quota

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// fakeStorage is a StorageSource whose figures the test sets.
type fakeStorage struct {
	mu     sync.Mutex
	st     []TableStorage
	calls  int
	scopes []tenancy.Scope // the scopes it was called with
}

func (f *fakeStorage) TenantStorage(_ context.Context, s tenancy.Scope) ([]TableStorage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.scopes = append(f.scopes, s)
	return append([]TableStorage(nil), f.st...), nil
}

func (f *fakeStorage) set(st ...TableStorage) {
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
}

// Storage per table is sampled once per hour in which the tenant was
// active, and the report shows the samples by table and hour (summed over
// environments); an idle hour is not sampled.
func TestStorageSamples(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { storageSamples(t, false) })
	// A gateway keeps usage in the engine's control store.
	t.Run("control store", func(t *testing.T) { storageSamples(t, true) })
}

func storageSamples(t *testing.T, control bool) {
	c := &clock{t: t0.Add(10 * time.Minute)}
	fs := &fakeStorage{}
	o := Options{DB: memDB(t), Now: c.now, Storage: fs, FlushInterval: time.Hour}
	a := tid(1)
	if control {
		ctl := kv.NewLocal(memDB(t))
		// NB: usage is written to the control store only while the
		// tenant's record is there.
		var b kv.Batch
		b.Set(keyspace.TenantRecord(a), []byte("{}"))
		if err := ctl.Apply(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		o.Control = ctl
	}
	m := newManager(t, o)
	ctx := context.Background()
	put := func() {
		t.Helper()
		if err := do(t, m, a, "PutItem", &wire.PutItemInput{TableName: "t"}, wire.Usage{WriteUnits: 1, Table: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	fs.set(TableStorage{Table: "t", Env: "live", Items: 1, Bytes: 100, IndexBytes: 20}, TableStorage{Table: "t", Env: "test", Items: 2, Bytes: 50})
	put()
	m.SampleStorage(ctx)
	// Sampled once an hour: more activity and samples in the hour change nothing.
	fs.set(TableStorage{Table: "t", Env: "live", Items: 9, Bytes: 900})
	put()
	m.SampleStorage(ctx)
	if fs.calls != 1 {
		t.Fatalf("%d storage reads in one hour, want 1", fs.calls)
	}
	c.add(time.Hour) // idle
	m.SampleStorage(ctx)
	c.add(time.Hour)
	put()
	m.SampleStorage(ctx)
	if fs.calls != 2 {
		t.Fatalf("%d storage reads over three hours (one idle), want 2", fs.calls)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := m.Usage(ctx, sys(a), t0, t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got []TableHourUsage
	for _, th := range r.TableHours {
		if th.Table == "t" {
			got = append(got, th)
		}
	}
	if len(got) != 2 {
		t.Fatalf("table hours of t: %+v", got)
	}
	if h := got[0]; !h.Hour.Equal(t0) || !h.Sampled || h.StorageBytes != 170 || h.Items != 3 || h.Requests != 2 {
		t.Errorf("first hour: %+v", h)
	}
	if h := got[1]; !h.Hour.Equal(t0.Add(2*time.Hour)) || !h.Sampled || h.StorageBytes != 900 || h.Items != 9 || h.Requests != 1 {
		t.Errorf("third hour: %+v", h)
	}
}

// TTL expiry in an hour without a request of the tenant samples its
// storage in that hour (engine.Options.Expired), once, as a request would.
func TestExpirySamplesIdleHour(t *testing.T) {
	c := &clock{t: t0.Add(10 * time.Minute)}
	fs := &fakeStorage{}
	m := newManager(t, Options{DB: memDB(t), Now: c.now, Storage: fs, FlushInterval: time.Hour})
	a := tid(1)
	ctx := context.Background()
	fs.set(TableStorage{Table: "t", Env: "live", Items: 5, Bytes: 500})
	if err := do(t, m, a, "PutItem", &wire.PutItemInput{TableName: "t"}, wire.Usage{WriteUnits: 1, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	m.SampleStorage(ctx)
	c.add(time.Hour) // no request; expiry deletes three items
	fs.set(TableStorage{Table: "t", Env: "live", Items: 2, Bytes: 200})
	m.Expired(a)
	m.Expired(a)
	m.SampleStorage(ctx)
	m.SampleStorage(ctx)
	if fs.calls != 2 {
		t.Fatalf("%d storage reads over two hours, want 2", fs.calls)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := m.Usage(ctx, sys(a), t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got []TableHourUsage
	for _, th := range r.TableHours {
		if th.Table == "t" {
			got = append(got, th)
		}
	}
	if len(got) != 2 {
		t.Fatalf("table hours of t: %+v", got)
	}
	if h := got[1]; !h.Hour.Equal(t0.Add(time.Hour)) || !h.Sampled || h.StorageBytes != 200 || h.Items != 2 || h.Requests != 0 {
		t.Errorf("the expiry's hour: %+v", h)
	}
}

// The hourly samples read with the server's own scope for the tenant,
// not with a request's: a tenant active only through TTL expiry since
// the start (no request yet) is sampled too, with the same scope, and a
// tenant being deleted (Forget) is not read at all.
func TestSamplesUseServerScope(t *testing.T) {
	c := &clock{t: t0.Add(10 * time.Minute)}
	fs := &fakeStorage{}
	m := newManager(t, Options{DB: memDB(t), Now: c.now, Storage: fs, FlushInterval: time.Hour})
	a, b, d := tid(1), tid(2), tid(3)
	ctx := context.Background()
	fs.set(TableStorage{Table: "t", Env: "live", Items: 5, Bytes: 500})
	req := scope(t, a, "PutItem")
	if err := do(t, m, a, "PutItem", &wire.PutItemInput{TableName: "t"}, wire.Usage{WriteUnits: 1, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	m.Expired(b) // b: no request since the start, only expiry
	m.Expired(d)
	m.Forget(d) // d: being deleted
	m.SampleStorage(ctx)
	fs.mu.Lock()
	got := append([]tenancy.Scope(nil), fs.scopes...)
	fs.mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d storage reads, want 2 (a's request, b's expiry; none of d, being deleted): %+v", len(got), got)
	}
	seen := map[tenancy.TenantID]bool{}
	for _, s := range got {
		seen[s.Tenant()] = true
		if !s.Valid() || s.KeyID() != "system:quota.storage" || s.Env() != "" || s.KeyID() == req.KeyID() {
			t.Errorf("tenant %v sampled with scope key %q env %q (valid %v), want the server's own (system:quota.storage, every environment)", s.Tenant(), s.KeyID(), s.Env(), s.Valid())
		}
	}
	if !seen[a] || !seen[b] || seen[d] {
		t.Errorf("sampled tenants %v, want %v and %v only", seen, a, b)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := m.Usage(ctx, sys(b), t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.TableHours) != 1 || !r.TableHours[0].Sampled || r.TableHours[0].StorageBytes != 500 || r.TableHours[0].Requests != 0 {
		t.Errorf("b's hour of expiry only: %+v", r.TableHours)
	}
}
