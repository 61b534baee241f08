package resolve

import (
	"context"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// hookCatalog runs hook inside LoadOwned, after reading, as a Publish of
// this process racing with a refresh would.
type hookCatalog struct {
	*memCatalog
	hook func()
}

func (c *hookCatalog) LoadOwned(ctx context.Context, ns []byte) ([]*schema.Table, error) {
	tables, err := c.memCatalog.LoadOwned(ctx, ns)
	if c.hook != nil {
		h := c.hook
		c.hook = nil
		h()
	}
	return tables, err
}

func TestRefreshSeesOtherProcessesDDL(t *testing.T) {
	a := tenancy.NewTenantID()
	ns := string(Namespace(app(t, a, "GetItem")))
	cat := &memCatalog{shared: []*schema.Table{table(1, "Shared", tenancy.TenantID{})},
		owned: map[string][]*schema.Table{ns: {table(3, "Mine", a)}}}
	r, err := New(ctx, cat, Options{Region: "r", Account: "1", MaxTenantTables: 8, MaxStale: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := app(t, a, "GetItem")
	mine, err := r.Open(ctx, s, "Mine")
	if err != nil {
		t.Fatal(err)
	}
	// Another gateway creates a tenant table and a shared one, and drops Mine.
	cat.owned[ns] = []*schema.Table{table(3, "Mine", a), table(4, "Theirs", a)}
	cat.shared = append(cat.shared, table(2, "NewShared", tenancy.TenantID{}))
	time.Sleep(2 * time.Millisecond)
	for _, name := range []string{"Theirs", "NewShared"} {
		if _, err := r.Open(ctx, s, name); err != nil {
			t.Errorf("%s created elsewhere, not seen after MaxStale: %v", name, err)
		}
	}
	again, _ := r.Open(ctx, s, "Mine")
	if again.Table != mine.Table {
		t.Errorf("an unchanged table got a new definition value")
	}
	cat.owned[ns] = []*schema.Table{table(4, "Theirs", a)}
	time.Sleep(2 * time.Millisecond)
	if _, err := r.Open(ctx, s, "Mine"); err == nil {
		t.Errorf("Mine dropped elsewhere is still resolved after MaxStale")
	}
	if r.ByID(3) != nil {
		t.Errorf("ByID still holds the dropped table")
	}
}

func TestRefreshKeepsOwnDDL(t *testing.T) {
	a := tenancy.NewTenantID()
	s := app(t, a, "GetItem")
	ns := string(Namespace(s))
	mem := &memCatalog{owned: map[string][]*schema.Table{ns: {table(3, "Mine", a)}}}
	cat := &hookCatalog{memCatalog: mem}
	r, err := New(ctx, cat, Options{Region: "r", Account: "1", MaxTenantTables: 8, MaxStale: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(ctx, s, "Mine"); err != nil {
		t.Fatal(err)
	}
	// This process creates New while a refresh's load (which predates
	// it) is in flight.
	created := table(9, "New", a)
	cat.hook = func() {
		mem.owned[ns] = append(mem.owned[ns], created) // persisted, then published
		r.Publish(created)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := r.Open(ctx, s, "Mine"); err != nil {
		t.Fatal(err)
	}
	r.opts.MaxStale = time.Hour // no second refresh: New must have survived the first
	if _, err := r.Open(ctx, s, "New"); err != nil {
		t.Errorf("a table this process published during a refresh was forgotten: %v", err)
	}
}

func TestNoRefreshWithoutMaxStale(t *testing.T) {
	a := tenancy.NewTenantID()
	s := app(t, a, "GetItem")
	ns := string(Namespace(s))
	cat := &memCatalog{owned: map[string][]*schema.Table{ns: {table(3, "Mine", a)}}}
	r, err := New(ctx, cat, Options{Region: "r", Account: "1", MaxTenantTables: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(ctx, s, "Mine"); err != nil {
		t.Fatal(err)
	}
	cat.owned[ns] = nil
	time.Sleep(2 * time.Millisecond)
	if _, err := r.Open(ctx, s, "Mine"); err != nil || cat.loads != 1 {
		t.Errorf("the embedded resolver reloaded (%d loads, %v): its definitions change only by Publish", cat.loads, err)
	}
}
