// Package audit keeps a per-tenant, append-only, hash-chained log of admin
// actions and denied access attempts.
//
// Record n of a tenant is stored at keyspace.Audit(tenant, n) as
//
//	hash(32) || canonical
//
// where canonical is the record's JSON without its hash (Go's encoding of
// Record is deterministic) and hash = SHA-256(prev || canonical), prev
// being the previous record's hash (32 zero bytes for record 1). canonical
// also names prev, so every record commits to the whole chain before it.
// The chain's head (last seq and hash) is kept at keyspace.AuditHead and
// written in the same batch as each record, so Verify notices a changed
// byte anywhere, a removed or reordered record, and a truncated tail.
//
// NB: the batch is conditioned on the head being the one the record
// links to (and the record's key being free). With the control plane in
// a DynamoDB-API engine several gateways append to one chain; the loser
// of a race reads the new head and links its record to it, so the chain
// stays one chain. The per-tenant mutex only saves a process's own
// appenders from losing to each other.
// (Someone able to rewrite the whole store can rewrite the whole chain; an
// external anchor of the head would be needed against that.)
//
// The operator's own actions (tenant lifecycle) go to the platform log,
// the log of keyspace.Platform.
package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// Store is where the log lives: kv.Local (the embedded store) or
// enginekv.Store (a DynamoDB-API engine shared by gateways).
type Store interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

var _ Store = (*kv.Local)(nil)

// maxAppendRounds bounds how often an append reads a head another
// process moved and tries again.
const maxAppendRounds = 64

// Outcomes.
const (
	OutcomeOK     = "ok"
	OutcomeDenied = "denied"
	OutcomeError  = "error"
)

// Record is one audit entry.
type Record struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor"`          // access key id, "sub:<subject>" for platform users, "system"
	Role    string    `json:"role,omitempty"` // the actor's role
	Action  string    `json:"action"`         // e.g. "key.create", "tenant.suspend", "dynamodb:GetItem"
	Target  string    `json:"target,omitempty"`
	Source  string    `json:"source,omitempty"` // client address
	Outcome string    `json:"outcome"`          // OutcomeOK, OutcomeDenied or OutcomeError
	Reason  string    `json:"reason,omitempty"`
	// Count is the number of attempts a summary record (outcome
	// OutcomeDeniedCoalesced) stands for; 0 otherwise.
	Count int64  `json:"count,omitempty"`
	Prev  string `json:"prev"`           // hex of the previous record's hash
	Hash  string `json:"hash,omitempty"` // hex; empty in the canonical form
}

// Event is what a caller records; the log fills in Seq, Time, Prev, Hash.
type Event struct {
	Actor, Role, Action, Target, Source, Outcome, Reason string
	Count                                                int64 // see Record.Count
}

// Options configure a Log.
type Options struct {
	Now    func() time.Time
	Logger *slog.Logger
	// Shared says that other processes append to the same store (gateways
	// over one engine): Verify then accepts a head past the records it
	// read (appends landed meanwhile) instead of calling it tampering, and
	// an append requires the tenant's record to exist (another process
	// may have deleted the tenant).
	Shared bool
	// Keys holds the tenants' data keys: a tenant's records are sealed
	// under its key (the platform log is not); nil means an in-memory
	// keyring under a random key (tests).
	Keys *tenantkey.Keyring
}

// Log is the audit log of all tenants. Its methods are safe for
// concurrent use; appends to one tenant's chain are serialized.
type Log struct {
	db     Store
	shared bool
	keys   *tenantkey.Keyring
	now    func() time.Time
	log    *slog.Logger
	mu     sync.Mutex
	tips   map[tenancy.TenantID]*chain

	denials denials // rate of denial records per tenant (denials.go)
	// retired holds the tenants being or having been deleted (Retire):
	// nothing more is appended to their logs.
	retired sync.Map // tenancy.TenantID -> struct{}

	// On a fleet (shared): this process's id among the gateways and its
	// counts of denials kept in the store (fleetdenials.go).
	gw    []byte
	fleet sync.Map // tenancy.TenantID -> *fleetCounts
}

// ErrRetired is returned by Append for a tenant whose log was retired
// (the tenant is being deleted).
var ErrRetired = errors.New("audit: the tenant's log is retired (tenant deleted)")

type chain struct {
	mu     sync.Mutex
	loaded bool
	seq    uint64
	hash   [32]byte
	time   time.Time
	head   []byte // the stored head (nil: none), what the next append is conditioned on
	// On a fleet (Options.Shared) the head also holds the tenant's
	// fleet-wide bucket of denial records (fleetdenials.go): tokens at
	// tokAt (unix ns); bucket says the head had one.
	bucket bool
	tokens float64
	tokAt  int64
}

