package tenantkey

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"

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
	if err != nil && k.kr.store != nil && !st.has(sealed) {
		// NB: another gateway rotated the key (a version this one has
		// not read yet, for up to MaxStale): read the key again at once.
		if nk, rerr := k.kr.reload(k.tenant); rerr == nil {
			st = nk.st.Load()
			if !st.destroyed {
				pt, err = st.open(dst, sealed, aad)
			}
		}
	}
	if err != nil && st.legacy {
		return append(dst, sealed...), nil
	}
	return pt, err
}

// has reports whether the state holds the version sealed names.
func (st *keyState) has(sealed []byte) bool {
	if len(sealed) < 2 || sealed[0] != magic {
		return true // not sealed: nothing to read again for
	}
	v, n := binary.Uvarint(sealed[1:])
	return n <= 0 || v > 1<<32-1 || st.aeads[uint32(v)] != nil
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
		if f.Rotation.Owner != "" {
			f.Rotation.Beat = time.Now().UnixMilli()
		}
		return nil
	})
}

// Claim makes owner the worker of t's rotation in progress if it has no
// worker, is owner's already, or its worker's Beat is older than stale,
// and records now as its Beat; it reports whether owner holds it. The
// write is conditioned on the key as read, so of two gateways claiming
// at once one wins.
func (kr *Keyring) Claim(t tenancy.TenantID, owner string, now time.Time, stale time.Duration) (bool, error) {
	held := false
	err := kr.update(t, func(f *keyFile) error {
		held = false
		r := f.Rotation
		if r == nil {
			return errNoChange
		}
		if r.Owner != "" && r.Owner != owner && now.Sub(time.UnixMilli(r.Beat)) < stale {
			return errNoChange
		}
		r.Owner, r.Beat, held = owner, now.UnixMilli(), true
		return nil
	})
	if errors.Is(err, errNoChange) {
		err = nil
	}
	return held, err
}

// errNoChange, from update's fn, leaves the file as it is.
var errNoChange = errors.New("tenantkey: no change")

// Rotations returns the rotations in progress of the keys in the store
// (Options.Store): one scan of their marks, then one read of each marked
// key record, without unwrapping any key.
func (kr *Keyring) Rotations() (map[tenancy.TenantID]RotationInfo, error) {
	out := map[tenancy.TenantID]RotationInfo{}
	if kr.store == nil {
		return out, nil
	}
	ctx := context.Background()
	lo := keyspace.System(keyspace.SysTenantKeyRotations)
	var marked []tenancy.TenantID
	if err := kr.store.Scan(ctx, lo, keyspace.PrefixEnd(lo), func(k, _ []byte) bool {
		var t tenancy.TenantID
		if len(k) == len(lo)+len(t) {
			copy(t[:], k[len(lo):])
			marked = append(marked, t)
		}
		return true
	}); err != nil {
		return nil, err
	}
	for _, t := range marked {
		v, err := kr.store.Get(ctx, storeKey(t))
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var f keyFile
		if err := json.Unmarshal(v, &f); err != nil {
			return nil, fmt.Errorf("tenantkey: key file of tenant %s is corrupt", t)
		}
		if f.Rotation != nil {
			out[t] = *f.Rotation
		}
	}
	return out, nil
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

// FinishRotationTo is FinishRotation for the rotation to version to only,
// and reports whether this call ended it (false if it had ended, or
// another rotation is in progress): of two gateways finishing one
// rotation, one records its end.
func (kr *Keyring) FinishRotationTo(t tenancy.TenantID, to uint32) (bool, error) {
	ended := false
	err := kr.update(t, func(f *keyFile) error {
		ended = false
		if f.Rotation == nil || f.Rotation.To != to {
			return errNoChange
		}
		var keep []wrappedKey
		for _, w := range f.Versions {
			if w.Version == f.Current {
				keep = append(keep, w)
			}
		}
		f.Versions, f.Rotation, f.Legacy, ended = keep, nil, false, true
		return nil
	})
	if errors.Is(err, errNoChange) {
		err = nil
	}
	return ended, err
}

// Rewrap makes next the key-encryption key and re-wraps every tenant's
// data keys under it (a rotation of the server key), online: keys wrapped
// under the previous KEK keep unwrapping until Rewrap returns. Each
// tenant's file is replaced atomically, so a crash leaves every key
// wrapped under one of the two; calling Rewrap again (with the previous
// KEK given as prev) finishes the job.
func (kr *Keyring) Rewrap(prev, next []byte) error {
	old := prev
	if old == nil {
		old = kr.kek.Load().raw
	}
	if err := kr.UseKEKs(next, old); err != nil {
		return err
	}
	if _, err := kr.RewrapAll(); err != nil {
		return err
	}
	kr.prev.Store(nil)
	return nil
}

// UseKEKs makes cur the key-encryption key that wraps new data keys and
// also, if not nil, opens keys wrapped under also. A fleet's server key
// rotation (package fleetkey) steps every gateway through
// UseKEKs(old, new), UseKEKs(new, old), then UseKEKs(new, nil).
func (kr *Keyring) UseKEKs(cur, also []byte) error {
	nk, err := newKEK(cur)
	if err != nil {
		return err
	}
	var ok *kek
	if also != nil {
		if ok, err = newKEK(also); err != nil {
			return err
		}
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.prev.Store(ok)
	kr.kek.Store(nk)
	return nil
}

// RewrapAll re-wraps, under the current key-encryption key, every
// tenant's data keys wrapped under another (which must open under the
// second key of UseKEKs), and returns how many tenants it rewrote. In a
// store each file is replaced on condition that it is what was read.
func (kr *Keyring) RewrapAll() (int, error) {
	nk := kr.kek.Load()
	tenants, err := kr.Tenants()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range tenants {
		changed, err := kr.rewrapTenant(t, nk)
		if errors.Is(err, ErrDestroyed) || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

func (kr *Keyring) rewrapTenant(t tenancy.TenantID, nk *kek) (bool, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for round := 0; ; round++ {
		if _, gone := kr.destroyed.Load(t); gone && kr.store == nil {
			return false, ErrDestroyed
		}
		f, old, err := kr.readRaw(t)
		if err != nil {
			return false, err
		}
		changed := false
		for i, w := range f.Versions {
			if w.KEK == nk.id {
				continue
			}
			dk, err := kr.unwrapOne(t, w)
			if err != nil {
				return false, err
			}
			f.Versions[i] = wrappedKey{Version: w.Version, KEK: nk.id, Wrapped: wrap(nk, t, w.Version, dk)}
			clear(dk)
			changed = true
		}
		if !changed {
			return false, nil
		}
		err = kr.write(t, f, old)
		if errors.Is(err, kv.ErrConflict) && round < updateRounds {
			continue
		}
		return err == nil, err
	}
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
