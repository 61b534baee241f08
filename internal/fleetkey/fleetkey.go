// Package fleetkey rotates the server key of a fleet of gateways over
// one DynamoDB-API engine, online: every live gateway is moved to the new
// key without a moment where one cannot open a credential another has
// sealed, every credential secret is re-sealed and every tenant data key
// re-wrapped under it in the engine, and once every live gateway has
// adopted it, the only copy of the new key that the old one opens (how
// the other gateways were handed it) is deleted. See DESIGN.md.
package fleetkey

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// Store is the control plane's store in the engine (enginekv.Store).
type Store interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

// Phases of a rotation, in the order the record goes through them.
const (
	// phaseAccept: every gateway opens under the old and the new key,
	// and still seals under the old.
	phaseAccept = 1
	// phaseSwitch: every gateway seals under the new key, and still
	// opens under both.
	phaseSwitch = 2
	// phaseReseal: the driving gateway re-seals every credential and
	// re-wraps every tenant key under the new key.
	phaseReseal = 3
	// phaseDone: the engine's records are all under the new key (the
	// check record says so); every gateway forgets the old key and makes
	// the new one its own (server.key). The record, which holds the new
	// key sealed under the old, is deleted once every live gateway is
	// there.
	phaseDone = 4
)

var phaseNames = map[int]string{phaseAccept: "accept", phaseSwitch: "switch", phaseReseal: "reseal", phaseDone: "done"}

// rotation is the record of a rotation in progress.
type rotation struct {
	ID    string `json:"id"`
	Phase int    `json:"phase"`
	From  string `json:"from"` // hex of the old key's check
	To    string `json:"to"`   // hex of the new key's check
	// Next is the new key's material sealed under a key derived from
	// the old one (handover): how the other gateways get it.
	Next    []byte `json:"next"`
	Owner   string `json:"owner"` // the driving gateway
	Beat    int64  `json:"beat"`  // unix ms of its last renewal
	Started int64  `json:"started"`
	Actor   string `json:"actor,omitempty"`
	Sealed  int    `json:"credentials"` // credential secrets re-sealed
	Wrapped int    `json:"tenant_keys"` // tenants whose data keys were re-wrapped
}

// adoption is how far one gateway followed a rotation.
type adoption struct {
	ID      string `json:"id"`
	Phase   int    `json:"phase"`
	Refused string `json:"refused,omitempty"` // why it cannot follow
	At      int64  `json:"at"`
}

func recKey() []byte { return keyspace.System(keyspace.SysServerKeyRotation) }

func adoptionKey(gw string) []byte {
	return append(keyspace.System(keyspace.SysServerKeyAdopted), gw...)
}

func retiredKey(check []byte) []byte {
	return append(keyspace.System(keyspace.SysServerKeyRetired), hex.EncodeToString(check)...)
}

func checkHex(k *auth.ServerKey) string { return hex.EncodeToString(k.Check()) }

// handoverInfo derives, from the old key, the key that seals the new
// one in the record.
const handoverInfo = "tenantdb fleet server key handover v1"

func handoverAAD(id, to string) []byte {
	return []byte("tenantdb server key handover v1 " + id + " " + to)
}