// Open returns the log over db.
func Open(db Store, opts Options) *Log {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Keys == nil {
		kek := make([]byte, 32)
		_, _ = rand.Read(kek)
		opts.Keys, _ = tenantkey.Open(tenantkey.Options{KEK: kek}) // NB: fails only for a KEK not 32 bytes
	}
	l := &Log{db: db, shared: opts.Shared, keys: opts.Keys, now: opts.Now, log: opts.Logger.With("component", "audit"), tips: map[tenancy.TenantID]*chain{}}
	if l.shared {
		l.gw = make([]byte, 8)
		_, _ = rand.Read(l.gw)
	}
	return l
}

func (l *Log) chain(t tenancy.TenantID) *chain {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.tips[t]
	if !ok {
		c = &chain{}
		l.tips[t] = c
	}
	return c
}

// Retire stops all appends to tenant t's log: call it before the
// tenant's range is deleted, so that no record (a denial, a summary of
// coalesced denials) lands in the range after the deletion. When it
// returns, no append of t is in progress and later ones fail with
// ErrRetired. Unretire undoes it (the deletion failed).
func (l *Log) Retire(t tenancy.TenantID) {
	l.retired.Store(t, struct{}{})
	l.forgetDenials(t)
	c := l.chain(t)
	c.mu.Lock() // NB: a barrier: appends that got the lock first are done
	c.mu.Unlock()
}

// Unretire lets tenant t's log take records again after a failed deletion.
func (l *Log) Unretire(t tenancy.TenantID) { l.retired.Delete(t) }

// Forget drops the in-memory head of tenant t's chain; call it after the
// tenant's range is deleted.
func (l *Log) Forget(t tenancy.TenantID) {
	l.forgetDenials(t)
	l.mu.Lock()
	delete(l.tips, t)
	l.mu.Unlock()
}

const headLen = 8 + 32 + 8

// fleetHeadLen is the length of a head that carries the fleet's denial
// bucket (Options.Shared): tokens (float64 bits) and their time.
const fleetHeadLen = headLen + 16

// load reads the chain's head. REQUIRES: c.mu held.
func (l *Log) load(ctx context.Context, t tenancy.TenantID, c *chain) error {
	if c.loaded {
		return nil
	}
	c.seq, c.hash, c.time, c.head, c.bucket = 0, [32]byte{}, time.Time{}, nil, false
	v, err := l.db.Get(ctx, keyspace.AuditHead(t))
	switch {
	case errors.Is(err, kv.ErrNotFound):
	case err != nil:
		return fmt.Errorf("audit: read head: %w", err)
	case len(v) != headLen && len(v) != fleetHeadLen:
		return fmt.Errorf("audit: corrupt chain head")
	default:
		c.seq = binary.BigEndian.Uint64(v)
		copy(c.hash[:], v[8:40])
		c.time = time.Unix(0, int64(binary.BigEndian.Uint64(v[40:48]))).UTC()
		c.head = v
		if len(v) == fleetHeadLen {
			c.bucket = true
			c.tokens = math.Float64frombits(binary.BigEndian.Uint64(v[48:56]))
			c.tokAt = int64(binary.BigEndian.Uint64(v[56:64]))
		}
	}
	c.loaded = true
	return nil
}

// Limits on recorded strings, so that no caller can bloat the log.
const (
	maxField  = 256
	maxReason = 1024
)

