package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// receiver is an httptest endpoint that verifies signatures and records
// the records it accepted; respond chooses each answer.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	got     []Record
	calls   atomic.Int64
	bad     atomic.Int64 // deliveries with no valid signature
	respond func(n int64) int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{t: t, respond: func(int64) int { return 200 }}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := rc.calls.Add(1)
		rc.mu.Lock()
		secrets := rc.secrets
		rc.mu.Unlock()
		ok := false
		for _, s := range secrets {
			ok = ok || Verify(r.Header.Get(SignatureHeader), body, s, time.Now(), 5*time.Minute)
		}
		if !ok {
			rc.bad.Add(1)
			w.WriteHeader(401)
			return
		}
		code := rc.respond(n)
		if code >= 200 && code < 300 {
			var ev Event
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Errorf("body is not a Lambda event: %v", err)
			}
			rc.mu.Lock()
			rc.got = append(rc.got, ev.Records...)
			rc.mu.Unlock()
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) trust(secret string) {
	rc.mu.Lock()
	rc.secrets = append(rc.secrets, secret)
	rc.mu.Unlock()
}

func (rc *receiver) records() []Record {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Record(nil), rc.got...)
}

func (rc *receiver) waitRecords(n int) []Record {
	rc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := rc.records(); len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := rc.records()
	rc.t.Fatalf("receiver got %d records, want %d", len(got), n)
	return got
}

type fixture struct {
	m   *Manager
	log *fakeLog
	db  *storage.DB
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{log: newFakeLog(), db: db}
	o.DB, o.Log = db, f.log
	if o.SecretKey == nil {
		o.SecretKey = make([]byte, 32)
	}
	if o.BackoffMin == 0 {
		o.BackoffMin, o.BackoffMax = 5*time.Millisecond, 20*time.Millisecond
	}
	f.m, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.m.Close() })
	return f
}

// adminScope returns the scope the guard admits an admin key of tenant t
// in env to on t's routes (the operator's if env is "").
func adminScope(t *testing.T, tenant tenancy.TenantID, env string) tenancy.Scope {
	t.Helper()
	var g tenancy.Guard
	p := tenancy.Principal{Tenant: tenant, Env: env, Role: tenancy.RoleAdmin, KeyID: "k"}
	if env == "" {
		p = tenancy.Principal{Role: tenancy.RoleOperator, Env: "live", KeyID: "op"}
	}
	s, err := g.AdmitAdmin(p, tenancy.AdminTenant, "test", tenant)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func item(pk, sk string, kv ...string) attr.Item {
	it := attr.Item{"pk": attr.Str(pk), "sk": attr.Str(sk)}
	for i := 0; i+1 < len(kv); i += 2 {
		it[kv[i]] = attr.Str(kv[i+1])
	}
	return it
}

func TestDeliverOutboxFilteredSignedInOrder(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	rc := newReceiver(t)
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "orders")
	s := adminScope(t, tenant, "live")
	v, err := f.m.Create(ctx, s, CreateInput{Table: "orders", URL: rc.srv.URL, Filter: "begins_with(sk, :o)",
		FilterValues: json.RawMessage(`{":o":{"S":"OUTBOX#"}}`), BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.Secret, "whsec_") || v.State != Active || v.Env != "live" {
		t.Fatalf("created %+v", v)
	}
	rc.trust(v.Secret)
	for i := range 10 {
		f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("ORDER#1", "STATUS", "n", string(rune('a'+i))))
		f.log.put(tenant, "live", "orders", changelog.Insert, nil, item("ORDER#1", "OUTBOX#"+string(rune('a'+i))))
	}
	// A REMOVE of an outbox item is matched on its old image.
	f.log.put(tenant, "live", "orders", changelog.Remove, item("ORDER#1", "OUTBOX#a"), nil)
	got := rc.waitRecords(11)
	for i, r := range got[:10] {
		if sk := r.Dynamodb.NewImage["sk"].S; sk != "OUTBOX#"+string(rune('a'+i)) {
			t.Errorf("record %d: sk %q, want OUTBOX#%c (in order, outbox only)", i, sk, 'a'+i)
		}
		if r.EventName != "INSERT" || r.EventSource != "aws:dynamodb" || r.EventVersion != "1.1" || r.AwsRegion == "" ||
			!strings.Contains(r.EventSourceARN, ":table/orders/stream/") || r.Dynamodb.StreamViewType != "NEW_AND_OLD_IMAGES" {
			t.Errorf("record %d is not shaped like Lambda's: %+v", i, r)
		}
	}
	if r := got[10]; r.EventName != "REMOVE" || r.Dynamodb.OldImage["sk"].S != "OUTBOX#a" {
		t.Errorf("last record %+v, want the REMOVE of OUTBOX#a", r)
	}
	if rc.bad.Load() != 0 {
		t.Errorf("%d deliveries had no valid signature", rc.bad.Load())
	}
	ds, err := f.m.Deliveries(ctx, s, v.ID, 0)
	if err != nil || len(ds) == 0 || ds[0].Outcome != "delivered" || ds[0].Status != 200 {
		t.Fatalf("deliveries = %+v, %v", ds, err)
	}
	if len(got) > 11 {
		t.Errorf("got %d records, want 11 (nothing delivered twice without a failure)", len(got))
	}
}