func handoverAEAD(old *auth.ServerKey) (cipher.AEAD, error) {
	block, err := aes.NewCipher(old.Derive(handoverInfo))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func sealNext(old *auth.ServerKey, id, to string, master []byte) ([]byte, error) {
	a, err := handoverAEAD(old)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return a.Seal(nonce, nonce, master, handoverAAD(id, to)), nil
}

func openNext(old *auth.ServerKey, r *rotation) (*auth.ServerKey, []byte, error) {
	a, err := handoverAEAD(old)
	if err != nil {
		return nil, nil, err
	}
	if len(r.Next) < a.NonceSize() {
		return nil, nil, errors.New("fleetkey: the rotation record's key is corrupt")
	}
	master, err := a.Open(nil, r.Next[:a.NonceSize()], r.Next[a.NonceSize():], handoverAAD(r.ID, r.To))
	if err != nil {
		return nil, nil, errors.New("fleetkey: the rotation record's key does not open under this gateway's server key")
	}
	next, err := auth.NewServerKey(master)
	if err != nil {
		return nil, nil, err
	}
	if checkHex(next) != r.To {
		return nil, nil, errors.New("fleetkey: the rotation record's key is not the one it names")
	}
	return next, master, nil
}

// Options configure a Rotator.
type Options struct {
	Store Store
	// Gateways lists the live gateways (their heartbeat records);
	// Self is this gateway's id among them.
	Gateways func(ctx context.Context) ([]client.Gateway, error)
	Self     string
	Auth     *auth.Authenticator
	Keys     *tenantkey.Keyring
	// KEKInfo derives the keyring's key-encryption key from a server key.
	KEKInfo string
	// DataDir holds the gateway's server.key ("" if it has none: a key
	// given by the environment, or a gateway in memory).
	DataDir string
	// FromEnv says the key came from TENANTDB_SERVER_KEY: the gateway
	// cannot be given another, and refuses to take part in a rotation.
	FromEnv bool
	// Audit records a step in the platform's audit log.
	Audit  func(ctx context.Context, action, target string)
	Logger *slog.Logger

	// Poll is how often a gateway reads the rotation record (0: 1 s).
	Poll time.Duration
	// Lease is how long the driving gateway's claim holds without
	// renewal before another gateway takes the rotation over (0: 5 s).
	Lease time.Duration
	// AcceptTimeout is how long a new rotation waits for every live
	// gateway to accept the new key before it is abandoned (0: 30 s).
	AcceptTimeout time.Duration
	// Grace is how long, once every live gateway seals under the new
	// key, the re-sealing waits for writes sealed under the old key
	// before that to land (0: 2 s).
	Grace time.Duration
}

func (o *Options) defaults() {
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 5 * time.Second
	}
	if o.AcceptTimeout <= 0 {
		o.AcceptTimeout = 30 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Audit == nil {
		o.Audit = func(context.Context, string, string) {}
	}
}

// Rotator follows (and drives) the fleet's server key rotations on one
// gateway.
type Rotator struct {
	o      Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex // the local state below, and one follow at a time
	// key is the gateway's server key outside a rotation; during one,
	// old and next are the two keys, state the phase it follows, rid
	// the rotation's id.
	key       *auth.ServerKey
	old, next *auth.ServerKey
	master    []byte // next's material (for server.key.next)
	state     int
	rid       string
	refused   string // the rotation rid this gateway refused (FromEnv)
	lostSaid  bool
	driving   string   // the rotation this process drives, if any
	keepOld   bool     // the driver opens under the old key until the record is gone
	adopted   adoption // the last adoption recorded (At zero)
	doneCh    map[string]chan struct{}
	lastError map[string]string
}

// Start returns the gateway's Rotator after joining the rotation in
// progress, if any (before the gateway serves), and follows the fleet's
// rotations until Close, taking over one whose driver stopped.
func Start(ctx context.Context, o Options) (*Rotator, error) {
	o.defaults()
	cur, _ := o.Auth.Keys()
	r := &Rotator{o: o, key: cur, doneCh: map[string]chan struct{}{}, lastError: map[string]string{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if err := r.follow(ctx); err != nil {
		r.cancel()
		return nil, err
	}
	r.wg.Add(1)
	go r.watch()
	return r, nil
}

// Close stops following (a rotation this gateway drives is taken over by
// another one, or by this one's next start).
func (r *Rotator) Close() {
	r.cancel()
	r.wg.Wait()
}

func (r *Rotator) watch() {
	defer r.wg.Done()
	tick := time.NewTicker(r.o.Poll)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		}
		if err := r.follow(r.ctx); err != nil && r.ctx.Err() == nil {
			r.o.Logger.Warn("fleetkey: following the server key rotation", "err", err)
		}
		r.takeOver()
	}
}

// read returns the rotation record (nil if none) and its stored bytes.
func (r *Rotator) read(ctx context.Context) (*rotation, []byte, error) {
	v, err := r.o.Store.Get(ctx, recKey())
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var rec rotation
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, nil, fmt.Errorf("fleetkey: the rotation record is corrupt: %w", err)
	}
	return &rec, v, nil
}

// use installs the keys of phase p (0: key alone) in the authenticator
// and the keyring.
func (r *Rotator) use(cur, also *auth.ServerKey) error {
	r.o.Auth.UseKeys(cur, also)
	var alsoKEK []byte
	if also != nil {
		alsoKEK = also.Derive(r.o.KEKInfo)
	}
	return r.o.Keys.UseKEKs(cur.Derive(r.o.KEKInfo), alsoKEK)
}

