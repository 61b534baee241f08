package tenantkey

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Key is one tenant's data key: the current version, which seals, and
// during a rotation the previous one, which still opens.
type Key struct {
	kr     *Keyring
	tenant tenancy.TenantID
	st     atomicState
	// stored is the key file it was unwrapped from, and loaded when its
	// read started (unix ns), for Options.MaxStale.
	stored string
	loaded atomic.Int64
}

type keyState struct {
	current   uint32
	aeads     map[uint32]cipher.AEAD
	legacy    bool
	rotation  *RotationInfo
	destroyed bool
}

// Sealed value format:
//
//	magic:1 version:uvarint nonce:12 ciphertext||tag:16
//
// sealed with AES-256-GCM under the tenant's data key of that version,
// with the caller's associated data (the value's storage key): a value
// copied under another key, table or tenant does not open.
const magic = 0xC5

// Overhead is the most a sealed value adds to its plaintext.
const Overhead = 1 + binary.MaxVarintLen32 + 12 + 16

// Tenant returns the key's tenant.
func (k *Key) Tenant() tenancy.TenantID { return k.tenant }

// Seal appends to dst plain sealed under the current version with
// associated data aad. It fails only for a destroyed key.
func (k *Key) Seal(dst, plain, aad []byte) ([]byte, error) {
	if k.kr.plain {
		return append(dst, plain...), nil
	}
	st := k.st.Load()
	if st.destroyed {
		return nil, ErrDestroyed
	}
	a := st.aeads[st.current]
	dst = append(dst, magic)
	dst = binary.AppendUvarint(dst, uint64(st.current))
	n := len(dst)
	dst = append(dst, make([]byte, a.NonceSize())...)
	rand.Read(dst[n:])
	return a.Seal(dst, dst[n:], plain, aad), nil
}

// Open appends to dst the plaintext of sealed, which must have been sealed
// with associated data aad under one of the key's versions. A legacy key
// (a tenant from before encryption, not yet re-encrypted) also passes a
// value that is not sealed through unchanged. Errors: ErrUnreadable,
// ErrDestroyed.
//
// NB: dst must not overlap sealed.
func (k *Key) Open(dst, sealed, aad []byte) ([]byte, error) {
	if k.kr.plain {
		return append(dst, sealed...), nil
	}
	st := k.st.Load()
	if st.destroyed {
		return nil, ErrDestroyed
	}
	pt, err := st.open(dst, sealed, aad)
	if err != nil && st.legacy {
		return append(dst, sealed...), nil
	}
	return pt, err
}

func (st *keyState) open(dst, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < 1 || sealed[0] != magic {
		return nil, ErrUnreadable
	}
	v, n := binary.Uvarint(sealed[1:])
	if n <= 0 || v > 1<<32-1 {
		return nil, ErrUnreadable
	}
	a := st.aeads[uint32(v)]
	rest := sealed[1+n:]
	if a == nil || len(rest) < a.NonceSize()+a.Overhead() {
		return nil, ErrUnreadable
	}
	pt, err := a.Open(dst, rest[:a.NonceSize()], rest[a.NonceSize():], aad)
	if err != nil {
		return nil, ErrUnreadable
	}
	return pt, nil
}

// Current reports whether sealed is sealed under the key's current
// version (false for a legacy plaintext value or an older version): what
// a rotation still has to re-encrypt.
func (k *Key) Current(sealed []byte) bool {
	if k.kr.plain {
		return true
	}
	st := k.st.Load()
	if len(sealed) < 2 || sealed[0] != magic {
		return false
	}
	v, n := binary.Uvarint(sealed[1:])
	return n > 0 && v == uint64(st.current)
}

// Status describes a tenant's key for display.
type Status struct {
	Version  uint32        `json:"version"`
	Legacy   bool          `json:"legacy,omitempty"` // values from before encryption may be plaintext
	Rotation *RotationInfo `json:"rotation,omitempty"`
}

// Status returns the key's current version and rotation.
func (k *Key) Status() Status {
	st := k.st.Load()
	s := Status{Version: st.current, Legacy: st.legacy}
	if st.rotation != nil {
		r := *st.rotation
		s.Rotation = &r
	}
	return s
}

