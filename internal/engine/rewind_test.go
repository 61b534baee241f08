package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// rewindTable creates shared table name with a GSI on "g" and turns
// point-in-time recovery on for each actor.
func rewindTable(t *testing.T, env *testEnv, name string, actors ...testActor) {
	t.Helper()
	in := tableInput(name, false)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "g", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
		Projection: &wire.Projection{ProjectionType: "ALL"}}}
	env.operator().create(in)
	for _, a := range actors {
		_, err := env.e.UpdateContinuousBackups(testCtx, a.scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: name,
			PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(true)}})
		noErr(t, err)
	}
}

func (a testActor) setVG(table, pk, v string) {
	a.env.t.Helper()
	a.put(table, itemOf(a.env.t, fmt.Sprintf(`{"pk":{"S":%q},"v":{"S":%q},"g":{"S":%q}}`, pk, v, "G"+v[len(v)-1:])))
}

// modelLines is a model state as allItems shows it.
func modelLines(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func copyModel(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// checkIndex says the GSI entries and the counters of a's view of table
// agree with its items.
func checkRewoundIndex(t *testing.T, a testActor, table string, m map[string]string) {
	t.Helper()
	var want []string
	for k, v := range m {
		want = append(want, k+"=G"+v[len(v)-1:])
	}
	var got []string
	for _, it := range a.indexEntries(table, 1) {
		got = append(got, it["pk"].S+"="+it["g"].S)
	}
	sameLines(t, "index entries", sortedCopy(got), want)
	if n, _ := a.counters(table, 0); n != int64(len(m)) {
		t.Errorf("item counter %d, want %d", n, len(m))
	}
	if n, _ := a.counters(table, 1); n != int64(len(m)) {
		t.Errorf("index counter %d, want %d", n, len(m))
	}
}

func rewind(t *testing.T, env *testEnv, a testActor, at time.Time, tables ...string) Rewind {
	t.Helper()
	r, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), at, tables, "test")
	noErr(t, err)
	env.clock.Set(env.clock.Now().Add(5 * time.Millisecond))
	r, err = env.e.RunRewind(testCtx, a.scope("RestoreTableToPointInTime"), nil)
	noErr(t, err)
	env.clock.Set(env.clock.Now().Add(5 * time.Millisecond))
	return r
}

// TestRewindToModel: a randomized history of two tenants on a shared
// table with a GSI; restoring tenant A in place to past times gives A's
// model state at that time (items, index entries, counters), leaves B's
// items alone, and is undone by restoring to its UndoTo.
func TestRewindToModel(t *testing.T) {
	env := streamsOpen(t)
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	rewindTable(t, env, "Hist", a, b)
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	rng := rand.New(rand.NewSource(7))
	model := [2]map[string]string{{}, {}}
	type point struct {
		at time.Time
		m  map[string]string
	}
	var history []point
	for step := 0; step < 150; step++ {
		env.clock.Set(env.clock.Now().Add(time.Duration(20+rng.Intn(200)) * time.Millisecond))
		tn := rng.Intn(2)
		x := []testActor{a, b}[tn]
		pk := fmt.Sprintf("k%d", rng.Intn(15))
		if _, ok := model[tn][pk]; ok && rng.Intn(3) == 0 {
			x.del("Hist", pk)
			delete(model[tn], pk)
		} else {
			v := fmt.Sprint(step)
			x.setVG("Hist", pk, v)
			model[tn][pk] = v
		}
		if tn == 0 {
			history = append(history, point{env.clock.Now(), copyModel(model[0])})
		}
	}
	env.clock.Set(env.clock.Now().Add(time.Second))
	now := copyModel(model[0])
	for _, i := range []int{len(history) / 2, 3, len(history) - 2, 0} {
		p := history[i]
		r := rewind(t, env, a, p.at.Add(time.Millisecond))
		sameLines(t, fmt.Sprintf("A at step %d", i), a.allItems("Hist"), modelLines(p.m))
		checkRewoundIndex(t, a, "Hist", p.m)
		sameLines(t, "B", b.allItems("Hist"), modelLines(model[1]))
		if r.State != RewindDone || len(r.Tables) != 1 || !r.Tables[0].Done {
			t.Fatalf("record: %+v", r)
		}
		// Undo.
		rewind(t, env, a, r.UndoTo)
		sameLines(t, "A after undo", a.allItems("Hist"), modelLines(now))
		checkRewoundIndex(t, a, "Hist", now)
	}
	// Restore then carry on writing: later restores still see the
	// history, the restore's own changes included.
	p := history[10]
	r1 := rewind(t, env, a, p.at.Add(time.Millisecond))
	a.setVG("Hist", "after", "z9")
	mid := copyModel(p.m)
	mid["after"] = "z9"
	rewind(t, env, a, r1.UndoTo)
	sameLines(t, "A back to before the first restore", a.allItems("Hist"), modelLines(now))
	rewind(t, env, a, env.clock.Now().Add(-time.Millisecond))
	sameLines(t, "A at now (no change)", a.allItems("Hist"), modelLines(now))
}