// follow reads the rotation record and brings this gateway to its
// phase, recording how far it got.
func (r *Rotator) follow(ctx context.Context) error {
	rec, _, err := r.read(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec == nil {
		return r.noRotation(ctx)
	}
	if r.state != 0 && rec.ID != r.rid {
		// NB: a rotation this gateway followed ended (or was abandoned)
		// while it did not look, and another began.
		if err := r.noRotation(ctx); err != nil {
			return err
		}
	}
	switch {
	case r.state != 0:
		return r.advance(ctx, rec)
	case rec.From == checkHex(r.key):
		if r.o.FromEnv {
			if r.refused != rec.ID {
				r.refused = rec.ID
				why := fmt.Sprintf("its server key comes from %s, which the gateway cannot change", auth.ServerKeyEnv)
				return r.adopt(ctx, adoption{ID: rec.ID, Refused: why})
			}
			return nil
		}
		next, master, err := openNext(r.key, rec)
		if err != nil {
			return err
		}
		r.old, r.next, r.master, r.rid = r.key, next, master, rec.ID
		if r.o.DataDir != "" {
			if _, err := auth.WriteNextServerKey(r.o.DataDir, master); err != nil {
				return err
			}
		}
		r.state = phaseAccept
		if err := r.use(r.old, r.next); err != nil {
			return err
		}
		return r.advance(ctx, rec)
	case rec.To == checkHex(r.key):
		// This gateway holds the new key already (it started with it
		// once the engine's records were under it, or it finished).
		if rec.Phase == phaseDone {
			return r.adopt(ctx, adoption{ID: rec.ID, Phase: phaseDone})
		}
		return nil
	default:
		return fmt.Errorf("fleetkey: a rotation of another server key than this gateway's is in progress (from %.16s…)", rec.From)
	}
}

// advance moves this gateway, which follows rec, to rec's phase.
// REQUIRES: r.mu, r.state != 0.
func (r *Rotator) advance(ctx context.Context, rec *rotation) error {
	if rec.Phase >= phaseSwitch && r.state < phaseSwitch {
		if err := r.use(r.next, r.old); err != nil {
			return err
		}
		r.state = phaseSwitch
	}
	if rec.Phase >= phaseDone && r.state < phaseDone {
		also := (*auth.ServerKey)(nil)
		if r.driving == rec.ID {
			also = r.old // NB: the driver opens stragglers until the record is gone
		}
		if err := r.use(r.next, also); err != nil {
			return err
		}
		if r.o.DataDir != "" {
			if err := auth.CommitServerKey(r.o.DataDir); err != nil {
				return err
			}
		}
		r.state = phaseDone
		r.o.Logger.Info("fleetkey: this gateway now uses the rotated server key; session tokens and shard iterators minted before must be minted again")
	}
	phase := rec.Phase
	if r.state < phase {
		phase = r.state
	}
	return r.adopt(ctx, adoption{ID: rec.ID, Phase: phase})
}

// noRotation handles the absence of a rotation record: a rotation this
// gateway followed ended (it keeps the new key) or was abandoned before
// sealing under the new key (it keeps the old one). REQUIRES: r.mu.
func (r *Rotator) noRotation(ctx context.Context) error {
	if r.state == 0 {
		return r.checkLost(ctx)
	}
	v, err := r.o.Store.Get(ctx, keyspace.System(keyspace.SysServerKeyCheck))
	if err != nil {
		return err
	}
	switch {
	case bytes.Equal(v, r.next.Check()):
		if r.state < phaseDone {
			if r.o.DataDir != "" {
				if err := auth.CommitServerKey(r.o.DataDir); err != nil {
					return err
				}
			}
		}
		r.key = r.next
	case bytes.Equal(v, r.old.Check()):
		// NB: abandoned in its accept phase: nothing was sealed under
		// the new key.
		if r.o.DataDir != "" {
			if err := auth.DiscardNextServerKey(r.o.DataDir); err != nil {
				return err
			}
		}
		r.key = r.old
	default:
		return errors.New("fleetkey: the engine's records are sealed under neither key of the rotation this gateway followed")
	}
	if err := r.use(r.key, nil); err != nil {
		return err
	}
	r.old, r.next, r.master, r.state, r.rid = nil, nil, nil, 0, ""
	return nil
}

// checkLost logs, once, that the engine's records are under another key
// than this gateway's (it missed a whole rotation, stalled): it cannot
// open what the others seal and must be restarted with the new key.
func (r *Rotator) checkLost(ctx context.Context) error {
	v, err := r.o.Store.Get(ctx, keyspace.System(keyspace.SysServerKeyCheck))
	if err != nil || bytes.Equal(v, r.key.Check()) || r.lostSaid {
		return err
	}
	r.lostSaid = true
	r.o.Logger.Error("fleetkey: the fleet's server key was rotated while this gateway did not follow (stalled past its lease); it cannot open what is sealed under the new key: restart it with the new key (<data-dir>/server.key of a gateway that took part)")
	return nil
}

func (r *Rotator) adopt(ctx context.Context, a adoption) error {
	if r.adopted == a {
		return nil // recorded already
	}
	rec := a
	rec.At = time.Now().UnixMilli()
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	var b kv.Batch
	b.Set(adoptionKey(r.o.Self), data)
	if err := r.o.Store.Apply(ctx, &b); err != nil {
		return err
	}
	r.adopted = a
	return nil
}

// pending returns the live gateways that have not reached phase of
// rotation id, and the reason of one that refused to follow it.
func (r *Rotator) pending(ctx context.Context, id string, phase int) (waiting []string, refused string, err error) {
	gws, err := r.o.Gateways(ctx)
	if err != nil {
		return nil, "", err
	}
	ads := map[string]adoption{}
	lo := keyspace.System(keyspace.SysServerKeyAdopted)
	err = r.o.Store.Scan(ctx, lo, keyspace.PrefixEnd(lo), func(k, v []byte) bool {
		var a adoption
		if json.Unmarshal(v, &a) == nil {
			ads[string(k[len(lo):])] = a
		}
		return true
	})
	if err != nil {
		return nil, "", err
	}
	for _, g := range gws {
		a, ok := ads[g.ID]
		switch {
		case ok && a.ID == id && a.Refused != "":
			refused = fmt.Sprintf("gateway %s (%s): %s", g.ID, g.Endpoint, a.Refused)
		case !ok || a.ID != id || a.Phase < phase:
			waiting = append(waiting, g.ID)
		}
	}
	sort.Strings(waiting)
	return waiting, refused, nil
}

// ErrFromEnv is Rotate's error on a gateway whose key is given by
// TENANTDB_SERVER_KEY.
var ErrFromEnv = apierr.Validationf("this gateway's server key comes from %s, which tenantdb cannot change: give every gateway the key in <data-dir>/%s instead (the same key; unset the variable and restart them one by one), then rotate again; or rotate it yourself by stopping every gateway and starting them all with a new key — which only works on an engine whose credentials and tenant keys are re-sealed, so it is not an option for a running fleet", auth.ServerKeyEnv, auth.ServerKeyFile)

// Rotate rotates the fleet's server key to a new random one (or joins
// the rotation in progress) and returns when every live gateway uses it
// and the old key opens nothing of it any more. actor names who asked.
// Errors: Validation when a gateway cannot follow (its key comes from
// the environment) or not every live gateway accepted the new key in
// time (the rotation is then abandoned; nothing changed).
func (r *Rotator) Rotate(ctx context.Context, actor string) error {
	if r.o.FromEnv {
		return ErrFromEnv
	}
	if err := r.follow(ctx); err != nil { // a rotation that just ended, here too
		return apierr.Wrap(apierr.Internal, err, "following the server key rotation")
	}
	rec, _, err := r.read(ctx)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading the rotation record")
	}
	if rec == nil {
		if rec, err = r.begin(ctx, actor); err != nil {
			return err
		}
	}
	done := r.driveAsync(rec.ID)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
	}
	r.mu.Lock()
	msg := r.lastError[rec.ID]
	r.mu.Unlock()
	switch {
	case msg == errTaken.Error():
		return r.waitGone(ctx, rec.ID) // another gateway drives it
	case strings.HasPrefix(msg, abandonedMsg):
		return apierr.Validationf("%s", msg)
	case msg != "":
		return apierr.New(apierr.Internal, "the server key rotation stopped (%s); another gateway, or this one, resumes it within seconds", msg)
	}
	return nil
}

