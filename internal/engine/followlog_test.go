package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// followAll follows actor a's log of table from `from` until caught up;
// it returns the entries as "EVENT pk old -> new" and the end cursor.
func (a testActor) followAll(table string, from changelog.Cursor) ([]string, changelog.Cursor) {
	a.env.t.Helper()
	var out []string
	for i := 0; ; i++ {
		pg, err := a.env.e.FollowLog(testCtx, a.scope("GetRecords"), table, from, 3)
		if err != nil {
			a.env.t.Fatalf("FollowLog: %v", err)
		}
		for _, en := range pg.Entries {
			out = append(out, fmt.Sprintf("%s %s %s -> %s", en.Event, en.Keys["pk"].S, shortItem(en.Old), shortItem(en.New)))
		}
		from = pg.Next
		if pg.CaughtUp {
			return out, from
		}
		if i > 100_000 {
			a.env.t.Fatal("FollowLog never catches up")
		}
	}
}

func (a testActor) setV(table, pk, v string) {
	a.env.t.Helper()
	a.put(table, itemOf(a.env.t, fmt.Sprintf(`{"pk":{"S":%q},"v":{"S":%q}}`, pk, v)))
}

func (a testActor) del(table, pk string) {
	a.env.t.Helper()
	_, err := a.env.e.DeleteItem(testCtx, a.scope("DeleteItem"), &wire.DeleteItemInput{TableName: table, Key: itemOf(a.env.t, fmt.Sprintf(`{"pk":{"S":%q}}`, pk))})
	noErr(a.env.t, err)
}

func (a testActor) setStream(table string, enabled bool, view string) {
	a.env.t.Helper()
	spec := &wire.StreamSpecification{StreamEnabled: boolPtr(enabled)}
	if enabled {
		spec.StreamViewType = view
	}
	_, err := a.env.e.UpdateTable(testCtx, a.scope("UpdateTable"), &wire.UpdateTableInput{TableName: table, StreamSpecification: spec})
	noErr(a.env.t, err)
}

func (a testActor) streamARNs(table string) []string {
	a.env.t.Helper()
	out, err := a.env.e.ListStreams(testCtx, a.scope("ListStreams"), &wire.ListStreamsInput{TableName: table})
	noErr(a.env.t, err)
	var arns []string
	for _, s := range out.Streams {
		arns = append(arns, s.StreamArn)
	}
	return arns
}