// TestRewindFence: while a tenant's restore runs, its reads and writes
// of the table are refused with ResourceInUse, another tenant's of the
// same shared table go on, and the fence and the record survive a
// restart (kill -9 after the start: reopen), after which the restore
// finishes exactly, also when an earlier attempt stopped halfway.
func TestRewindFence(t *testing.T) {
	env := streamsOpen(t)
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	rewindTable(t, env, "TTT", a, b)
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	want := map[string]string{}
	for i := 0; i < 450; i++ {
		a.setVG("TTT", fmt.Sprintf("k%03d", i), fmt.Sprint(i))
		want[fmt.Sprintf("k%03d", i)] = fmt.Sprint(i)
	}
	env.clock.Set(env.clock.Now().Add(time.Second))
	at := env.clock.Now()
	env.clock.Set(env.clock.Now().Add(time.Second))
	for i := 0; i < 450; i++ {
		if i%2 == 0 {
			a.del("TTT", fmt.Sprintf("k%03d", i))
		} else {
			a.setVG("TTT", fmt.Sprintf("k%03d", i), "x"+fmt.Sprint(i))
		}
		a.setVG("TTT", fmt.Sprintf("n%03d", i), "1")
	}
	b.setVG("TTT", "b1", "1")
	env.clock.Set(env.clock.Now().Add(time.Second))

	r, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), at, nil, "test")
	noErr(t, err)
	if len(r.Tables) != 1 || r.Tables[0].Name != "TTT" || r.UndoTo.IsZero() {
		t.Fatalf("BeginRewind: %+v", r)
	}
	// An unfinished restore not running is replaced by a new one, which
	// keeps its undo point.
	r2, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), at, nil, "test")
	noErr(t, err)
	if r2.ID == r.ID || !r2.UndoTo.Equal(r.UndoTo) {
		t.Fatalf("replacing restore: %+v, first %+v", r2, r)
	}
	r = r2
	fencedOps := func() {
		t.Helper()
		_, err := env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "TTT", Item: itemOf(t, `{"pk":{"S":"k001"}}`)})
		wantErr(t, err, apierr.ResourceInUse, "being restored")
		_, err = env.e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "TTT", Key: itemOf(t, `{"pk":{"S":"k001"}}`)})
		wantErr(t, err, apierr.ResourceInUse, "being restored")
		b.setVG("TTT", "b2", "2") // another tenant of the table goes on
	}
	fencedOps()

	// kill -9 before any write; then an attempt stopped halfway.
	env.clock.Set(env.clock.Now().Add(time.Second))
	env.reopen()
	fencedOps()
	pend, err := env.e.PendingRewinds()
	noErr(t, err)
	if len(pend) != 1 || pend[0].ID != r.ID {
		t.Fatalf("PendingRewinds: %+v", pend)
	}
	ctx, cancel := context.WithCancel(testCtx)
	once := false
	_, err = env.e.RunRewind(ctx, a.scope("RestoreTableToPointInTime"), func(p Rewind) {
		if !once {
			once = true
			_, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), at, nil, "test")
			wantErr(t, err, apierr.ResourceInUse, "is running")
			_, err = env.e.RunRewind(testCtx, a.scope("RestoreTableToPointInTime"), nil)
			wantErr(t, err, apierr.ResourceInUse, "running already")
		}
		if p.Tables[0].Checked >= 300 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunRewind cancelled: %v", err)
	}
	env.reopen()
	fencedOps()
	env.clock.Set(env.clock.Now().Add(time.Second))
	done, err := env.e.RunRewind(testCtx, a.scope("RestoreTableToPointInTime"), nil)
	noErr(t, err)
	if done.State != RewindDone || done.Tables[0].Keys != 900 || done.Tables[0].Changed == 0 || done.Tables[0].Changed >= 900 {
		t.Fatalf("resumed restore: %+v", done.Tables)
	}
	sameLines(t, "A restored", a.allItems("TTT"), modelLines(want))
	checkRewoundIndex(t, a, "TTT", want)
	sameLines(t, "B", b.allItems("TTT"), []string{"b1=1", "b2=2"})
	st, ok, err := env.e.RewindStatus(testCtx, a.scope("RestoreTableToPointInTime"))
	noErr(t, err)
	if !ok || st.ID != r.ID || st.State != RewindDone {
		t.Fatalf("RewindStatus: %+v %v", st, ok)
	}
	if _, ok, _ := env.e.RewindStatus(testCtx, b.scope("RestoreTableToPointInTime")); ok {
		t.Fatal("B sees A's restore")
	}
	a.setVG("TTT", "k001", "ok")
}

