package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

// session is one signed-in browser: the API key it signed in with (the
// only credential the console ever acts with for it), who that key is, and
// the CSRF token its forms carry.
type session struct {
	id      string
	key     string // an API key; "" for a platform user
	token   string // a platform user's OIDC JWT; "" for an API key
	who     client.WhoAmI
	csrf    string
	created time.Time
	seen    time.Time
	// flash is a message shown once on the next page (e.g. a new key's
	// secret is not: that page is rendered directly).
	flash string
}

// Operator reports whether the session signed in with the operator key.
func (s *session) Operator() bool { return s.who.Role == "operator" }

// Platform reports whether the session signed in with a platform user's
// OIDC token.
func (s *session) Platform() bool { return s.token != "" }

// store keeps sessions in memory, server-side: the cookie carries only a
// random id. A restart signs everyone out.
type store struct {
	mu       sync.Mutex
	byID     map[string]*session
	idle     time.Duration
	lifetime time.Duration
	now      func() time.Time
}

func newStore(idle, lifetime time.Duration, now func() time.Time) *store {
	return &store{byID: map[string]*session{}, idle: idle, lifetime: lifetime, now: now}
}

// token returns 32 random bytes, base64url.
func token() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (st *store) create(key, jwt string, who client.WhoAmI) *session {
	now := st.now()
	s := &session{id: token(), key: key, token: jwt, who: who, csrf: token(), created: now, seen: now}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweepLocked(now)
	st.byID[s.id] = s
	return s
}

// get returns the live session with id and marks it used, or nil.
func (st *store) get(id string) *session {
	if id == "" {
		return nil
	}
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.byID[id]
	if s == nil {
		return nil
	}
	if now.Sub(s.seen) > st.idle || now.Sub(s.created) > st.lifetime {
		delete(st.byID, id)
		return nil
	}
	s.seen = now
	return s
}

func (st *store) delete(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.byID, id)
}

// takeFlash returns and clears s's flash message.
func (st *store) takeFlash(s *session) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	f := s.flash
	s.flash = ""
	return f
}

func (st *store) setFlash(s *session, msg string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s.flash = msg
}

// sweepLocked drops expired sessions.
func (st *store) sweepLocked(now time.Time) {
	for id, s := range st.byID {
		if now.Sub(s.seen) > st.idle || now.Sub(s.created) > st.lifetime {
			delete(st.byID, id)
		}
	}
}

// equal compares two secrets in constant time; empty never matches.
func equal(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Who returns the identity of the session's key.
func (s *session) Who() client.WhoAmI { return s.who }