// TestFollowLogAcrossStreamSwitches: a consumer's log goes on, one record
// per change, while the table's DynamoDB stream is off (hidden stream),
// on (the user's stream, widened to both images while it shows only
// keys), off and on again; the Streams API never shows the hidden
// stream and shows the user's stream's records as before; each tenant
// follows only its own changes of the shared table.
func TestFollowLogAcrossStreamSwitches(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	op.create(tableInput("Tbl", false))
	a, b := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	e := env.e

	a.setV("Tbl", "before", "0") // before any consumer: not in the log
	noErr(t, e.RetainLog(testCtx, a.scope("GetRecords"), "Tbl", "webhook:1"))
	noErr(t, e.RetainLog(testCtx, a.scope("GetRecords"), "Tbl", "webhook:1")) // idempotent
	tb := env.sharedTable("Tbl")
	if tb.HiddenStream == 0 || tb.LatestStream != 0 {
		t.Fatalf("after RetainLog: hidden %d, latest %d", tb.HiddenStream, tb.LatestStream)
	}
	hidden := tb.HiddenStream
	if d := a.describe("Tbl"); d.LatestStreamArn != "" || d.StreamSpecification != nil {
		t.Errorf("DescribeTable shows the hidden stream: %q %v", d.LatestStreamArn, d.StreamSpecification)
	}
	if arns := a.streamARNs("Tbl"); len(arns) != 0 {
		t.Errorf("ListStreams shows %v", arns)
	}
	forged := changelog.FormatStreamARN(e.opts.Region, e.opts.Account, "Tbl", changelog.Stream{Table: tb.ID, ID: hidden})
	_, err := e.DescribeStream(testCtx, a.scope("DescribeStream"), &wire.DescribeStreamInput{StreamArn: forged})
	wantErr(t, err, apierr.ResourceNotFound, "")

	var want []string
	a.setV("Tbl", "x", "1")
	b.setV("Tbl", "x", "b1")
	a.setV("Tbl", "x", "2")
	want = append(want, "INSERT x - -> 1", "MODIFY x 1 -> 2")
	got, cur := a.followAll("Tbl", changelog.Cursor{})
	wantRecords(t, got, want...)

	// The user enables a KEYS_ONLY stream: the consumer keeps both images.
	op.setStream("Tbl", true, "KEYS_ONLY")
	tb = env.sharedTable("Tbl")
	if tb.HiddenStream != 0 || tb.LatestStream == 0 || tb.LatestStream == hidden {
		t.Fatalf("after enabling: hidden %d, latest %d", tb.HiddenStream, tb.LatestStream)
	}
	if arns := a.streamARNs("Tbl"); len(arns) != 1 || !strings.HasSuffix(arns[0], a.describe("Tbl").LatestStreamLabel) {
		t.Errorf("ListStreams after enabling: %v", arns)
	}
	a.setV("Tbl", "x", "3")
	a.del("Tbl", "x")
	a.setV("Tbl", "y", "1")
	b.del("Tbl", "x")
	want = append(want, "MODIFY x 2 -> 3", "REMOVE x 3 -> -", "INSERT y - -> 1")
	wantRecords(t, a.records("Tbl"), "MODIFY x - -> -", "REMOVE x - -> -", "INSERT y - -> -") // what the Streams API shows
	got, cur = a.followAll("Tbl", cur)
	wantRecords(t, got, want[2:]...)

	// Disabled: the log goes on in a new hidden stream.
	op.setStream("Tbl", false, "")
	tb = env.sharedTable("Tbl")
	if tb.HiddenStream == 0 || tb.HiddenStream == hidden {
		t.Fatalf("after disabling: hidden %d", tb.HiddenStream)
	}
	if arns := a.streamARNs("Tbl"); len(arns) != 1 {
		t.Errorf("ListStreams after disabling: %v", arns)
	}
	a.setV("Tbl", "y", "2")
	// Enabled again (NEW_IMAGE): a new visible stream.
	op.setStream("Tbl", true, "NEW_IMAGE")
	a.setV("Tbl", "y", "3")
	want = append(want, "MODIFY y 1 -> 2", "MODIFY y 2 -> 3")
	got, _ = a.followAll("Tbl", cur)
	wantRecords(t, got, want[5:]...)
	if arns := a.streamARNs("Tbl"); len(arns) != 2 {
		t.Errorf("ListStreams after re-enabling: %v", arns)
	}
	wantRecords(t, a.records("Tbl"), "MODIFY y - -> 3")

	// From the start, across four streams: every change once, in order;
	// B follows only its own.
	got, _ = a.followAll("Tbl", changelog.Cursor{})
	wantRecords(t, got, want...)
	got, _ = b.followAll("Tbl", changelog.Cursor{})
	wantRecords(t, got, "INSERT x - -> b1", "REMOVE x b1 -> -")

	// Released while the user's stream is on: it goes on for the user,
	// narrowed back to its view type.
	noErr(t, e.ReleaseLog(testCtx, a.scope("GetRecords"), "Tbl", "webhook:1"))
	if tb = env.sharedTable("Tbl"); len(tb.LogConsumers) != 0 || tb.HiddenStream != 0 {
		t.Errorf("after ReleaseLog: consumers %v, hidden %d", tb.LogConsumers, tb.HiddenStream)
	}
	a.setV("Tbl", "y", "4")
	wantRecords(t, a.records("Tbl"), "MODIFY y - -> 3", "MODIFY y - -> 4")
}