// TestRewindNeedsHistory: a table without point-in-time recovery, or a
// time before its history, is refused naming the tables and the earliest
// restorable time; a table the tenant never wrote is skipped; the
// operator is refused.
func TestRewindNeedsHistory(t *testing.T) {
	env := streamsOpen(t)
	a := env.tenant(tenancy.RoleAdmin)
	rewindTable(t, env, "WithPITR", a)
	env.operator().create(tableInput("NoPITR", false))
	env.operator().create(tableInput("Untouched", false))
	start := env.clock.Now()
	env.clock.Set(start.Add(3 * time.Second))
	a.setVG("WithPITR", "k", "1")
	a.setV("NoPITR", "k", "1")
	env.clock.Set(start.Add(4 * time.Second))
	_, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), start.Add(3500*time.Millisecond), nil, "test")
	wantErr(t, err, apierr.PointInTimeRecoveryUnavailable, "NoPITR")
	if strings.Contains(apierr.Message(err), "WithPITR") || strings.Contains(apierr.Message(err), "Untouched") {
		t.Errorf("names a table that has history or no data: %v", err)
	}
	_, err = env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), start.Add(-time.Hour), []string{"WithPITR"}, "test")
	wantErr(t, err, apierr.InvalidRestoreTime, "WithPITR (earliest restorable time")
	_, err = env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), start.Add(time.Hour), []string{"WithPITR"}, "test")
	wantErr(t, err, apierr.Validation, "future")
	_, err = env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), start.Add(3500*time.Millisecond), []string{"Nope"}, "test")
	wantErr(t, err, apierr.ResourceNotFound, "")
	_, err = env.e.BeginRewind(testCtx, env.operator().scope("RestoreTableToPointInTime"), start, nil, "test")
	wantErr(t, err, apierr.AccessDenied, "")
	r, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), start.Add(2500*time.Millisecond), []string{"WithPITR", "Untouched"}, "test")
	noErr(t, err)
	if len(r.Tables) != 1 || len(r.Skipped) != 1 || r.Skipped[0] != "Untouched" {
		t.Fatalf("record: %+v", r)
	}
	a.setV("Untouched", "free", "1") // not fenced
	env.clock.Set(start.Add(5 * time.Second))
	_, err = env.e.RunRewind(testCtx, a.scope("RestoreTableToPointInTime"), nil)
	noErr(t, err)
	if got := a.allItems("WithPITR"); len(got) != 0 {
		t.Errorf("WithPITR at 2.5s: %v", got)
	}
}

// TestRewindSiloAndLeadingKeys: a tenant's own silo table (items and log
// in its silo store) and its view of a shared leading-keys table are
// restored in place in one restore; the other tenant's leading-keys items
// stay.
func TestRewindSiloAndLeadingKeys(t *testing.T) {
	env := streamsOpen(t)
	e := env.e
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	silo := tableInput("Silo", false)
	silo.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
	a.create(silo)
	createShared(t, e, "Lkeys", "pk:S", "", nil,
		wire.Tag{Key: tenancy.TagIsolation, Value: "leading-keys"}, wire.Tag{Key: tenancy.TagLeadingKeyPattern, Value: "TENANT#{tenant}|*"})
	lk := func(x testActor, k string) string { return "TENANT#" + x.p.Tenant.String() + "|" + k }
	for _, tbl := range []string{"Silo", "Lkeys"} {
		_, err := e.UpdateContinuousBackups(testCtx, a.scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: tbl,
			PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(true)}})
		noErr(t, err)
	}
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	a.setV("Silo", "s1", "1")
	a.setV("Lkeys", lk(a, "x"), "1")
	b.setV("Lkeys", lk(b, "x"), "b")
	env.clock.Set(env.clock.Now().Add(time.Second))
	t1 := env.clock.Now()
	env.clock.Set(env.clock.Now().Add(time.Second))
	a.setV("Silo", "s1", "2")
	a.setV("Silo", "s2", "2")
	a.del("Lkeys", lk(a, "x"))
	b.setV("Lkeys", lk(b, "y"), "b2")
	env.clock.Set(env.clock.Now().Add(time.Second))
	r := rewind(t, env, a, t1)
	if len(r.Tables) != 2 {
		t.Fatalf("tables %+v", r.Tables)
	}
	sameLines(t, "silo at T1", a.allItems("Silo"), []string{"s1=1"})
	sameLines(t, "leading-keys at T1", a.allItems("Lkeys"), []string{lk(a, "x") + "=1"})
	sameLines(t, "B's leading-keys items", b.allItems("Lkeys"), []string{lk(b, "x") + "=b", lk(b, "y") + "=b2"})
	rewind(t, env, a, r.UndoTo)
	sameLines(t, "silo undone", a.allItems("Silo"), []string{"s1=2", "s2=2"})
	sameLines(t, "leading-keys undone", a.allItems("Lkeys"), nil)
}