// waitGone waits until rotation id's record is gone.
func (r *Rotator) waitGone(ctx context.Context, id string) error {
	for {
		rec, _, err := r.read(ctx)
		if err != nil {
			return apierr.Wrap(apierr.Internal, err, "reading the rotation record")
		}
		if rec == nil || rec.ID != id {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.o.Poll / 4):
		}
	}
}

const abandonedMsg = "the server key rotation was abandoned"

// begin writes a new rotation's record.
func (r *Rotator) begin(ctx context.Context, actor string) (*rotation, error) {
	r.mu.Lock()
	cur := r.key
	busy := r.state != 0
	r.mu.Unlock()
	if busy {
		return nil, apierr.Validationf("a server key rotation is still ending on this gateway; try again in a few seconds")
	}
	master := make([]byte, 32)
	rand.Read(master)
	next, err := auth.NewServerKey(master)
	if err != nil {
		return nil, err
	}
	idb := make([]byte, 8)
	rand.Read(idb)
	now := time.Now().UnixMilli()
	rec := &rotation{ID: hex.EncodeToString(idb), Phase: phaseAccept, From: checkHex(cur), To: checkHex(next),
		Owner: r.o.Self, Beat: now, Started: now, Actor: actor}
	if rec.Next, err = sealNext(cur, rec.ID, rec.To, master); err != nil {
		return nil, err
	}
	clear(master)
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var b kv.Batch
	b.SetIfAbsent(recKey(), data)
	if err := r.o.Store.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
		rec, _, err = r.read(ctx) // another gateway began one at the same time: follow that one
		if err == nil && rec == nil {
			err = errors.New("fleetkey: a rotation began and ended meanwhile")
		}
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading the rotation record")
		}
		return rec, nil
	} else if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "writing the rotation record")
	}
	r.o.Audit(ctx, "server-key.rotate.start", fmt.Sprintf("rotation %s: server key %.16s -> %.16s", rec.ID, rec.From, rec.To))
	return rec, nil
}