func TestRetryThenDeadLetterAndRedrive(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	rc := newReceiver(t)
	var failing atomic.Bool
	failing.Store(true)
	rc.respond = func(n int64) int {
		if n <= 2 {
			return 503 // retried
		}
		if failing.Load() {
			return 500
		}
		return 204
	}
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	v, err := f.m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL, RetryPeriodSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "1"))
	// Within a second of retries the batch goes to the dead-letter list.
	var dl []DeadLetter
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if dl, err = f.m.DeadLetters(ctx, s, v.ID, 0); err != nil {
			t.Fatal(err)
		}
		if len(dl) > 0 {
			break
		}
	}
	if len(dl) != 1 || len(dl[0].Records) != 1 || dl[0].Status != 500 {
		t.Fatalf("dead letters = %+v", dl)
	}
	ds, _ := f.m.Deliveries(ctx, s, v.ID, 0)
	retries := 0
	for _, d := range ds {
		if d.Outcome == "retry" {
			retries++
		}
	}
	if retries < 2 || ds[0].Outcome != "dead-lettered" {
		t.Errorf("deliveries = %+v, want retries and then dead-lettered", ds)
	}
	// The log goes on after the dead letter.
	failing.Store(false)
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "2"))
	got := rc.waitRecords(1)
	if got[0].Dynamodb.NewImage["sk"].S != "2" {
		t.Fatalf("got %+v, want item 2", got[0])
	}
	if _, err := f.m.RedriveDeadLetters(ctx, s, v.ID); err != nil {
		t.Fatal(err)
	}
	got = rc.waitRecords(2)
	if got[1].Dynamodb.NewImage["sk"].S != "1" {
		t.Errorf("redriven %+v, want item 1", got[1])
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if dl, _ = f.m.DeadLetters(ctx, s, v.ID, 0); len(dl) == 0 {
			break
		}
	}
	if len(dl) != 0 {
		t.Errorf("dead letters after redrive: %+v", dl)
	}
}

func TestGoneDisables(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	rc := newReceiver(t)
	rc.respond = func(int64) int { return 410 }
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	v, _ := f.m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL})
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "1"))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if v, _ = f.m.Get(ctx, s, v.ID); v.State == Disabled {
			break
		}
	}
	if v.State != Disabled || !strings.Contains(v.StateReason, "410") {
		t.Fatalf("subscription %+v, want disabled by 410", v)
	}
	calls := rc.calls.Load()
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "2"))
	time.Sleep(50 * time.Millisecond)
	if rc.calls.Load() != calls {
		t.Errorf("a disabled subscription delivered")
	}
	// Resumed, it delivers from where it stopped (the 410'd batch first).
	rc.respond = func(int64) int { return 200 }
	if v, _ = f.m.Resume(ctx, s, v.ID); v.State != Active {
		t.Fatalf("resume: %+v", v)
	}
	got := rc.waitRecords(2)
	if got[0].Dynamodb.NewImage["sk"].S != "1" || got[1].Dynamodb.NewImage["sk"].S != "2" {
		t.Errorf("after resume got %+v", got)
	}
}