// StartRotation begins a rotation of t's data key, or returns the one in
// progress (to resume it): a new version is generated and becomes current
// (every new value is sealed under it), while the old ones still open.
// The caller re-encrypts every value, reporting Progress, then calls
// FinishRotation.
func (kr *Keyring) StartRotation(t tenancy.TenantID, now time.Time) (RotationInfo, error) {
	var out RotationInfo
	err := kr.update(t, func(f *keyFile) error {
		if f.Rotation != nil {
			out = *f.Rotation
			return nil
		}
		vs := f.versions()
		next := vs[len(vs)-1] + 1
		if err := f.add(kr.kek.Load(), t, next); err != nil {
			return err
		}
		from := f.Current
		if f.Legacy {
			from = 0
		}
		f.Rotation = &RotationInfo{From: from, To: next, Started: now.UnixMilli()}
		f.Current = next
		out = *f.Rotation
		return nil
	})
	return out, err
}

// Progress records how far the rotation of t got (done values, the
// caller's cursor), durably.
func (kr *Keyring) Progress(t tenancy.TenantID, done int64, cursor string) error {
	return kr.update(t, func(f *keyFile) error {
		if f.Rotation == nil {
			return errors.New("tenantkey: no rotation in progress")
		}
		f.Rotation.Done, f.Rotation.Cursor = done, cursor
		return nil
	})
}

// FinishRotation ends the rotation of t: every version but the current one
// is destroyed, and the tenant stops being legacy. REQUIRES: every value
// of t re-encrypted under the current version.
func (kr *Keyring) FinishRotation(t tenancy.TenantID) error {
	return kr.update(t, func(f *keyFile) error {
		if f.Rotation == nil {
			return nil
		}
		var keep []wrappedKey
		for _, w := range f.Versions {
			if w.Version == f.Current {
				keep = append(keep, w)
			}
		}
		f.Versions, f.Rotation, f.Legacy = keep, nil, false
		return nil
	})
}

// Rewrap makes next the key-encryption key and re-wraps every tenant's
// data keys under it (a rotation of the server key), online: keys wrapped
// under the previous KEK keep unwrapping until Rewrap returns. Each
// tenant's file is replaced atomically, so a crash leaves every key
// wrapped under one of the two; calling Rewrap again (with the previous
// KEK given as prev) finishes the job.
func (kr *Keyring) Rewrap(prev, next []byte) error {
	nk, err := newKEK(next)
	if err != nil {
		return err
	}
	old := kr.kek.Load()
	if prev != nil {
		if old, err = newKEK(prev); err != nil {
			return err
		}
	}
	kr.prev.Store(old)
	kr.kek.Store(nk)
	tenants, err := kr.Tenants()
	if err != nil {
		return err
	}
	for _, t := range tenants {
		err := kr.rewrapTenant(t, nk)
		if errors.Is(err, ErrDestroyed) {
			continue
		}
		if err != nil {
			return err
		}
	}
	kr.prev.Store(nil)
	return nil
}

func (kr *Keyring) rewrapTenant(t tenancy.TenantID, nk *kek) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if _, gone := kr.destroyed.Load(t); gone {
		return ErrDestroyed
	}
	f, err := kr.read(t)
	if err != nil {
		return err
	}
	changed := false
	for i, w := range f.Versions {
		if w.KEK == nk.id {
			continue
		}
		dk, err := kr.unwrapOne(t, w)
		if err != nil {
			return err
		}
		f.Versions[i] = wrappedKey{Version: w.Version, KEK: nk.id, Wrapped: wrap(nk, t, w.Version, dk)}
		clear(dk)
		changed = true
	}
	if !changed {
		return nil
	}
	return kr.write(t, f)
}

// Wrapped reports how many tenant keys are wrapped under the current KEK
// and how many under another (for display after a server key rotation).
func (kr *Keyring) Wrapped() (current, other int, err error) {
	tenants, err := kr.Tenants()
	if err != nil {
		return 0, 0, err
	}
	id := kr.kek.Load().id
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for _, t := range tenants {
		f, err := kr.read(t)
		if err != nil {
			return 0, 0, fmt.Errorf("tenantkey: %w", err)
		}
		all := true
		for _, w := range f.Versions {
			all = all && w.KEK == id
		}
		if all {
			current++
		} else {
			other++
		}
	}
	return current, other, nil
}
