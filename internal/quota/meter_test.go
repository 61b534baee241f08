package quota

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// A write whose usage the engine did not commit with its items (a failed
// or silo write, DDL) has it in the store when Done returns (it is
// charged before the response); a read's waits in memory for the next
// flush. The report counts both either way.
func TestWritesChargedBeforeDone(t *testing.T) {
	c := &clock{t: t0}
	db := memDB(t)
	m := newManager(t, Options{DB: db, Now: c.now, FlushInterval: 1 << 40})
	a := tid(1)
	stored := func(name string) int64 {
		t.Helper()
		v, err := db.Counter(keyspace.Usage(a, hourOf(t0), name))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := do(t, m, a, "PutItem", &wire.PutItemInput{TableName: "t"}, wire.Usage{WriteUnits: 2, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := do(t, m, a, "GetItem", &wire.GetItemInput{TableName: "t"}, wire.Usage{ReadUnits: 0.5, Table: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name string
		want int64
	}{{"qPutItem", 1}, {"wPutItem", 2000}, {"Wt", 2000}, {"qGetItem", 0}, {"Rt", 0}} {
		if got := stored(x.name); got != x.want {
			t.Errorf("stored %s before a flush = %d, want %d", x.name, got, x.want)
		}
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := stored("qGetItem"); got != 1 {
		t.Errorf("stored qGetItem after a flush = %d, want 1", got)
	}
	if got := stored("Rt"); got != 500 {
		t.Errorf("stored Rt after a flush = %d, want 500", got)
	}
}

// A write whose usage the engine staged in its own commit batch
// (StageUsage, then Usage.Committed) is counted once: StageUsage writes
// what Done would have charged, and Done writes nothing more, while it
// still debits the tenant's buckets.
func TestStagedUsageCountedOnce(t *testing.T) {
	c := &clock{t: t0}
	db := memDB(t)
	m := newManager(t, Options{DB: db, Now: c.now, FlushInterval: 1 << 40})
	a := tid(1)
	stored := func(name string) int64 {
		t.Helper()
		v, err := db.Counter(keyspace.Usage(a, hourOf(t0), name))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	u := wire.Usage{WriteUnits: 3, Table: "t", PerTable: []wire.TableUnits{{Table: "t", Units: 2}, {Table: "u", Units: 1}}}
	b := db.NewBatch()
	m.StageUsage(b, scope(t, a, "BatchWriteItem"), "BatchWriteItem", u)
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	u.Committed = true
	if err := do(t, m, a, "BatchWriteItem", &wire.BatchWriteItemInput{}, u); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name string
		want int64
	}{{"qBatchWriteItem", 1}, {"wBatchWriteItem", 3000}, {"Wt", 2000}, {"Wu", 1000}} {
		if got := stored(x.name); got != x.want {
			t.Errorf("stored %s = %d, want %d", x.name, got, x.want)
		}
	}
	st, err := m.state(a)
	if err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	debits := st.debits
	st.mu.Unlock()
	if debits == 0 {
		t.Errorf("Done of a staged write debited nothing")
	}
	// The operator's requests are not metered.
	b = db.NewBatch()
	defer b.Close()
	m.StageUsage(b, scope(t, tenancy.TenantID{}, "CreateTable"), "PutItem", u)
	if b.Len() != 0 {
		t.Errorf("StageUsage for the operator staged %d bytes", b.Len())
	}
}