func clean(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// Append adds ev to the scope's tenant's chain (keyspace.Platform, the
// zero tenant, for the operator's platform log) and returns the stored
// record. The record is durable when Append returns.
func (l *Log) Append(ctx context.Context, s tenancy.Scope, ev Event) (Record, error) {
	t, err := scoped(s)
	if err != nil {
		return Record{}, err
	}
	return l.append(ctx, t, ev)
}

func (l *Log) append(ctx context.Context, t tenancy.TenantID, ev Event) (Record, error) {
	if ev.Outcome == "" {
		ev.Outcome = OutcomeOK
	}
	c := l.chain(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, gone := l.retired.Load(t); gone {
		return Record{}, ErrRetired
	}
	for range maxAppendRounds {
		rs, err := l.appendOnce(ctx, t, c, []Event{ev}, nil, nil)
		if errors.Is(err, kv.ErrConflict) {
			c.loaded = false // another gateway appended: link to its record
			continue
		}
		if err != nil {
			return Record{}, err
		}
		return rs[0], nil
	}
	return Record{}, errors.New("audit: append: the chain head keeps moving")
}

// spend is what an append of a denial record takes from the fleet's
// denial bucket (fleetdenials.go): the tokens left at at.
type spend struct {
	tokens float64
	at     int64
}

// appendOnce links evs, in order, to the head c holds, in one batch
// (with extra's operations, if not nil); sp, if not nil, is the denial
// bucket the head records after it. Errors: kv.ErrConflict if the stored
// head moved (or extra's conditions failed). REQUIRES: c.mu held.
func (l *Log) appendOnce(ctx context.Context, t tenancy.TenantID, c *chain, evs []Event, sp *spend, extra func(*kv.Batch)) ([]Record, error) {
	if err := l.load(ctx, t, c); err != nil {
		return nil, err
	}
	now := l.now().UTC()
	if now.Before(c.time) {
		now = c.time // keep times non-decreasing along the chain
	}
	var b kv.Batch
	rs := make([]Record, 0, len(evs))
	seq, prev := c.seq, c.hash
	for _, ev := range evs {
		if ev.Outcome == "" {
			ev.Outcome = OutcomeOK
		}
		seq++
		r := Record{
			Seq: seq, Time: now,
			Actor: clean(ev.Actor, maxField), Role: clean(ev.Role, maxField), Action: clean(ev.Action, maxField),
			Target: clean(ev.Target, maxField), Source: clean(ev.Source, maxField),
			Outcome: clean(ev.Outcome, maxField), Reason: clean(ev.Reason, maxReason), Count: ev.Count,
			Prev: hex.EncodeToString(prev[:]),
		}
		canon, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("audit: encode: %w", err)
		}
		h := chainHash(prev[:], canon)
		val, err := l.seal(t, r.Seq, h, canon)
		if err != nil {
			return nil, err
		}
		b.SetIfAbsent(keyspace.Audit(t, r.Seq), val)
		r.Hash = hex.EncodeToString(h[:])
		rs = append(rs, r)
		prev = h
	}
	h := prev
	n := headLen
	if l.shared {
		n = fleetHeadLen
	}
	head := make([]byte, n)
	binary.BigEndian.PutUint64(head, seq)
	copy(head[8:], h[:])
	binary.BigEndian.PutUint64(head[40:], uint64(now.UnixNano()))
	if l.shared {
		// NB: the fleet's denial bucket rides along in every append.
		bk := spend{tokens: deniedBurst, at: now.UnixNano()}
		if sp != nil {
			bk = *sp
		} else if c.bucket {
			bk = spend{tokens: c.tokens, at: c.tokAt}
		}
		binary.BigEndian.PutUint64(head[48:], math.Float64bits(bk.tokens))
		binary.BigEndian.PutUint64(head[56:], uint64(bk.at))
	}
	b.SetIfEquals(keyspace.AuditHead(t), c.head, head)
	if extra != nil {
		extra(&b)
	}
	if l.shared && t != keyspace.Platform {
		// NB: another gateway may have deleted the tenant (Retire is this
		// process's only): a record must not outlive its tenant's range.
		b.ExpectPresent(keyspace.TenantRecord(t))
	}
	if err := l.db.Apply(ctx, &b); err != nil {
		if errors.Is(err, kv.ErrConflict) {
			if l.shared && t != keyspace.Platform {
				if _, gerr := l.db.Get(ctx, keyspace.TenantRecord(t)); errors.Is(gerr, kv.ErrNotFound) {
					return nil, ErrRetired
				}
			}
			return nil, err
		}
		return nil, fmt.Errorf("audit: append: %w", err)
	}
	c.seq, c.hash, c.time, c.head = seq, h, now, head
	if l.shared {
		c.bucket = true
		c.tokens = math.Float64frombits(binary.BigEndian.Uint64(head[48:]))
		c.tokAt = int64(binary.BigEndian.Uint64(head[56:]))
	}
	return rs, nil
}

func chainHash(prev, canon []byte) [32]byte {
	s := sha256.New()
	s.Write(prev)
	s.Write(canon)
	var h [32]byte
	s.Sum(h[:0])
	return h
}

type sourceKey struct{}

// WithSource returns ctx carrying the client's address, which Denied (and
// the admin handlers) record as the source.
func WithSource(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, sourceKey{}, addr)
}

