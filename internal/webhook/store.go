package webhook

import (
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
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Store is the part of *storage.DB the subscriptions are kept in.
type Store interface {
	Get(key []byte) ([]byte, error)
	NewBatch() *storage.Batch
	Apply(b *storage.Batch) error
	ApplyNoSync(b *storage.Batch) error
	NewIter(lower, upper []byte) *storage.Iter
}

var _ Store = (*storage.DB)(nil)

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

// store keeps subscriptions and their state.
type store struct {
	db   Store
	aead cipher.AEAD
}

func newStore(db Store, key []byte) (*store, error) {
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

func (s *store) get(t tenancy.TenantID, id string) (*record, error) {
	v, err := s.db.Get(keyspace.WebhookSubscription(t, id))
	if err != nil {
		return nil, err
	}
	r := new(record)
	if err := json.Unmarshal(v, r); err != nil {
		return nil, fmt.Errorf("webhook: decoding subscription %s: %w", id, err)
	}
	return r, nil
}

// exists reports whether subscription id of tenant t is stored.
func (s *store) exists(t tenancy.TenantID, id string) (bool, error) {
	_, err := s.db.Get(keyspace.WebhookSubscription(t, id))
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (s *store) list(t tenancy.TenantID) ([]*record, error) {
	lo, hi := keyspace.WebhookSubscriptions(t)
	it := s.db.NewIter(lo, hi)
	defer it.Close()
	var out []*record
	for ok := it.First(); ok; ok = it.Next() {
		r := new(record)
		if err := json.Unmarshal(it.Value(), r); err != nil {
			return nil, fmt.Errorf("webhook: decoding a subscription: %w", err)
		}
		out = append(out, r)
	}
	return out, it.Error()
}

// registry returns every (tenant, id) of the system registry.
func (s *store) registry() (ts []tenancy.TenantID, ids []string, err error) {
	lo, hi := keyspace.WebhookRegistryRange()
	it := s.db.NewIter(lo, hi)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if t, id, ok := keyspace.WebhookRegistryEntry(it.Key()); ok {
			ts, ids = append(ts, t), append(ids, id)
		}
	}
	return ts, ids, it.Error()
}

// put writes r (and, when pos is not nil, its position) in one synced
// batch; create also adds the registry entry.
func (s *store) put(t tenancy.TenantID, r *record, pos *position, create bool) error {
	b := s.db.NewBatch()
	defer b.Close()
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b.Set(keyspace.WebhookSubscription(t, r.ID), v)
	if pos != nil {
		pv, _ := json.Marshal(pos)
		b.Set(keyspace.WebhookCursor(t, r.ID), pv)
	}
	if create {
		b.Set(keyspace.WebhookRegistry(t, r.ID), nil)
	}
	return s.db.Apply(b)
}

// remove deletes subscription id with everything it holds.
func (s *store) remove(t tenancy.TenantID, id string) error {
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(keyspace.WebhookSubscription(t, id))
	b.Delete(keyspace.WebhookCursor(t, id))
	b.DeleteRange(keyspace.WebhookDeadLetters(t, id))
	b.DeleteRange(keyspace.WebhookAttempts(t, id))
	b.Delete(keyspace.WebhookRegistry(t, id))
	return s.db.Apply(b)
}

// forget deletes a registry entry whose subscription is gone (its tenant
// was deleted).
func (s *store) forget(t tenancy.TenantID, id string) error {
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(keyspace.WebhookRegistry(t, id))
	return s.db.Apply(b)
}

func (s *store) position(t tenancy.TenantID, id string) (position, error) {
	var p position
	v, err := s.db.Get(keyspace.WebhookCursor(t, id))
	if errors.Is(err, storage.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(v, &p)
}

// tx is one batch of a worker's state changes.
type tx struct {
	s *store
	t tenancy.TenantID
	b *storage.Batch
}

func (s *store) begin(t tenancy.TenantID) *tx { return &tx{s: s, t: t, b: s.db.NewBatch()} }

func (x *tx) setPosition(id string, p position) {
	v, _ := json.Marshal(p)
	x.b.Set(keyspace.WebhookCursor(x.t, id), v)
}

func (x *tx) attempt(id string, n uint64, a Attempt) {
	v, _ := json.Marshal(a)
	x.b.Set(keyspace.WebhookAttempt(x.t, id, n), v)
	if n > maxAttempts {
		x.b.Delete(keyspace.WebhookAttempt(x.t, id, n-maxAttempts))
	}
}

func (x *tx) deadLetter(id string, d DeadLetter) {
	v, _ := json.Marshal(d)
	x.b.Set(keyspace.WebhookDeadLetter(x.t, id, d.N), v)
}

func (x *tx) dropDeadLetter(id string, n uint64) { x.b.Delete(keyspace.WebhookDeadLetter(x.t, id, n)) }

// commit applies the batch, synced (a cursor or dead letter must survive
// a crash once the worker acts on it).
func (x *tx) commit() error {
	defer x.b.Close()
	return x.s.db.Apply(x.b)
}

// commitNoSync applies the batch without waiting for the WAL sync (an
// attempt record alone: losing it in a crash loses only a diagnostic).
func (x *tx) commitNoSync() error {
	defer x.b.Close()
	return x.s.db.ApplyNoSync(x.b)
}

// lastN returns the number of the last key of the range (0 if empty).
func (s *store) lastN(lo, hi []byte) (uint64, error) {
	it := s.db.NewIter(lo, hi)
	defer it.Close()
	if it.Last() {
		k := it.Key()
		return binary.BigEndian.Uint64(k[len(k)-8:]), it.Error()
	}
	return 0, it.Error()
}

func (s *store) attempts(t tenancy.TenantID, id string, limit int) ([]Attempt, error) {
	lo, hi := keyspace.WebhookAttempts(t, id)
	it := s.db.NewIter(lo, hi)
	defer it.Close()
	var out []Attempt
	for ok := it.Last(); ok && len(out) < limit; ok = it.Prev() {
		var a Attempt
		if err := json.Unmarshal(it.Value(), &a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, it.Error()
}

func (s *store) deadLetters(t tenancy.TenantID, id string, limit int) ([]DeadLetter, int, error) {
	lo, hi := keyspace.WebhookDeadLetters(t, id)
	it := s.db.NewIter(lo, hi)
	defer it.Close()
	var out []DeadLetter
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
		if len(out) >= limit {
			continue
		}
		var d DeadLetter
		if err := json.Unmarshal(it.Value(), &d); err != nil {
			return nil, 0, err
		}
		out = append(out, d)
	}
	return out, n, it.Error()
}