// takeOver drives the rotation in progress if its driver stopped
// renewing its claim.
func (r *Rotator) takeOver() {
	rec, _, err := r.read(r.ctx)
	if err != nil || rec == nil {
		return
	}
	if rec.Owner == r.o.Self || time.Since(time.UnixMilli(rec.Beat)) >= r.o.Lease {
		r.driveAsync(rec.ID)
	}
}

// driveAsync drives rotation id in the background unless this process
// does already, and returns a channel closed when it stops.
func (r *Rotator) driveAsync(id string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.doneCh[id]; ok {
		return ch
	}
	ch := make(chan struct{})
	r.doneCh[id] = ch
	delete(r.lastError, id)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := r.drive(r.ctx, id)
		r.mu.Lock()
		if err != nil {
			r.lastError[id] = err.Error()
		}
		delete(r.doneCh, id)
		if r.driving == id {
			r.driving = ""
		}
		r.mu.Unlock()
		close(ch)
		switch {
		case err == nil, errors.Is(err, context.Canceled), errors.Is(err, errTaken):
		case strings.HasPrefix(err.Error(), abandonedMsg):
			r.o.Logger.Warn("fleetkey: server key rotation abandoned", "rotation", id, "err", err)
		default:
			r.o.Logger.Error("fleetkey: server key rotation stopped; it is resumed within seconds", "rotation", id, "err", err)
		}
	}()
	return ch
}

var errTaken = errors.New("fleetkey: another gateway drives the rotation")