// TestRewindMetered: a restore's writes to the main store are charged to
// the tenant in their commit batches.
func TestRewindMetered(t *testing.T) {
	env := streamsOpen(t)
	m := &fakeMeter{}
	env.opts.Meter = m
	env.reopen()
	a := env.tenant(tenancy.RoleAdmin)
	rewindTable(t, env, "Metered", a)
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	at := env.clock.Now()
	env.clock.Set(env.clock.Now().Add(time.Second))
	for i := 0; i < 150; i++ {
		a.setVG("Metered", fmt.Sprintf("k%03d", i), "1")
	}
	m.take()
	rewind(t, env, a, at)
	var units float64
	for _, c := range m.take() {
		if c.tenant != a.p.Tenant || c.op != "RestoreTableToPointInTime" {
			t.Fatalf("metered %+v", c)
		}
		units += c.u.WriteUnits
	}
	if units < 300 { // 150 deletes of the item and its index entry
		t.Errorf("restore metered %v write units, want ≥ 300", units)
	}
}

// TestRewindTTL: while a tenant is being restored, the TTL sweep skips
// its items and expires the other tenants' as usual.
func TestRewindTTL(t *testing.T) {
	env := streamsOpen(t)
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	rewindTable(t, env, "Expiring", a)
	_, err := env.e.UpdateTimeToLive(testCtx, env.operator().scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Expiring",
		TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	noErr(t, err)
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	at := env.clock.Now()
	env.clock.Set(env.clock.Now().Add(time.Second))
	old := fmt.Sprintf(`{"pk":{"S":"old"},"v":{"S":"x"},"exp":{"N":"%d"}}`, env.clock.Now().Unix()-10)
	a.put("Expiring", itemOf(t, old))
	b.put("Expiring", itemOf(t, old))
	_, err = env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), at, nil, "test")
	noErr(t, err)
	noErr(t, env.e.sweep())
	if got := b.allItems("Expiring"); len(got) != 0 {
		t.Errorf("B's expired item not swept during A's restore: %v", got)
	}
	env.clock.Set(env.clock.Now().Add(5 * time.Millisecond))
	_, err = env.e.RunRewind(testCtx, a.scope("RestoreTableToPointInTime"), nil)
	noErr(t, err)
	if got := a.allItems("Expiring"); len(got) != 0 {
		t.Errorf("A at the restore time: %v", got)
	}
}

// TestRewindDoneUnfenced: a restore that RewindStatus reports done has
// lifted its fence, so the tenant's next read is served (a status read
// between the done record and the fence's removal answered done while
// reads were still refused).
func TestRewindDoneUnfenced(t *testing.T) {
	env := streamsOpen(t)
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	rewindTable(t, env, "Dfx", a, b)
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	for round := 0; round < 30; round++ {
		a.setVG("Dfx", "k", fmt.Sprint(round))
		env.clock.Set(env.clock.Now().Add(10 * time.Millisecond))
		at := env.clock.Now()
		env.clock.Set(env.clock.Now().Add(10 * time.Millisecond))
		a.setVG("Dfx", "k", "later")
		env.clock.Set(env.clock.Now().Add(10 * time.Millisecond))
		r, err := env.e.BeginRewind(testCtx, a.scope("RestoreTableToPointInTime"), at, nil, "test")
		noErr(t, err)
		ran := make(chan error, 1)
		go func() {
			_, err := env.e.RunRewind(testCtx, a.scope("RestoreTableToPointInTime"), nil)
			ran <- err
		}()
		for {
			st, ok, err := env.e.RewindStatus(testCtx, a.scope("RestoreTableToPointInTime"))
			noErr(t, err)
			if ok && st.ID == r.ID && st.State == RewindDone {
				break
			}
			runtime.Gosched()
		}
		_, err = env.e.GetItem(testCtx, a.scope("GetItem"), &wire.GetItemInput{TableName: "Dfx", Key: itemOf(t, `{"pk":{"S":"k"}}`)})
		if err != nil {
			t.Fatalf("round %d: a read right after the restore reads as done: %v", round, err)
		}
		noErr(t, <-ran)
		env.clock.Set(env.clock.Now().Add(10 * time.Millisecond))
	}
}