// TestFollowLogConsumers: consumers of different tenants hold the log
// independently; the last release closes the hidden stream; the
// consumer set survives a restart.
func TestFollowLogConsumers(t *testing.T) {
	env := streamsOpen(t)
	env.operator().create(tableInput("Tbl", false))
	a, b := env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)
	e := env.e
	noErr(t, e.RetainLog(testCtx, a.scope("GetRecords"), "Tbl", "pitr"))
	noErr(t, e.RetainLog(testCtx, b.scope("GetRecords"), "Tbl", "pitr"))
	noErr(t, e.ReleaseLog(testCtx, b.scope("GetRecords"), "Tbl", "pitr"))
	noErr(t, e.ReleaseLog(testCtx, b.scope("GetRecords"), "Tbl", "pitr")) // idempotent
	a.setV("Tbl", "k", "1")

	env.reopen()
	e = env.e
	tb := env.sharedTable("Tbl")
	if len(tb.LogConsumers) != 1 || tb.LogConsumers[0].Tenant != a.p.Tenant || tb.HiddenStream == 0 {
		t.Fatalf("after restart: consumers %v, hidden %d", tb.LogConsumers, tb.HiddenStream)
	}
	a.setV("Tbl", "k", "2")
	got, cur := a.followAll("Tbl", changelog.Cursor{})
	wantRecords(t, got, "INSERT k - -> 1", "MODIFY k 1 -> 2")

	hidden := tb.HiddenStream
	noErr(t, e.ReleaseLog(testCtx, a.scope("GetRecords"), "Tbl", "pitr"))
	st, err := e.clog.Stream(tb.ID, hidden)
	noErr(t, err)
	if st.Enabled() {
		t.Error("the hidden stream is still enabled after the last release")
	}
	a.setV("Tbl", "k", "3") // no log now
	got, _ = a.followAll("Tbl", cur)
	wantRecords(t, got)

	for _, bad := range []string{"", strings.Repeat("x", 256), "a\nb"} {
		wantErr(t, e.RetainLog(testCtx, a.scope("GetRecords"), "Tbl", bad), apierr.Validation, "")
	}
	wantErr(t, e.RetainLog(testCtx, env.operator().scope("DescribeTable"), "Tbl", "pitr"), apierr.AccessDenied, "")
	_, err = e.FollowLog(testCtx, env.operator().scope("DescribeTable"), "Tbl", changelog.Cursor{}, 10)
	wantErr(t, err, apierr.AccessDenied, "")
	_, err = e.FollowLog(testCtx, a.scope("GetRecords"), "Tbl", changelog.Cursor{}, 0)
	wantErr(t, err, apierr.Validation, "")
	_, err = e.FollowLog(testCtx, a.scope("GetRecords"), "Nope", changelog.Cursor{}, 10)
	wantErr(t, err, apierr.ResourceNotFound, "")
}

// TestFollowLogTrimmedAndTimes: LogCursorAt positions by time; once
// retention trims what a cursor or a time needs, both say
// TrimmedDataAccess; a consumer's longer retention keeps the records.
func TestFollowLogTrimmedAndTimes(t *testing.T) {
	env := streamsOpen(t)
	env.operator().create(tableInput("Tbl", false))
	a := env.tenant(tenancy.RoleApp)
	e := env.e
	noErr(t, e.retainLog(testCtx, a.scope("GetRecords"), "Tbl", "pitr", 72*time.Hour, true))
	t0 := env.clock.Now()
	for i := 0; i < 6; i++ { // one change every 12 hours
		a.setV("Tbl", "k", fmt.Sprint(i))
		env.clock.Set(env.clock.Now().Add(12 * time.Hour))
	}
	env.e.trimChangeLog()
	got, _ := a.followAll("Tbl", changelog.Cursor{})
	if len(got) != 6 {
		t.Fatalf("with 72h retention, %d of 6 changes kept after 72h", len(got))
	}
	cur, err := e.LogCursorAt(testCtx, a.scope("GetRecords"), "Tbl", t0.Add(25*time.Hour))
	noErr(t, err)
	got, _ = a.followAll("Tbl", cur)
	wantRecords(t, got, "MODIFY k 2 -> 3", "MODIFY k 3 -> 4", "MODIFY k 4 -> 5")

	// Back to the default 24h: the older records go.
	noErr(t, e.retainLog(testCtx, a.scope("GetRecords"), "Tbl", "pitr", 0, true))
	env.e.trimChangeLog()
	_, err = e.FollowLog(testCtx, a.scope("GetRecords"), "Tbl", cur, 10)
	wantErr(t, err, apierr.TrimmedDataAccess, "")
	_, err = e.LogCursorAt(testCtx, a.scope("GetRecords"), "Tbl", t0)
	wantErr(t, err, apierr.TrimmedDataAccess, "")
	got, _ = a.followAll("Tbl", changelog.Cursor{})
	wantRecords(t, got, "MODIFY k 3 -> 4", "MODIFY k 4 -> 5") // made at the cutoff and after
}

