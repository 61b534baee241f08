package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Store is where sessions live: the control plane's store (kv.Local on
// the embedded server, enginekv.Store on a gateway, shared by the fleet).
type Store interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

// session is one signed-in browser: the API key it signed in with (the
// only credential the console ever acts with for it), who that key is, and
// the CSRF token its forms carry.
type session struct {
	id      string // the cookie's value: hex(tenant) "." token
	key     string // an API key; "" for a platform user
	token   string // a platform user's OIDC JWT; "" for an API key
	who     client.WhoAmI
	csrf    string
	created time.Time
	seen    time.Time
	// flash is a message shown once on the next page (e.g. a new key's
	// secret is not: that page is rendered directly).
	flash string

	rec  []byte      // the record's key
	aead cipher.AEAD // seals the record, under a key derived from the token
	raw  []byte      // the record as read or last written (the condition of the next write)
}

// Operator reports whether the session signed in with the operator key.
func (s *session) Operator() bool { return s.who.Role == "operator" }

// Platform reports whether the session signed in with a platform user's
// OIDC token.
func (s *session) Platform() bool { return s.token != "" }

// store keeps sessions in the control plane's store, so that every
// gateway of a fleet serves every session. The cookie carries the owning
// tenant (its records' partition) and a random 256-bit token; the store
// holds neither the token nor anything readable without it:
//
//	key   keyspace.ConsoleSession(tenant, SHA-256("id" ‖ token))
//	value 0x01 ‖ created ‖ seen (unix ns, 8 bytes each) ‖ nonce ‖
//	      AES-256-GCM(SHA-256("seal" ‖ token), JSON{key, jwt, who, csrf, flash},
//	                  additional data: key ‖ the 17 bytes before the nonce)
//
// The times are in the clear so that expired sessions can be swept
// without their tokens.
type store struct {
	kv       Store
	idle     time.Duration
	lifetime time.Duration
	// touch is how stale a session's last use may be in the store: a use
	// writes it only when it is older than that (so most requests only
	// read), which makes the idle timeout exact to within touch.
	touch time.Duration
	now   func() time.Time
}

const (
	recVersion = 1
	recHeader  = 1 + 8 + 8
	// touchEvery is store.touch.
	touchEvery = time.Minute
	// maxWriteTries bounds the re-reads of a session whose record changed
	// under a write (another gateway touching it).
	maxWriteTries = 4
)

func newStore(st Store, idle, lifetime time.Duration, now func() time.Time) *store {
	return &store{kv: st, idle: idle, lifetime: lifetime, touch: touchEvery, now: now}
}

// token returns 32 random bytes, base64url.
func token() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// sessionTenant is the tenant whose records hold a session of who: its
// own tenant's for a tenant admin, the platform's otherwise.
func sessionTenant(who client.WhoAmI) tenancy.TenantID {
	if t, err := tenancy.ParseTenantID(who.TenantID); err == nil {
		return t
	}
	return keyspace.Platform
}

// parseID splits a cookie value into the tenant and the raw token; ok is
// false for anything the console did not issue.
func parseID(id string) (t tenancy.TenantID, tok []byte, ok bool) {
	th, tb, found := strings.Cut(id, ".")
	if !found || len(th) != 32 || len(tb) != 43 {
		return t, nil, false
	}
	raw, err := hex.DecodeString(th)
	if err != nil || len(raw) != 16 {
		return t, nil, false
	}
	tok, err = base64.RawURLEncoding.DecodeString(tb)
	if err != nil || len(tok) != 32 {
		return t, nil, false
	}
	copy(t[:], raw)
	return t, tok, true
}

// keys derives a session's record key and sealing AEAD from its token.
func keys(t tenancy.TenantID, tok []byte) ([]byte, cipher.AEAD) {
	h := sha256.Sum256(append([]byte("tenantdb console session id\x00"), tok...))
	k := sha256.Sum256(append([]byte("tenantdb console session seal\x00"), tok...))
	block, _ := aes.NewCipher(k[:])
	aead, _ := cipher.NewGCM(block)
	return keyspace.ConsoleSession(t, h[:]), aead
}

// sealed is what the record seals.
type sealed struct {
	Key   string        `json:"k,omitempty"`
	JWT   string        `json:"j,omitempty"`
	Who   client.WhoAmI `json:"w"`
	CSRF  string        `json:"c"`
	Flash string        `json:"f,omitempty"`
}

func (s *session) encode() []byte {
	pt, _ := json.Marshal(sealed{Key: s.key, JWT: s.token, Who: s.who, CSRF: s.csrf, Flash: s.flash})
	b := make([]byte, recHeader, recHeader+s.aead.NonceSize()+len(pt)+s.aead.Overhead())
	b[0] = recVersion
	binary.BigEndian.PutUint64(b[1:], uint64(s.created.UnixNano()))
	binary.BigEndian.PutUint64(b[9:], uint64(s.seen.UnixNano()))
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	b = append(b, nonce...)
	return s.aead.Seal(b, nonce, pt, append(append([]byte(nil), s.rec...), b[:recHeader]...))
}

// times reads the clear part of a record.
func times(v []byte) (created, seen time.Time, err error) {
	if len(v) < recHeader || v[0] != recVersion {
		return created, seen, errors.New("console: not a session record")
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v[1:]))), time.Unix(0, int64(binary.BigEndian.Uint64(v[9:]))), nil
}