// Source returns the client address WithSource put into ctx, or "".
func Source(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

// Denied records a refused request of principal p (its tenant's log, the
// platform log for the operator): action is what was attempted (e.g.
// "dynamodb:GetItem" or "admin:GET /v1/tenants/..."), reason the refusal.
// The source is taken from ctx (see WithSource). Failures to record are
// logged, not returned: a denial stays a denial.
//
// Over deniedPerSecond denials a second for one tenant, the rest are
// counted and summarized in one record (see denials.go).
func (l *Log) Denied(ctx context.Context, p tenancy.Principal, action, reason string) {
	ev := Event{
		Actor: p.KeyID, Role: p.Role.String(), Action: action, Source: Source(ctx),
		Outcome: OutcomeDenied, Reason: reason,
	}
	if l.shared {
		l.deniedFleet(ctx, p.Tenant, ev) // fleetdenials.go
		return
	}
	if !l.admitDenial(p.Tenant, ev, l.now()) {
		return
	}
	_, err := l.append(ctx, p.Tenant, ev)
	if err != nil && !errors.Is(err, ErrRetired) {
		l.log.Error("audit: recording a denial failed", "tenant", p.Tenant.String(), "key", p.KeyID, "err", err)
	}
}

// seal returns the stored value of tenant t's record seq: its hash, then
// its canonical JSON, sealed under t's data key with the record's key as
// associated data (in plaintext for the platform log).
func (l *Log) seal(t tenancy.TenantID, seq uint64, h [32]byte, canon []byte) ([]byte, error) {
	val := make([]byte, 0, 32+len(canon)+tenantkey.Overhead)
	val = append(val, h[:]...)
	if t == keyspace.Platform {
		return append(val, canon...), nil
	}
	k, err := l.keys.Key(t)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return k.Seal(val, canon, keyspace.Audit(t, seq))
}

// decode splits tenant t's stored record seq into its hash, record and
// canonical JSON (what the hash covers).
func (l *Log) decode(t tenancy.TenantID, seq uint64, v []byte) ([32]byte, Record, []byte, error) {
	var h [32]byte
	var r Record
	if len(v) < 32 {
		return h, r, nil, errors.New("audit: record too short")
	}
	copy(h[:], v[:32])
	canon := v[32:]
	if t != keyspace.Platform {
		k, err := l.keys.Key(t)
		if err != nil {
			return h, r, nil, fmt.Errorf("audit: %w", err)
		}
		if canon, err = k.Open(nil, canon, keyspace.Audit(t, seq)); err != nil {
			return h, r, nil, fmt.Errorf("audit: record %d: %w", seq, err)
		}
	}
	if err := json.Unmarshal(canon, &r); err != nil {
		return h, r, nil, fmt.Errorf("audit: record is not JSON: %w", err)
	}
	r.Hash = hex.EncodeToString(h[:])
	return h, r, canon, nil
}

// Query returns the scope's tenant's records with from <= time < to (zero bounds are
// open) and seq > after, oldest first, at most limit (1 to 1000; 0 means
// 100). It finds the start by binary search on seq, so it reads O(log n +
// limit) records.
func (l *Log) Query(ctx context.Context, s tenancy.Scope, from, to time.Time, after uint64, limit int) ([]Record, error) {
	t, err := scoped(s)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		return nil, apierr.Validationf("limit must be at most 1000")
	}
	l.flushDenialsOf(t)
	c := l.chain(t)
	c.mu.Lock()
	c.loaded = false // the head another gateway may have moved
	err = l.load(ctx, t, c)
	last := c.seq
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	start := after + 1
	if !from.IsZero() {
		// The first seq in [start, last+1) whose time is >= from.
		lo, hi := start, last+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			v, err := l.db.Get(ctx, keyspace.Audit(t, mid))
			if err != nil {
				return nil, fmt.Errorf("audit: read record %d: %w", mid, err)
			}
			_, r, _, err := l.decode(t, mid, v)
			if err != nil {
				return nil, err
			}
			if r.Time.Before(from) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		start = lo
	}
	var out []Record
	if start > last {
		return out, nil
	}
	_, hiKey := keyspace.AuditRange(t)
	var derr error
	err = l.db.Scan(ctx, keyspace.Audit(t, start), hiKey, func(k, v []byte) bool {
		if len(out) >= limit {
			return false
		}
		_, r, _, err := l.decode(t, binary.BigEndian.Uint64(k[len(k)-8:]), v)
		if err != nil {
			derr = err
			return false
		}
		if !to.IsZero() && !r.Time.Before(to) {
			return false
		}
		out = append(out, r)
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("audit: query: %w", err)
	}
	return out, nil
}

// ErrTampered is in the chain of Verify's error when the log was altered.
var ErrTampered = errors.New("audit: chain verification failed")

// Verify walks the scope's tenant's whole chain and checks every record's seq, prev
// and hash and the stored head. It returns the number of records, or an
// error wrapping ErrTampered that names the first bad record.
func (l *Log) Verify(ctx context.Context, s tenancy.Scope) (uint64, error) {
	t, err := scoped(s)
	if err != nil {
		return 0, err
	}
	c := l.chain(t)
	c.mu.Lock() // no append of this process runs meanwhile
	defer c.mu.Unlock()
	lo, hi := keyspace.AuditRange(t)
	var prev [32]byte
	var n uint64
	var bad error
	fail := func(format string, args ...any) bool {
		bad = fmt.Errorf("%w: %s", ErrTampered, fmt.Sprintf(format, args...))
		return false
	}
	err = l.db.Scan(ctx, lo, hi, func(k, v []byte) bool {
		n++
		if len(k) != len(lo)+8 || binary.BigEndian.Uint64(k[len(lo):]) != n {
			return fail("record %d is missing or out of place", n)
		}
		h, r, canon, err := l.decode(t, n, v)
		if err != nil {
			return fail("record %d is unreadable: %v", n, err)
		}
		if r.Seq != n {
			return fail("record %d claims seq %d", n, r.Seq)
		}
		if r.Prev != hex.EncodeToString(prev[:]) {
			return fail("record %d does not link to record %d", n, n-1)
		}
		if want := chainHash(prev[:], canon); !bytes.Equal(want[:], h[:]) {
			return fail("record %d does not match its hash", n)
		}
		prev = h
		return true
	})
	if bad != nil {
		return n, bad
	}
	if err != nil {
		return n, fmt.Errorf("audit: verify: %w", err)
	}
	// NB: the head is read after the records: another gateway may have
	// appended meanwhile (its head is then past n), but a head behind
	// the records, or not matching record n when at n, is tampering.
	v, err := l.db.Get(ctx, keyspace.AuditHead(t))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		if n != 0 {
			return n, fmt.Errorf("%w: %s", ErrTampered, "the chain head is missing")
		}
	case err != nil:
		return n, fmt.Errorf("audit: read head: %w", err)
	case len(v) != headLen && len(v) != fleetHeadLen:
		return n, fmt.Errorf("%w: the chain head is corrupt", ErrTampered)
	case binary.BigEndian.Uint64(v) < n, binary.BigEndian.Uint64(v) == n && !bytes.Equal(v[8:40], prev[:]),
		binary.BigEndian.Uint64(v) > n && !l.shared:
		return n, fmt.Errorf("%w: the chain head does not match record %d (records were removed or replaced)", ErrTampered, n)
	}
	return n, nil
}