// TestFollowLogUnderLoad: writers of two tenants, a toggler switching the
// DynamoDB stream on and off, and the clock crossing shard rollovers; a
// follower per tenant (FollowLog and WaitLog) sees exactly its tenant's
// committed changes, each once, in per-key order.
func TestFollowLogUnderLoad(t *testing.T) {
	const followGrace = time.Minute // for the followers to catch up once the writes end
	env := openEnv(t)
	env.e.Close()
	env.opts.Streams, env.opts.StreamRollover = true, time.Second
	env.e = env.open()
	op := env.operator()
	op.create(tableInput("Load", false))
	tenants := []testActor{env.tenant(tenancy.RoleApp), env.tenant(tenancy.RoleApp)}
	for _, a := range tenants {
		noErr(t, env.e.RetainLog(testCtx, a.scope("GetRecords"), "Load", "webhook:w"))
	}
	const writers, writes, keys = 4, 80, 3
	var committed [2]atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type seen struct{ recs []string }
	results := make([]seen, len(tenants))
	var fw sync.WaitGroup
	done := make(chan struct{})
	for i, a := range tenants {
		fw.Add(1)
		go func() {
			defer fw.Done()
			var cur changelog.Cursor
			for {
				pg, err := env.e.FollowLog(ctx, a.scope("GetRecords"), "Load", cur, 7)
				if err != nil && ctx.Err() != nil {
					t.Errorf("tenant %d: %d changes followed (to %v), %d committed, %v after the writes ended", i, len(results[i].recs), cur, committed[i].Load(), followGrace)
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				for _, en := range pg.Entries {
					results[i].recs = append(results[i].recs, en.Keys["pk"].S+"="+en.New["v"].S)
				}
				cur = pg.Next
				if pg.CaughtUp {
					select {
					case <-done:
						if int64(len(results[i].recs)) == committed[i].Load() {
							return
						}
					default:
					}
					wctx, wcancel := context.WithTimeout(ctx, 20*time.Millisecond)
					_ = env.e.WaitLog(wctx, a.scope("GetRecords"), "Load", cur)
					wcancel()
				}
			}
		}()
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := tenants[w%2]
			for i := 0; i < writes; i++ {
				pk := fmt.Sprintf("w%d-k%d", w, i%keys)
				a.setV("Load", pk, fmt.Sprint(i/keys))
				committed[w%2].Add(1)
				if i%10 == 0 {
					env.clock.Set(env.clock.Now().Add(400 * time.Millisecond))
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 6; i++ {
			op.setStream("Load", i%2 == 0, "KEYS_ONLY")
			time.Sleep(2 * time.Millisecond)
		}
	}()
	wg.Wait()
	close(done)
	// NB: a follower that misses or repeats a change never sees its count
	// and would follow forever: it stops, saying so, once ctx ends.
	stop := time.AfterFunc(followGrace, cancel)
	fw.Wait()
	stop.Stop()
	for i := range tenants {
		next := map[string]int{}
		for _, r := range results[i].recs {
			pk, v, _ := strings.Cut(r, "=")
			if !strings.HasPrefix(pk, fmt.Sprintf("w%d", i)) && !strings.HasPrefix(pk, fmt.Sprintf("w%d", i+2)) {
				t.Errorf("tenant %d follows another tenant's change %s", i, r)
			}
			if v != fmt.Sprint(next[pk]) {
				t.Errorf("tenant %d: %s where %s=%d was due", i, r, pk, next[pk])
			}
			next[pk]++
		}
		if got, want := int64(len(results[i].recs)), committed[i].Load(); got != want {
			t.Errorf("tenant %d followed %d changes, %d committed", i, got, want)
		}
	}
	streams, err := env.e.clog.Streams(env.sharedTable("Load").ID)
	noErr(t, err)
	if len(streams) < 5 {
		t.Errorf("%d streams: the test means to switch streams under load", len(streams))
	}
}

// TestStaleStreamsClosedOnLoad: a hidden stream left enabled by a crash
// between a log consumer switch and disabling the replaced stream (here
// made directly) is disabled when the engine opens (repairStreams); the
// table's own hidden stream is not, and the log goes on.
func TestStaleStreamsClosedOnLoad(t *testing.T) {
	env := streamsOpen(t)
	env.operator().create(tableInput("Tbl", false))
	a := env.tenant(tenancy.RoleApp)
	noErr(t, env.e.RetainLog(testCtx, a.scope("GetRecords"), "Tbl", "webhook:1"))
	tb := env.sharedTable("Tbl")
	stale, err := env.e.clog.Create(changelog.StreamConfig{Table: tb.ID, View: changelog.NewAndOldImage, Name: "Tbl", Hidden: true})
	noErr(t, err)
	env.reopen()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := env.e.clog.Stream(tb.ID, stale.ID)
		noErr(t, err)
		if !st.Enabled() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stale stream is still enabled after the table was loaded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	live, err := env.e.clog.Stream(tb.ID, tb.HiddenStream)
	noErr(t, err)
	if !live.Enabled() {
		t.Fatal("the table's own hidden stream was disabled")
	}
	a.setV("Tbl", "k", "1")
	got, _ := a.followAll("Tbl", changelog.Cursor{})
	wantRecords(t, got, "INSERT k - -> 1")
}