// decode opens record v of s (s.rec and s.aead set).
func (s *session) decode(v []byte) error {
	created, seen, err := times(v)
	if err != nil {
		return err
	}
	ns := s.aead.NonceSize()
	if len(v) < recHeader+ns {
		return errors.New("console: short session record")
	}
	pt, err := s.aead.Open(nil, v[recHeader:recHeader+ns], v[recHeader+ns:], append(append([]byte(nil), s.rec...), v[:recHeader]...))
	if err != nil {
		return fmt.Errorf("console: session record does not open: %w", err)
	}
	var d sealed
	if err := json.Unmarshal(pt, &d); err != nil {
		return err
	}
	s.key, s.token, s.who, s.csrf, s.flash = d.Key, d.JWT, d.Who, d.CSRF, d.Flash
	s.created, s.seen, s.raw = created, seen, v
	return nil
}

func (st *store) expired(created, seen, now time.Time) bool {
	return now.Sub(seen) > st.idle || now.Sub(created) > st.lifetime
}

// create stores a new session for key (or a platform user's jwt) and who,
// after sweeping the expired sessions of the same tenant.
func (st *store) create(ctx context.Context, key, jwt string, who client.WhoAmI) (*session, error) {
	now := st.now()
	t := sessionTenant(who)
	if err := st.sweep(ctx, t, now); err != nil {
		return nil, err
	}
	var raw [32]byte
	rand.Read(raw[:])
	s := &session{id: hex.EncodeToString(t[:]) + "." + base64.RawURLEncoding.EncodeToString(raw[:]),
		key: key, token: jwt, who: who, csrf: token(), created: now, seen: now}
	s.rec, s.aead = keys(t, raw[:])
	v := s.encode()
	var b kv.Batch
	b.SetIfAbsent(s.rec, v)
	if err := st.kv.Apply(ctx, &b); err != nil {
		return nil, err
	}
	s.raw = v
	return s, nil
}

// get returns the live session with cookie value id and records its use,
// or nil if there is none (never issued, signed out, expired).
func (st *store) get(ctx context.Context, id string) (*session, error) {
	s, err := st.read(ctx, id)
	if s == nil || err != nil {
		return nil, err
	}
	now := st.now()
	if st.expired(s.created, s.seen, now) {
		var b kv.Batch
		b.DeleteIfEquals(s.rec, s.raw)
		if err := st.kv.Apply(ctx, &b); err != nil && !errors.Is(err, kv.ErrConflict) {
			return nil, err
		}
		return nil, nil
	}
	if now.Sub(s.seen) >= st.touch {
		s.seen = now
		// NB: best effort: a conflict is another request of the session
		// (on any gateway) having written it meanwhile, which is a use too.
		if err := st.write(ctx, s); err != nil && !errors.Is(err, kv.ErrConflict) {
			return nil, err
		}
	}
	return s, nil
}

// read returns the session with cookie value id as stored, or nil.
func (st *store) read(ctx context.Context, id string) (*session, error) {
	t, tok, ok := parseID(id)
	if !ok {
		return nil, nil
	}
	s := &session{id: id}
	s.rec, s.aead = keys(t, tok)
	v, err := st.kv.Get(ctx, s.rec)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.decode(v); err != nil {
		return nil, nil
	}
	return s, nil
}

// write stores s if its record is still the one it was read as.
func (st *store) write(ctx context.Context, s *session) error {
	v := s.encode()
	var b kv.Batch
	b.SetIfEquals(s.rec, s.raw, v)
	if err := st.kv.Apply(ctx, &b); err != nil {
		return err
	}
	s.raw = v
	return nil
}

// change applies f to s and stores it, reading it again if another
// request changed it meanwhile; a session gone meanwhile stays gone.
func (st *store) change(ctx context.Context, s *session, f func(*session)) error {
	for range maxWriteTries {
		f(s)
		err := st.write(ctx, s)
		if !errors.Is(err, kv.ErrConflict) {
			return err
		}
		cur, err := st.read(ctx, s.id)
		if cur == nil || err != nil {
			return err
		}
		*s = *cur
	}
	return fmt.Errorf("console: session changed %d times under a write", maxWriteTries)
}

func (st *store) delete(ctx context.Context, s *session) error {
	var b kv.Batch
	b.Delete(s.rec)
	return st.kv.Apply(ctx, &b)
}

// takeFlash returns and clears s's flash message.
func (st *store) takeFlash(ctx context.Context, s *session) (string, error) {
	f := s.flash
	if f == "" {
		return "", nil
	}
	return f, st.change(ctx, s, func(s *session) { s.flash = "" })
}

func (st *store) setFlash(ctx context.Context, s *session, msg string) error {
	return st.change(ctx, s, func(s *session) { s.flash = msg })
}

// sweep deletes tenant t's expired sessions.
func (st *store) sweep(ctx context.Context, t tenancy.TenantID, now time.Time) error {
	lo, hi := keyspace.ConsoleSessions(t)
	var b kv.Batch
	err := st.kv.Scan(ctx, lo, hi, func(k, v []byte) bool {
		created, seen, err := times(v)
		if err != nil || st.expired(created, seen, now) {
			b.DeleteIfEquals(k, v)
		}
		return b.Len() < 25
	})
	if err != nil || b.Len() == 0 {
		return err
	}
	// NB: conditional, so that a session used meanwhile stays; a
	// conflict leaves the sweep to the next sign-in.
	if err := st.kv.Apply(ctx, &b); err != nil && !errors.Is(err, kv.ErrConflict) {
		return err
	}
	return nil
}

// equal compares two secrets in constant time; empty never matches.
func equal(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Who returns the identity of the session's key.
func (s *session) Who() client.WhoAmI { return s.who }