// drive takes rotation id through its phases, renewing the claim, until
// its record is gone.
func (r *Rotator) drive(ctx context.Context, id string) error {
	resumed := false
	for {
		rec, raw, err := r.read(ctx)
		if err != nil {
			return err
		}
		if rec == nil || rec.ID != id {
			return nil // finished or abandoned
		}
		if rec.Owner != r.o.Self {
			if time.Since(time.UnixMilli(rec.Beat)) < r.o.Lease {
				return errTaken
			}
			resumed = true
		}
		// Claim (or renew the claim), on condition of the record read.
		if rec.Owner != r.o.Self || time.Since(time.UnixMilli(rec.Beat)) >= r.o.Lease/4 {
			claimed := *rec
			claimed.Owner, claimed.Beat = r.o.Self, time.Now().UnixMilli()
			if raw, err = r.replace(ctx, raw, &claimed); errors.Is(err, kv.ErrConflict) {
				continue
			} else if err != nil {
				return err
			}
			rec = &claimed
		}
		if resumed {
			resumed = false
			r.o.Audit(ctx, "server-key.rotate.resumed", fmt.Sprintf("rotation %s taken over in phase %s by gateway %s", rec.ID, phaseNames[rec.Phase], r.o.Self))
		}
		r.mu.Lock()
		r.driving = id
		if r.rid == id && r.state == phaseDone && r.old != nil {
			// NB: a driver taking over in phase 4 opens stragglers under
			// the old key again, for the last pass.
			if err := r.use(r.next, r.old); err != nil {
				r.mu.Unlock()
				return err
			}
		}
		r.mu.Unlock()
		if err := r.follow(ctx); err != nil {
			return err
		}
		next, err := r.step(ctx, rec, raw)
		if err != nil || next {
			if err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.o.Poll / 4):
		}
	}
}

// replace writes rec in place of the stored bytes old and returns the
// new bytes. Errors: kv.ErrConflict if it changed.
func (r *Rotator) replace(ctx context.Context, old []byte, rec *rotation) ([]byte, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var b kv.Batch
	b.SetIfEquals(recKey(), old, data)
	return data, r.o.Store.Apply(ctx, &b)
}

// step does what phase rec.Phase waits for; it reports whether it moved
// the rotation on (the caller then reads it again at once).
func (r *Rotator) step(ctx context.Context, rec *rotation, raw []byte) (bool, error) {
	switch rec.Phase {
	case phaseAccept:
		waiting, refused, err := r.pending(ctx, rec.ID, phaseAccept)
		if err != nil {
			return false, err
		}
		switch {
		case refused != "":
			return false, r.abandon(ctx, rec, raw, "a gateway cannot take part: "+refused)
		case len(waiting) > 0 && time.Since(time.UnixMilli(rec.Started)) > r.o.AcceptTimeout:
			return false, r.abandon(ctx, rec, raw, fmt.Sprintf("gateways %s did not accept the new key within %v (a gateway of an older version, or stalled)", strings.Join(waiting, ", "), r.o.AcceptTimeout))
		case len(waiting) > 0:
			return false, nil
		}
		return r.moveTo(ctx, rec, raw, phaseSwitch)
	case phaseSwitch:
		waiting, _, err := r.pending(ctx, rec.ID, phaseSwitch)
		if err != nil || len(waiting) > 0 {
			return false, err
		}
		// NB: a write a gateway sealed under the old key just before it
		// switched may still be on its way to the engine.
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(r.o.Grace):
		}
		return r.moveTo(ctx, rec, raw, phaseReseal)
	case phaseReseal:
		sealed, wrapped, err := r.resealAll(ctx)
		if err != nil {
			return false, err
		}
		done := *rec
		done.Phase, done.Sealed, done.Wrapped = phaseDone, rec.Sealed+sealed, rec.Wrapped+wrapped
		data, err := json.Marshal(&done)
		if err != nil {
			return false, err
		}
		r.mu.Lock()
		next, old := r.next, r.old
		r.mu.Unlock()
		if next == nil || checkHex(next) != rec.To {
			return false, errors.New("fleetkey: this gateway does not hold the new key")
		}
		// NB: one transaction: the records are under the new key, and
		// the check record says so, and the old key is marked retired.
		var b kv.Batch
		b.SetIfEquals(recKey(), raw, data)
		b.Set(keyspace.System(keyspace.SysServerKeyCheck), next.Check())
		b.Set(retiredKey(old.Check()), []byte(time.Now().UTC().Format(time.RFC3339)))
		if err := r.o.Store.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
			return true, nil
		} else if err != nil {
			return false, err
		}
		return true, nil
	case phaseDone:
		waiting, _, err := r.pending(ctx, rec.ID, phaseDone)
		if err != nil || len(waiting) > 0 {
			return false, err
		}
		// A last pass for writes sealed under the old key that landed
		// after the re-sealing (this gateway still opens them). NB: best
		// effort: a driver that took over with only the new key cannot
		// open a straggler, which is lost with the old key either way.
		sealed, wrapped, err := r.resealAll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			r.o.Logger.Error("fleetkey: the last re-sealing pass failed; records still under the old key will not open", "rotation", rec.ID, "err", err)
		}
		var b kv.Batch
		b.DeleteIfEquals(recKey(), raw)
		if err := r.o.Store.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
			return true, nil
		} else if err != nil {
			return false, err
		}
		r.finish(ctx, rec.ID)
		r.o.Audit(ctx, "server-key.rotate.done", fmt.Sprintf("rotation %s: server key %.16s; %d credentials re-sealed, %d tenants' data keys re-wrapped; the old key opens nothing any more",
			rec.ID, rec.To, rec.Sealed+sealed, rec.Wrapped+wrapped))
		return true, nil
	}
	return false, fmt.Errorf("fleetkey: unknown rotation phase %d", rec.Phase)
}