func TestPauseReplayRotate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	rc := newReceiver(t)
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	v, _ := f.m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL})
	rc.trust(v.Secret)
	start := time.Now()
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "1"))
	rc.waitRecords(1)
	if v, _ = f.m.Pause(ctx, s, v.ID); v.State != Paused {
		t.Fatalf("pause: %+v", v)
	}
	f.log.put(tenant, "live", "tb1", changelog.Modify, item("a", "1"), item("a", "1", "x", "y"))
	time.Sleep(50 * time.Millisecond)
	if n := len(rc.records()); n != 1 {
		t.Fatalf("paused subscription delivered: %d records", n)
	}
	// Rotate: the new secret signs at once, the old one still too.
	r2, err := f.m.RotateSecret(ctx, s, v.ID, time.Hour)
	if err != nil || r2.Secret == "" || r2.Secret == v.Secret || len(r2.Secrets) != 2 {
		t.Fatalf("rotate: %+v, %v", r2, err)
	}
	rc.mu.Lock()
	rc.secrets = []string{r2.Secret}
	rc.mu.Unlock()
	if _, err := f.m.Replay(ctx, s, v.ID, start.Add(-time.Second).Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Resume(ctx, s, v.ID); err != nil {
		t.Fatal(err)
	}
	got := rc.waitRecords(3)
	if got[1].Dynamodb.NewImage["sk"].S != "1" || got[2].EventName != "MODIFY" {
		t.Errorf("replayed %+v", got)
	}
	if _, err := f.m.Replay(ctx, s, v.ID, "yesterday"); !apierr.Is(err, apierr.Validation) {
		t.Errorf("replay from garbage: %v", err)
	}
	if err := f.m.Delete(ctx, s, v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Get(ctx, s, v.ID); !apierr.Is(err, apierr.NotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if len(f.log.retained) != 0 {
		t.Errorf("log still retained after delete: %v", f.log.retained)
	}
}

func TestCreateValidates(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	for _, in := range []CreateInput{
		{Table: "tb1", URL: "http://example.com/hook"},
		{Table: "tb1", URL: "https://127.0.0.1/hook"},
		{Table: "tb1", URL: "https://169.254.169.254/latest"},
		{Table: "tb1", URL: "https://[::1]/x"},
		{Table: "tb1", URL: "https://10.1.2.3/x"},
		{Table: "tb1", URL: "https://localhost/x"},
		{Table: "tb1", URL: "https://[::ffff:127.0.0.1]/x"},
		{Table: "tb1", URL: "ftp://example.com/x"},
		{Table: "tb1", URL: "https://u:p@example.com/x"},
		{Table: "tb1", URL: "https://93.184.216.34/x", Filter: "begins_with(sk, :o"},
		{Table: "tb1", URL: "https://93.184.216.34/x", Filter: "begins_with(sk, :o)"},
		{Table: "tb1", URL: "https://93.184.216.34/x", Events: []string{"UPSERT"}},
		{Table: "tb1", URL: "https://93.184.216.34/x", BatchSize: 5000},
	} {
		if _, err := f.m.Create(ctx, s, in); !apierr.Is(err, apierr.Validation) {
			t.Errorf("Create(%+v) = %v, want a ValidationException", in, err)
		}
	}
	if _, err := f.m.Create(ctx, s, CreateInput{Table: "nope", URL: "https://93.184.216.34/x"}); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("unknown table: %v", err)
	}
	if _, err := f.m.Create(ctx, s, CreateInput{Table: "tb1", URL: "https://93.184.216.34/x", Env: "test"}); !apierr.Is(err, apierr.AccessDenied) {
		t.Errorf("other environment: %v", err)
	}
	if _, err := f.m.Create(ctx, s, CreateInput{Table: "tb1", URL: "https://93.184.216.34/x", Events: []string{"insert", "REMOVE"}}); err != nil {
		t.Errorf("public https: %v", err)
	}
}

// TestDialRefusesPrivate: a subscription whose host resolves to a private
// address at delivery time (DNS rebinding) is refused by the dialer.
func TestDialRefusesPrivate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	rc := newReceiver(t)
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	v, err := f.m.Create(ctx, s, CreateInput{Table: "tb1", URL: "https://93.184.216.34/x"})
	if err != nil {
		t.Fatal(err)
	}
	// The host now "resolves" to loopback: rewrite the stored URL as a
	// rebinding would.
	r, _ := f.m.st.get(tenant, v.ID)
	r.URL = strings.Replace(rc.srv.URL, "http://", "https://", 1)
	f.m.st.put(tenant, r, nil)
	// NB: the running worker caches the subscription; a rebinding changes
	// no record, so tell it the stored one changed (as the Manager's own
	// changes do), or it may deliver to the public address it read.
	if w := f.m.worker(tenant, v.ID); w != nil {
		w.poke()
	}
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "1"))
	var ds []Attempt
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(ds) == 0; time.Sleep(10 * time.Millisecond) {
		ds, _ = f.m.Deliveries(ctx, s, v.ID, 0)
	}
	if len(ds) == 0 || !strings.Contains(ds[len(ds)-1].Error, "refusing to connect") || ds[len(ds)-1].Status != 0 {
		t.Fatalf("deliveries = %+v, want a refused connection", ds)
	}
	if rc.calls.Load() != 0 {
		t.Errorf("the private endpoint was called")
	}
}

