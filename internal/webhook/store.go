package webhook

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Store is the part of *storage.DB the embedded server's subscriptions
// are kept in (Options.DB; the Manager reaches it through kv.Local).
type Store interface {
	Get(key []byte) ([]byte, error)
	NewBatch() *storage.Batch
	Apply(b *storage.Batch) error
	ApplyNoSync(b *storage.Batch) error
	NewIter(lower, upper []byte) *storage.Iter
}

var _ Store = (*storage.DB)(nil)

// KV is where subscriptions and their state are kept (Options.KV): the
// control plane's seam (package kv), so a fleet of gateways keeps them in
// its engine (enginekv) and the embedded server in its store (kv.Local).
// Every record of a subscription is in its tenant's partition
// (keyspace.Partition), the registry in the system one.
type KV interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

var _ KV = (*kv.Local)(nil)

// position is a subscription's durable delivery state, under
// keyspace.WebhookCursor.
type position struct {
	Cursor string `json:"cursor"`
	// FailingSince is when the batch at Cursor first failed (zero while
	// deliveries succeed): its retry period counts from here, across
	// restarts.
	FailingSince time.Time `json:"failing_since,omitzero"`
	// Redrive asks the worker to deliver the dead-letter list again
	// before it continues with the log.
	Redrive bool `json:"redrive,omitempty"`
	// Holder is the gateway delivering the subscription until Expires
	// (Options.Lease; empty on the embedded server, whose one process
	// delivers everything). NB: the holder's every write of the position
	// is conditioned on the bytes it last read or wrote, so a gateway
	// that lost the lease advances nothing.
	Holder  string    `json:"holder,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

func (p position) cursor() changelog.Cursor {
	c, err := changelog.ParseCursor(p.Cursor)
	if err != nil {
		return changelog.Cursor{}
	}
	return c
}

// Attempt is one delivery attempt as `deliveries` shows it.
type Attempt struct {
	Time      time.Time `json:"time"`
	Status    int       `json:"status"` // HTTP status; 0 when no response came
	LatencyMS float64   `json:"latency_ms"`
	Records   int       `json:"records"`
	// Outcome is delivered, retry, dead-lettered, disabled or redriven.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// FirstSequence and LastSequence are the SequenceNumbers of the
	// batch's first and last record.
	FirstSequence string `json:"first_sequence,omitempty"`
	LastSequence  string `json:"last_sequence,omitempty"`
}

// DeadLetter is a batch that could not be delivered within the retry
// period (or was refused with a status that is not retried).
type DeadLetter struct {
	N      uint64    `json:"n"`
	Time   time.Time `json:"time"`
	Status int       `json:"status"`
	Error  string    `json:"error,omitempty"`
	// Records are the batch's records, each as delivered (Record).
	Records []json.RawMessage `json:"records"`
}

// maxAttempts is how many attempts a subscription keeps.
const maxAttempts = 200

// storeTimeout bounds one call of the store (an engine's, for a gateway).
const storeTimeout = 30 * time.Second

// store keeps subscriptions and their state.
type store struct {
	db   KV
	aead cipher.AEAD
	// fleet: writes of a subscription's state are conditioned on the
	// position as read (Options.Lease), not only on the subscription.
	fleet bool
}

func newStore(db KV, key []byte) (*store, error) {
	if len(key) < 32 {
		return nil, errors.New("webhook: the secret key must have 32 bytes")
	}
	blk, err := aes.NewCipher(key[:32])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, err
	}
	return &store{db: db, aead: aead}, nil
}

func bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// notFound reports whether err says a key is absent.
func notFound(err error) bool {
	return errors.Is(err, kv.ErrNotFound) || errors.Is(err, storage.ErrNotFound)
}

// seal encrypts a secret, bound to its tenant and subscription.
func (s *store) seal(t tenancy.TenantID, id, plain string) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, []byte(plain), append(t[:], id...))
}

func (s *store) open(t tenancy.TenantID, id string, sealed []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("webhook: sealed secret too short")
	}
	p, err := s.aead.Open(nil, sealed[:n], sealed[n:], append(t[:], id...))
	if err != nil {
		return "", fmt.Errorf("webhook: opening a sealed secret: %w", err)
	}
	return string(p), nil
}

func (s *store) raw(key []byte) ([]byte, error) {
	ctx, cancel := bg()
	defer cancel()
	return s.db.Get(ctx, key)
}

func (s *store) scan(lo, hi []byte, f func(k, v []byte) bool) error {
	ctx, cancel := bg()
	defer cancel()
	return s.db.Scan(ctx, lo, hi, f)
}

func (s *store) apply(b *kv.Batch) error {
	ctx, cancel := bg()
	defer cancel()
	return s.db.Apply(ctx, b)
}

func (s *store) get(t tenancy.TenantID, id string) (*record, error) {
	r, _, err := s.getRaw(t, id)
	return r, err
}

// getRaw returns subscription id and its stored bytes (for a write
// conditioned on them). Errors: storage.ErrNotFound.
func (s *store) getRaw(t tenancy.TenantID, id string) (*record, []byte, error) {
	v, err := s.raw(keyspace.WebhookSubscription(t, id))
	if notFound(err) {
		return nil, nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	r := new(record)
	if err := json.Unmarshal(v, r); err != nil {
		return nil, nil, fmt.Errorf("webhook: decoding subscription %s: %w", id, err)
	}
	return r, v, nil
}

func (s *store) list(t tenancy.TenantID) ([]*record, error) {
	lo, hi := keyspace.WebhookSubscriptions(t)
	var out []*record
	var derr error
	err := s.scan(lo, hi, func(_, v []byte) bool {
		r := new(record)
		if derr = json.Unmarshal(v, r); derr != nil {
			derr = fmt.Errorf("webhook: decoding a subscription: %w", derr)
			return false
		}
		out = append(out, r)
		return true
	})
	return out, errors.Join(err, derr)
}

// registry returns every (tenant, id) of the system registry.
func (s *store) registry() (ts []tenancy.TenantID, ids []string, err error) {
	lo, hi := keyspace.WebhookRegistryRange()
	err = s.scan(lo, hi, func(k, _ []byte) bool {
		if t, id, ok := keyspace.WebhookRegistryEntry(k); ok {
			ts, ids = append(ts, t), append(ids, id)
		}
		return true
	})
	return ts, ids, err
}

// put writes r (and, when pos is not nil, its position) in one synced
// batch.
func (s *store) put(t tenancy.TenantID, r *record, pos *position) error {
	return s.putIf(t, r, nil, pos)
}

// putIf is put, on a fleet conditioned on the subscription's stored
// bytes being old (nil: unconditional). Errors: kv.ErrConflict.
func (s *store) putIf(t tenancy.TenantID, r *record, old []byte, pos *position) error {
	var b kv.Batch
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if old != nil && s.fleet {
		b.SetIfEquals(keyspace.WebhookSubscription(t, r.ID), old, v)
	} else {
		b.Set(keyspace.WebhookSubscription(t, r.ID), v)
	}
	if pos != nil {
		pv, _ := json.Marshal(pos)
		b.Set(keyspace.WebhookCursor(t, r.ID), pv)
	}
	return s.apply(&b)
}

// errLimit is create's answer for a tenant at its limit.
var errLimit = errors.New("webhook: the tenant has the most subscriptions it may have")

// count returns how many subscriptions tenant t has, as its count record
// says, and the record's bytes (nil when there is none: no subscription
// was created since counts are kept).
func (s *store) count(t tenancy.TenantID) (int64, []byte, error) {
	v, err := s.raw(keyspace.WebhookCount(t))
	if notFound(err) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	n, err := kv.DecodeCounter(v)
	return n, v, err
}

// maxListed bounds the subscriptions a creation without a count record
// lists into its batch's conditions (the engine takes 100 operations).
const maxListed = 90

// create stores new subscription r with its position, its registry
// entry, a dead-letter count of 0 and the tenant's count one higher, in
// one batch conditioned on the count it read: so creations racing
// through several gateways never take the tenant past max (the engine
// orders the conditional writes of the count). Without a count record
// the count is the subscriptions listed, and the batch is conditioned on
// the record still being absent and on each listed one still existing,
// so a creation or deletion between the listing and the write conflicts.
// Errors: errLimit; kv.ErrConflict (read again and retry).
func (s *store) create(t tenancy.TenantID, r *record, pos position, max int) error {
	n, old, err := s.count(t)
	if err != nil {
		return err
	}
	var b kv.Batch
	if old == nil {
		lo, hi := keyspace.WebhookSubscriptions(t)
		var keys [][]byte
		if err := s.scan(lo, hi, func(k, _ []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			return true
		}); err != nil {
			return err
		}
		n = int64(len(keys))
		if len(keys) <= maxListed {
			for _, k := range keys {
				b.ExpectPresent(k)
			}
		}
	}
	if n >= int64(max) {
		return errLimit
	}
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	pv, _ := json.Marshal(pos)
	b.SetIfAbsent(keyspace.WebhookSubscription(t, r.ID), v)
	b.Set(keyspace.WebhookCursor(t, r.ID), pv)
	b.Add(keyspace.WebhookDeadCount(t, r.ID), 0)
	b.SetIfEquals(keyspace.WebhookCount(t), old, kv.EncodeCounter(n+1))
	b.Set(keyspace.WebhookRegistry(t, r.ID), []byte{})
	return s.apply(&b)
}

// remove deletes subscription id with everything it holds and takes it
// off its tenant's count, in one batch conditioned on the subscription
// existing and the count read (retried on a conflict). Errors:
// storage.ErrNotFound (it was deleted meanwhile).
func (s *store) remove(t tenancy.TenantID, id string) error {
	ranges := func(b *kv.Batch) {
		b.DeleteRange(keyspace.WebhookDeadLetters(t, id))
		b.DeleteRange(keyspace.WebhookAttempts(t, id))
	}
	for i := 0; ; i++ {
		n, old, err := s.count(t)
		if err != nil {
			return err
		}
		var b kv.Batch
		ranges(&b)
		b.Ops = append(b.Ops, kv.Op{Kind: kv.OpDelete, Key: keyspace.WebhookSubscription(t, id), Cond: kv.CondPresent})
		b.Delete(keyspace.WebhookCursor(t, id))
		b.Delete(keyspace.WebhookDeadCount(t, id))
		b.Delete(keyspace.WebhookRegistry(t, id))
		if old != nil {
			b.SetIfEquals(keyspace.WebhookCount(t), old, kv.EncodeCounter(max(n-1, 0)))
		} else {
			b.Expect(keyspace.WebhookCount(t), nil)
		}
		err = s.apply(&b)
		if errors.Is(err, kv.ErrConflict) {
			if _, gerr := s.raw(keyspace.WebhookSubscription(t, id)); notFound(gerr) {
				return storage.ErrNotFound
			}
			if i < 4*conflictRetries {
				continue
			}
		}
		if err != nil {
			return err
		}
		break
	}
	// NB: the ranges once more: an engine deletes them before the rest of
	// the batch (enginekv), and a fleet worker's write conditioned on the
	// position, deleted only with the rest, may have added an attempt
	// between the two.
	var b kv.Batch
	ranges(&b)
	return s.apply(&b)
}

// forget deletes a registry entry whose subscription is gone (its tenant
// was deleted).
func (s *store) forget(t tenancy.TenantID, id string) error {
	var b kv.Batch
	b.Delete(keyspace.WebhookRegistry(t, id))
	return s.apply(&b)
}

func (s *store) position(t tenancy.TenantID, id string) (position, error) {
	p, _, err := s.positionRaw(t, id)
	return p, err
}

// positionRaw returns the position and its stored bytes (nil when none
// is stored).
func (s *store) positionRaw(t tenancy.TenantID, id string) (position, []byte, error) {
	var p position
	v, err := s.raw(keyspace.WebhookCursor(t, id))
	if notFound(err) {
		return p, nil, nil
	}
	if err != nil {
		return p, nil, err
	}
	return p, v, json.Unmarshal(v, &p)
}

// tx is one batch of a worker's state changes.
type tx struct {
	s *store
	t tenancy.TenantID
	b kv.Batch
	// pre are written before b (the parts of a large dead letter, which
	// b's letter names), post after it commits (parts of a letter b
	// removed); neither is conditioned.
	pre, post []kv.Batch
	// id and pos: the position to write, if any.
	id  string
	pos *position
}

func (s *store) begin(t tenancy.TenantID) *tx { return &tx{s: s, t: t} }

func (x *tx) setPosition(id string, p position) { x.id, x.pos = id, &p }

func (x *tx) attempt(id string, n uint64, a Attempt) {
	v, _ := json.Marshal(a)
	x.b.Set(keyspace.WebhookAttempt(x.t, id, n), v)
	if n > maxAttempts {
		x.b.Delete(keyspace.WebhookAttempt(x.t, id, n-maxAttempts))
	}
}

// deadLetter adds d to the list and one to the list's count, in the
// batch. NB: the count changes only in the batch that adds or removes a
// letter, so it is exact, and show reads it instead of the list.
//
// A letter larger than deadPartSize keeps its records in parts of that
// size, each a record of its own written before the batch (an engine
// item holds 400 KB and a transaction 4 MB, a delivery's body up to 6 MB);
// the letter says how many, and a reader gets the records whole. Parts
// of a write that did not commit (a lost lease) are deleted first, so a
// letter n never reads another's.
func (x *tx) deadLetter(id string, d DeadLetter) {
	v, _ := json.Marshal(d)
	if len(v) > deadPartSize {
		recs, _ := json.Marshal(d.Records)
		head := storedDead{DeadLetter: d, Parts: (len(recs) + deadPartSize - 1) / deadPartSize}
		head.Records = nil
		v, _ = json.Marshal(head)
		var clear kv.Batch
		clear.DeleteRange(keyspace.WebhookDeadLetterParts(x.t, id, d.N))
		x.pre = append(x.pre, clear)
		for p := 0; p < head.Parts; p++ {
			var b kv.Batch
			b.Set(keyspace.WebhookDeadLetterPart(x.t, id, d.N, uint16(p)), recs[p*deadPartSize:min(len(recs), (p+1)*deadPartSize)])
			x.pre = append(x.pre, b)
		}
	}
	x.b.Set(keyspace.WebhookDeadLetter(x.t, id, d.N), v)
	x.b.Add(keyspace.WebhookDeadCount(x.t, id), 1)
}

// deadPartSize is the most a dead letter's record holds (of its own JSON,
// or of a part of its records' JSON): an engine item holds 400 KB with
// its key and attribute names, and a transaction 4 MB.
const deadPartSize = 300 << 10

// storedDead is a dead letter as stored: one whose records are in Parts
// parts stores none itself.
type storedDead struct {
	DeadLetter
	Parts int `json:"parts,omitempty"`
}

// dropDeadLetter removes letter n and one from the count, conditioned on
// the letter being there (so it is never counted off twice).
func (x *tx) dropDeadLetter(id string, n uint64) {
	x.b.Ops = append(x.b.Ops, kv.Op{Kind: kv.OpDelete, Key: keyspace.WebhookDeadLetter(x.t, id, n), Cond: kv.CondPresent})
	x.b.Add(keyspace.WebhookDeadCount(x.t, id), -1)
	var b kv.Batch
	b.DeleteRange(keyspace.WebhookDeadLetterParts(x.t, id, n))
	x.post = append(x.post, b)
}

// guard makes the batch conditional: on the position's stored bytes
// being old (a fleet: a gateway that lost the lease, or whose position a
// replay moved, writes nothing), or else on the subscription existing.
// It returns the bytes of the position written (nil if none).
func (x *tx) guard(id string, old []byte) []byte {
	var pv []byte
	if x.pos != nil {
		pv, _ = json.Marshal(x.pos)
	}
	if x.s.fleet && old == nil {
		// NB: no position stored: one is taken only while the
		// subscription exists, never written again after its tenant's
		// (or its own) deletion removed it, which a worker that read the
		// subscription before the deletion would otherwise do.
		x.b.ExpectPresent(keyspace.WebhookSubscription(x.t, id))
	}
	switch {
	case x.s.fleet && pv != nil:
		x.b.SetIfEquals(keyspace.WebhookCursor(x.t, id), old, pv)
	case x.s.fleet:
		x.b.Expect(keyspace.WebhookCursor(x.t, id), old)
	default:
		x.b.ExpectPresent(keyspace.WebhookSubscription(x.t, id))
		if pv != nil {
			x.b.Set(keyspace.WebhookCursor(x.t, id), pv)
		}
	}
	return pv
}

// commit applies the batch, synced (a cursor or dead letter must survive
// a crash once the worker acts on it).
func (x *tx) commit() error { return x.apply() }

// commitNoSync applies the batch without waiting for the WAL sync (an
// attempt record alone: losing it in a crash loses only a diagnostic).
func (x *tx) commitNoSync() error {
	x.b.NoSync = true
	return x.apply()
}

func (x *tx) apply() error {
	for i := range x.pre {
		if err := x.s.apply(&x.pre[i]); err != nil {
			return err
		}
	}
	if err := x.s.apply(&x.b); err != nil {
		return err
	}
	for i := range x.post {
		// NB: parts of a letter gone are found by nobody (the letter
		// named them); one left by a failure here is deleted with the
		// subscription.
		_ = x.s.apply(&x.post[i])
	}
	return nil
}

// lastN returns the number of the last key of the range (0 if empty):
// keys of the range are its prefix and a number of 8 bytes (a dead
// letter's parts, longer, are skipped).
func (s *store) lastN(lo, hi []byte) (uint64, error) {
	var last []byte
	err := s.scan(lo, hi, func(k, _ []byte) bool {
		if len(k) == len(lo)+8 {
			last = append(last[:0], k...)
		}
		return true
	})
	if len(last) >= 8 {
		return binary.BigEndian.Uint64(last[len(last)-8:]), err
	}
	return 0, err
}

func (s *store) attempts(t tenancy.TenantID, id string, limit int) ([]Attempt, error) {
	lo, hi := keyspace.WebhookAttempts(t, id)
	var all [][]byte
	err := s.scan(lo, hi, func(_, v []byte) bool {
		all = append(all, append([]byte(nil), v...))
		return true
	})
	if err != nil {
		return nil, err
	}
	var out []Attempt
	for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
		var a Attempt
		if err := json.Unmarshal(all[i], &a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// deadLetters returns the first limit dead letters of subscription id,
// records whole (a large letter's parts joined), and how many it holds.
func (s *store) deadLetters(t tenancy.TenantID, id string, limit int) ([]DeadLetter, int, error) {
	lo, hi := keyspace.WebhookDeadLetters(t, id)
	headLen := len(lo) + 8
	var out []DeadLetter
	n := 0
	var derr error
	var head *storedDead // a letter whose parts follow
	var parts []byte
	var got int
	finish := func() {
		if head == nil {
			return
		}
		if got != head.Parts {
			derr = fmt.Errorf("webhook: dead letter %d has %d of its %d parts", head.N, got, head.Parts)
		} else if derr = json.Unmarshal(parts, &head.Records); derr != nil {
			derr = fmt.Errorf("webhook: decoding dead letter %d: %w", head.N, derr)
		}
		out = append(out, head.DeadLetter)
		head, parts, got = nil, nil, 0
	}
	err := s.scan(lo, hi, func(k, v []byte) bool {
		if len(k) != headLen {
			if head != nil && len(k) == headLen+2 && int(binary.BigEndian.Uint16(k[headLen:])) == got {
				parts = append(parts, v...)
				got++
			}
			return true
		}
		finish()
		if derr != nil {
			return false
		}
		n++
		if len(out) >= limit {
			return true
		}
		var d storedDead
		if derr = json.Unmarshal(v, &d); derr != nil {
			return false
		}
		if d.Parts > 0 {
			head = &d
			return true
		}
		out = append(out, d.DeadLetter)
		return true
	})
	finish()
	if err = errors.Join(err, derr); err != nil {
		return nil, 0, err
	}
	return out, n, nil
}

// deadCount returns how many dead letters subscription id holds, from
// its count record: one read. A subscription created before counts were
// kept has none until its worker counts its list once (countDead); until
// then its list is counted here.
func (s *store) deadCount(t tenancy.TenantID, id string) (int, error) {
	v, err := s.raw(keyspace.WebhookDeadCount(t, id))
	if notFound(err) {
		_, n, err := s.deadLetters(t, id, 0)
		return n, err
	}
	if err != nil {
		return 0, err
	}
	n, err := kv.DecodeCounter(v)
	return int(n), err
}

// countDead is deadCount for the worker: without a count record it counts
// the list and stores the count, conditioned on there still being no
// record (a letter added meanwhile wrote one: read that instead).
func (s *store) countDead(t tenancy.TenantID, id string) (int, error) {
	for i := 0; ; i++ {
		v, err := s.raw(keyspace.WebhookDeadCount(t, id))
		if err == nil {
			n, err := kv.DecodeCounter(v)
			return int(n), err
		}
		if !notFound(err) {
			return 0, err
		}
		_, n, err := s.deadLetters(t, id, 0)
		if err != nil {
			return 0, err
		}
		var b kv.Batch
		b.Ops = append(b.Ops, kv.Op{Kind: kv.OpAdd, Key: keyspace.WebhookDeadCount(t, id), Delta: int64(n), Cond: kv.CondAbsent})
		b.ExpectPresent(keyspace.WebhookSubscription(t, id))
		err = s.apply(&b)
		if errors.Is(err, kv.ErrConflict) && i < 3 {
			continue
		}
		return n, err
	}
}
