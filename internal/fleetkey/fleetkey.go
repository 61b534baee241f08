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
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/client"
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

func retiredKey(check []byte) []byte { return keyspace.RetiredServerKey(check) }

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
		rec, _, err := r.read(r.ctx)
		if err == nil {
			err = r.followRec(r.ctx, rec)
		}
		if err != nil && r.ctx.Err() == nil {
			r.o.Logger.Warn("fleetkey: following the server key rotation", "err", err)
		}
		if rec != nil && (rec.Owner == r.o.Self || time.Since(time.UnixMilli(rec.Beat)) >= r.o.Lease) {
			r.driveAsync(rec.ID) // its driver stopped renewing its claim: take it over
		}
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

// use makes cur the key that seals in the authenticator and the keyring,
// and also (if not nil) one they open with.
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
	return r.followRec(ctx, rec)
}

// followRec is follow with the record read (nil: none).
func (r *Rotator) followRec(ctx context.Context, rec *rotation) error {
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
		defer clear(master)
		if err != nil {
			return err
		}
		r.old, r.next, r.rid = r.key, next, rec.ID
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
	r.old, r.next, r.state, r.rid = nil, nil, 0, ""
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