func TestScopeIsolation(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true})
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	f.log.addTable(a, "live", "tb1")
	f.log.addTable(a, "test", "tb1")
	sa := adminScope(t, a, "live")
	v, err := f.m.Create(ctx, sa, CreateInput{Table: "tb1", URL: "http://127.0.0.1:9/x"})
	if err != nil {
		t.Fatal(err)
	}
	sb := adminScope(t, b, "live")
	if _, err := f.m.Get(ctx, sb, v.ID); !apierr.Is(err, apierr.NotFound) {
		t.Errorf("B sees A's subscription: %v", err)
	}
	if l, _ := f.m.List(ctx, sb); len(l) != 0 {
		t.Errorf("B lists %v", l)
	}
	for name, op := range map[string]func(tenancy.Scope) error{
		"pause":  func(s tenancy.Scope) error { _, err := f.m.Pause(ctx, s, v.ID); return err },
		"resume": func(s tenancy.Scope) error { _, err := f.m.Resume(ctx, s, v.ID); return err },
		"replay": func(s tenancy.Scope) error {
			_, err := f.m.Replay(ctx, s, v.ID, time.Now().Format(time.RFC3339))
			return err
		},
		"rotate": func(s tenancy.Scope) error { _, err := f.m.RotateSecret(ctx, s, v.ID, 0); return err },
		"delete": func(s tenancy.Scope) error { return f.m.Delete(ctx, s, v.ID) },
		"deliveries": func(s tenancy.Scope) error {
			_, err := f.m.Deliveries(ctx, s, v.ID, 0)
			return err
		},
	} {
		for _, s := range []tenancy.Scope{sb, adminScope(t, a, "test")} {
			if err := op(s); !apierr.Is(err, apierr.NotFound) {
				t.Errorf("%s by %s/%s: %v, want NotFound", name, s.Tenant(), s.Env(), err)
			}
		}
	}
	// B cannot subscribe to A's table: its scope does not see it.
	if _, err := f.m.Create(ctx, sb, CreateInput{Table: "tb1", URL: "http://127.0.0.1:9/x"}); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("B subscribing to A's table: %v", err)
	}
	// The operator sees it.
	if _, err := f.m.Get(ctx, adminScope(t, a, ""), v.ID); err != nil {
		t.Errorf("operator: %v", err)
	}
}

// TestSlowTenantDoesNotDelayOther: tenant A's endpoint hangs; tenant B's
// deliveries still arrive promptly.
func TestSlowTenantDoesNotDelayOther(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true, TenantConcurrency: 2, Timeout: 2 * time.Second})
	slow := newReceiver(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow.respond = func(int64) int {
		<-release
		return 200
	}
	fast := newReceiver(t)
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	sa, sb := adminScope(t, a, "live"), adminScope(t, b, "live")
	for i := range 5 {
		tbl := "t" + string(rune('0'+i)) + "x"
		f.log.addTable(a, "live", tbl)
		v, err := f.m.Create(ctx, sa, CreateInput{Table: tbl, URL: slow.srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		slow.trust(v.Secret)
		f.log.put(a, "live", tbl, changelog.Insert, nil, item("a", "1"))
	}
	f.log.addTable(b, "live", "tbb")
	v, _ := f.m.Create(ctx, sb, CreateInput{Table: "tbb", URL: fast.srv.URL})
	fast.trust(v.Secret)
	f.log.put(b, "live", "tbb", changelog.Insert, nil, item("b", "1"))
	fast.waitRecords(1) // fails the test after 10 s; A's requests hang for 2 s each
	if n := slow.calls.Load(); n > 2 {
		t.Errorf("tenant A had %d deliveries in flight, more than its 2 slots", n)
	}
}

// TestFullDeadLetterListDisables: a subscription whose dead-letter list
// is full stops before the next failing batch instead of growing it or
// dropping the batch; replayed and resumed, it delivers both in order.
func TestFullDeadLetterListDisables(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{AllowPrivate: true, MaxDeadLetters: 1})
	rc := newReceiver(t)
	var ok atomic.Bool
	rc.respond = func(int64) int {
		if ok.Load() {
			return 200
		}
		return 400 // not retried: dead-lettered at once
	}
	tenant := tenancy.NewTenantID()
	f.log.addTable(tenant, "live", "tb1")
	s := adminScope(t, tenant, "live")
	v, _ := f.m.Create(ctx, s, CreateInput{Table: "tb1", URL: rc.srv.URL, BatchSize: 1})
	rc.trust(v.Secret)
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "1"))
	f.log.put(tenant, "live", "tb1", changelog.Insert, nil, item("a", "2"))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if v, _ = f.m.Get(ctx, s, v.ID); v.State == Disabled {
			break
		}
	}
	if v.State != Disabled || !strings.Contains(v.StateReason, "dead-letter list is full") || v.DeadLetters != 1 {
		t.Fatalf("subscription %+v, want disabled with one dead letter", v)
	}
	ok.Store(true)
	if _, err := f.m.RedriveDeadLetters(ctx, s, v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Resume(ctx, s, v.ID); err != nil {
		t.Fatal(err)
	}
	got := rc.waitRecords(2)
	if got[0].Dynamodb.NewImage["sk"].S != "1" || got[1].Dynamodb.NewImage["sk"].S != "2" {
		t.Errorf("got %+v, want item 1 (redriven) then 2", got)
	}
}