// moveTo writes rec in phase p.
func (r *Rotator) moveTo(ctx context.Context, rec *rotation, raw []byte, p int) (bool, error) {
	n := *rec
	n.Phase, n.Beat = p, time.Now().UnixMilli()
	if _, err := r.replace(ctx, raw, &n); err != nil && !errors.Is(err, kv.ErrConflict) {
		return false, err
	}
	r.o.Logger.Info("fleetkey: server key rotation", "rotation", rec.ID, "phase", phaseNames[p])
	return true, nil
}

// resealAll re-seals the credentials and re-wraps the tenant keys under
// the new key until a pass finds nothing to do, and returns the counts.
func (r *Rotator) resealAll(ctx context.Context) (sealed, wrapped int, err error) {
	for range 10 {
		s, err := r.o.Auth.Reseal(ctx)
		if err != nil {
			return sealed, wrapped, err
		}
		w, err := r.o.Keys.RewrapAll()
		if err != nil {
			return sealed, wrapped, err
		}
		moved, err := r.resealStream(ctx)
		if err != nil {
			return sealed, wrapped, err
		}
		sealed, wrapped = sealed+s, wrapped+w
		if s == 0 && w == 0 && !moved {
			return sealed, wrapped, nil
		}
	}
	return sealed, wrapped, errors.New("fleetkey: records under the old key keep appearing")
}

// finish ends the driver's part once the record is deleted: the old key
// is forgotten here too, and the gateways' adoption records removed.
func (r *Rotator) finish(ctx context.Context, id string) {
	r.mu.Lock()
	if r.rid == id && r.next != nil {
		r.key = r.next
		if err := r.use(r.key, nil); err != nil {
			r.o.Logger.Error("fleetkey: dropping the old key", "err", err)
		}
		r.old, r.next, r.master, r.state, r.rid = nil, nil, nil, 0, ""
	}
	r.mu.Unlock()
	r.deleteAdoptions(ctx, id)
}

func (r *Rotator) deleteAdoptions(ctx context.Context, id string) {
	lo := keyspace.System(keyspace.SysServerKeyAdopted)
	var b kv.Batch
	_ = r.o.Store.Scan(ctx, lo, keyspace.PrefixEnd(lo), func(k, v []byte) bool {
		var a adoption
		if json.Unmarshal(v, &a) == nil && a.ID == id {
			b.DeleteIfEquals(bytes.Clone(k), bytes.Clone(v))
		}
		return true
	})
	for _, op := range b.Ops { // NB: one by one: a gateway may rewrite its own meanwhile
		var one kv.Batch
		one.Ops = append(one.Ops, op)
		_ = r.o.Store.Apply(ctx, &one)
	}
}

// abandon deletes the record of a rotation still in its accept phase
// (nothing is sealed under the new key yet): every gateway goes back to
// the old key alone.
func (r *Rotator) abandon(ctx context.Context, rec *rotation, raw []byte, why string) error {
	var b kv.Batch
	b.DeleteIfEquals(recKey(), raw)
	if err := r.o.Store.Apply(ctx, &b); err != nil {
		return err
	}
	r.o.Audit(ctx, "server-key.rotate.abandoned", fmt.Sprintf("rotation %s: %s", rec.ID, why))
	r.mu.Lock()
	err := r.noRotation(ctx)
	r.mu.Unlock()
	if err != nil {
		r.o.Logger.Error("fleetkey: going back to the old key", "err", err)
	}
	r.deleteAdoptions(ctx, rec.ID)
	return fmt.Errorf("%s, nothing changed: %s", abandonedMsg, why)
}
