package fleetkey

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

const testKEKInfo = "test kek"

// gateway is one gateway's share of a rotation in these tests: its
// authenticator, its keyring and its Rotator, over the fleet's store.
type gateway struct {
	id   string
	auth *auth.Authenticator
	keys *tenantkey.Keyring
	rot  *Rotator
}

// fleet is n gateways over one store, all with the same server key; the
// live gateways (Gateways) are those in live.
type fleet struct {
	st   Store
	mu   sync.Mutex
	live map[string]bool
	gws  []*gateway
	// catalogStore is the store the gateways' catalogs use (the fleet's
	// by default).
	catalogStore func(Store) Store
}

func (f *fleet) gateways(context.Context) ([]client.Gateway, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []client.Gateway
	for id := range f.live {
		out = append(out, client.Gateway{ID: id, Endpoint: "http://" + id})
	}
	return out, nil
}

func (f *fleet) setLive(id string, live bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live[id] = live
	if !live {
		delete(f.live, id)
	}
}

// newFleet starts n gateways with one key (their Rotators follow unless
// follow is false for that index).
func newFleet(t *testing.T, n int, follow func(i int) bool, o Options) *fleet {
	t.Helper()
	return newFleetWith(t, n, follow, o, func(f *fleet) {})
}

// newFleetWith is newFleet, letting setup see the store and set
// f.catalogStore first.
func newFleetWith(t *testing.T, n int, follow func(i int) bool, o Options, setup func(f *fleet)) *fleet {
	t.Helper()
	ctx := context.Background()
	f := &fleet{st: newStore(t), live: map[string]bool{}, catalogStore: func(s Store) Store { return s }}
	setup(f)
	key, _ := newKey(t)
	if _, err := Check(ctx, f.st, key, "", false); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		g := &gateway{id: string(rune('a' + i))}
		g.auth = auth.New(catalog.Open(f.catalogStore(f.st), catalog.Options{}), key, auth.Options{})
		var err error
		if g.keys, err = tenantkey.Open(tenantkey.Options{KEK: key.Derive(testKEKInfo), Store: f.st}); err != nil {
			t.Fatal(err)
		}
		f.gws = append(f.gws, g)
		if !follow(i) {
			continue // stalled past its lease from the start: not live, not following
		}
		f.setLive(g.id, true)
		oo := o
		oo.Store, oo.Gateways, oo.Self, oo.Auth, oo.Keys, oo.KEKInfo = f.st, f.gateways, g.id, g.auth, g.keys, testKEKInfo
		if oo.Poll == 0 {
			oo.Poll = 20 * time.Millisecond
		}
		if oo.Lease == 0 {
			oo.Lease = time.Second
		}
		if g.rot, err = Start(ctx, oo); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.rot.Close)
	}
	return f
}

// TestRotateRefusesLateOldKeyWrites: a gateway that did not follow the
// rotation (stalled past its heartbeat lease, so not waited for) and
// resumes afterwards still seals under the old key. Its writes — a new
// credential, a tenant's first data key — would land in the engine after
// the re-sealing, under a key the fleet no longer holds: unopenable. They
// must be refused instead.
func TestRotateRefusesLateOldKeyWrites(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, 2, func(i int) bool { return i == 0 }, Options{})
	live, stalled := f.gws[0], f.gws[1]
	if err := live.rot.Rotate(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	if cur, also := live.auth.Keys(); also != nil || cur == nil {
		t.Fatalf("after the rotation the live gateway holds %v, %v", cur, also)
	}

	// The stalled gateway resumes, with the old key only.
	_, err := stalled.auth.CreateOperatorKey(ctx, "late")
	if err == nil {
		t.Error("a credential sealed under the retired key was stored")
	}
	if _, err := live.auth.Reseal(ctx); err != nil {
		t.Errorf("the engine holds a credential the fleet's key does not open: %v", err)
	}

	tn := tenancy.NewTenantID()
	err = stalled.keys.Create(tn)
	if err == nil {
		t.Error("a tenant data key wrapped under the retired key was stored")
	}
	if _, err := live.keys.Key(tn); err != nil && !strings.Contains(err.Error(), "no data key") {
		t.Errorf("the engine holds a tenant key the fleet's key does not open: %v", err)
	}
	// The live gateway writes both as ever.
	if _, err := live.auth.CreateOperatorKey(ctx, "fine"); err != nil {
		t.Fatal(err)
	}
	if err := live.keys.Create(tn); err != nil {
		t.Fatal(err)
	}
}

// TestRotateReportsAbandoned: a rotation asked of a gateway while another
// drives it, and abandoned by that one (a live gateway never accepted),
// is reported abandoned to both callers, not rotated.
func TestRotateReportsAbandoned(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, 2, func(int) bool { return true }, Options{AcceptTimeout: 500 * time.Millisecond})
	f.setLive("ghost", true) // live by its heartbeat, never accepts
	a, b := f.gws[0], f.gws[1]
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); errs[0] = a.rot.Rotate(ctx, "one") }()
	go func() {
		defer wg.Done()
		time.Sleep(100 * time.Millisecond) // a's record is there: b joins it
		errs[1] = b.rot.Rotate(ctx, "two")
	}()
	wg.Wait()
	for i, err := range errs {
		if !apierr.Is(err, apierr.Validation) || !strings.Contains(err.Error(), "abandoned") {
			t.Errorf("caller %d: %v, want the rotation reported abandoned", i, err)
		}
	}
}