// scoped returns the tenant of s. Errors: Internal for a scope no guard
// issued.
func scoped(s tenancy.Scope) (tenancy.TenantID, error) {
	if !s.Valid() {
		return tenancy.TenantID{}, apierr.New(apierr.Internal, "audit: no scope")
	}
	return s.Tenant(), nil
}

// Reseal re-encrypts the scope's tenant's records that are not sealed
// under the current version of its data key (a tenant key rotation) and
// returns how many it rewrote. Appends wait meanwhile (on a fleet, other
// gateways' appends are fenced instead: fleetreseal.go); the records'
// hashes cover their plaintext, so the chain is unchanged.
func (l *Log) Reseal(ctx context.Context, s tenancy.Scope) (int64, error) {
	t, err := scoped(s)
	if err != nil || t == keyspace.Platform {
		return 0, err
	}
	k, err := l.keys.Key(t)
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	c := l.chain(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.shared {
		return l.resealShared(ctx, t, c) // fleetreseal.go: other gateways append meanwhile
	}
	lo, hi := keyspace.AuditRange(t)
	var b kv.Batch
	var n int64
	var derr error
	err = l.db.Scan(ctx, lo, hi, func(key, v []byte) bool {
		val, err := l.resealed(t, k, key, v)
		if err != nil {
			derr = err
			return false
		}
		if val != nil {
			b.Set(key, val)
			n++
		}
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return 0, fmt.Errorf("audit: re-encrypting: %w", err)
	}
	if err := l.db.Apply(ctx, &b); err != nil {
		return 0, fmt.Errorf("audit: re-encrypting: %w", err)
	}
	return n, nil
}

// resealed returns tenant t's audit record (key, v) sealed under the
// current version of k, or nil if it is sealed under it already.
func (l *Log) resealed(t tenancy.TenantID, k *tenantkey.Key, key, v []byte) ([]byte, error) {
	if len(v) < 32 || k.Current(v[32:]) {
		return nil, nil
	}
	seq := binary.BigEndian.Uint64(key[len(key)-8:])
	h, _, canon, err := l.decode(t, seq, v)
	if err != nil {
		return nil, err
	}
	return l.seal(t, seq, h, canon)
}