// hookStore calls before, once, ahead of its first Apply.
type hookStore struct {
	Store
	once   sync.Once
	before func()
}

func (h *hookStore) Apply(ctx context.Context, b *kv.Batch) error {
	h.once.Do(h.before)
	return h.Store.Apply(ctx, b)
}

// TestRotateResealsInFlightWrite: a credential sealed under the old key
// by a gateway that then switches keys, and that reaches the engine only
// once the re-sealing has started (marked the old key retired), is sealed
// again under the new key and stored: the caller is told nothing, and the
// new key alone opens it. (A tenant's data key cannot be in flight so: the
// keyring holds its lock across the write, and switching keys waits for
// it — so before the gateway reports the switch.)
func TestRotateResealsInFlightWrite(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	old, _ := newKey(t)
	next, _ := newKey(t)
	var a *auth.Authenticator
	// What a rotation does meanwhile: the gateway switches, the driver
	// enters the re-sealing.
	hs := &hookStore{Store: st, before: func() {
		a.UseKeys(next, old)
		put(t, st, retiredKey(old.Check()), []byte("now"))
	}}
	a = auth.New(catalog.Open(hs, catalog.Options{}), old, auth.Options{})
	if _, err := a.CreateOperatorKey(ctx, "in flight"); err != nil {
		t.Fatal(err)
	}
	a.UseKeys(next, nil)
	if n, err := a.Reseal(ctx); err != nil || n != 0 {
		t.Errorf("re-sealing after the fact: %d, %v; want 0 (stored under the new key)", n, err)
	}
}

// TestRotateAuditsEndBeforeDeleting: the end of a rotation is audited
// while its record is still there, so that a driver killed at any point
// leaves either the entry or a record another gateway resumes (and
// audits) — never a finished rotation without its end in the audit log.
func TestRotateAuditsEndBeforeDeleting(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var got []string
	var st Store
	o := Options{Audit: func(ctx context.Context, action, _ string) {
		_, err := st.Get(ctx, recKey())
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s record=%v", action, err == nil))
	}}
	f := newFleetWith(t, 2, func(int) bool { return true }, o, func(f *fleet) { st = f.st })
	if err := f.gws[0].rot.Rotate(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"server-key.rotate.start record=true", "server-key.rotate.done record=true"}
	if !slices.Equal(got, want) {
		t.Errorf("audited %q, want %q", got, want)
	}
}

// TestRotateLongResealKeepsItsDriver: a re-sealing pass that takes longer
// than the lease (many credentials, a slow engine) keeps its driver: the
// claim is renewed meanwhile, no other gateway takes the rotation over
// (each would then fail the other's pass, and so on).
func TestRotateLongResealKeepsItsDriver(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var acts []string
	o := Options{Lease: 200 * time.Millisecond, Audit: func(_ context.Context, action, _ string) {
		mu.Lock()
		defer mu.Unlock()
		acts = append(acts, action)
	}}
	var slow atomic.Bool
	f := newFleetWith(t, 2, func(int) bool { return true }, o, func(f *fleet) {
		f.catalogStore = func(s Store) Store {
			return slowWhen{s, &slow}
		}
	})
	for range 15 {
		if _, err := f.gws[1].auth.CreateOperatorKey(ctx, "test"); err != nil {
			t.Fatal(err)
		}
	}
	slow.Store(true) // re-sealing 15 credentials takes 15 × 50 ms, past the lease
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := f.gws[0].rot.Rotate(rctx, "test"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(acts, "server-key.rotate.resumed") {
		t.Errorf("the rotation was taken over from its live driver: %q", acts)
	}
}

// slowWhen delays every Apply by 50 ms while *on.
type slowWhen struct {
	Store
	on *atomic.Bool
}

func (s slowWhen) Apply(ctx context.Context, b *kv.Batch) error {
	if s.on.Load() {
		time.Sleep(50 * time.Millisecond)
	}
	return s.Store.Apply(ctx, b)
}

// TestRotateKeepsSealedSecrets: the stream secret and the webhook secret,
// kept sealed under the server key, are re-sealed by a rotation: a
// gateway started afterwards with the new key alone reads the same
// values (not its own derivation of the new key).
func TestRotateKeepsSealedSecrets(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, 2, func(int) bool { return true }, Options{})
	g := f.gws[0]
	stream, err := StreamSecret(ctx, f.st, g.auth, bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	hook, err := WebhookSecret(ctx, f.st, f.gws[1].auth, bytes.Repeat([]byte{2}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.rot.Rotate(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	cur, also := g.auth.Keys()
	if also != nil {
		t.Fatal("the rotation did not end")
	}
	later := auth.New(catalog.Open(f.st, catalog.Options{}), cur, auth.Options{})
	derived := bytes.Repeat([]byte{3}, 32) // what a later gateway derives: not used
	if got, err := StreamSecret(ctx, f.st, later, derived); err != nil || !bytes.Equal(got, stream) {
		t.Errorf("stream secret after the rotation: %x, %v; want %x", got, err, stream)
	}
	if got, err := WebhookSecret(ctx, f.st, later, derived); err != nil || !bytes.Equal(got, hook) {
		t.Errorf("webhook secret after the rotation: %x, %v; want %x", got, err, hook)
	}
}
