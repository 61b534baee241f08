// Package tenantkey keeps every tenant's data keys: generated per tenant,
// stored only wrapped (AES-256-GCM) by a key-encryption key derived from
// the server key, unwrapped into memory on first use and cached there, and
// destroyed — the file removed and synced — when the tenant is deleted
// (crypto-shredding). A Key seals and opens the tenant's stored values.
//
// The wrapped keys live in their own directory (<data-dir>/tenant-keys/,
// one file per tenant), outside the item store, so that destroying one is
// an unlink rather than a delete that lingers in the store's WAL and
// sstables until compaction, and so that no copy of the store (a backup)
// carries the keys that open it. See DESIGN.md.
package tenantkey

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Errors.
var (
	// ErrUnreadable is returned by Open for a value that does not open
	// under any of the tenant's keys: altered, moved from another key or
	// tenant, or sealed under a destroyed key.
	ErrUnreadable = errors.New("tenantkey: value does not open under the tenant's data key")
	// ErrDestroyed is returned for a tenant whose data key was destroyed.
	ErrDestroyed = errors.New("tenantkey: the tenant's data key was destroyed")
	// ErrNoKey is returned by Key for a tenant without a data key when
	// keys are created only by Create (Options.Store).
	ErrNoKey = errors.New("tenantkey: the tenant has no data key")
)

// Options configure a Keyring.
type Options struct {
	// Dir holds the wrapped keys, one file per tenant; "" keeps them in
	// memory only (a store in memory).
	Dir string
	// KEK is the key-encryption key (32 bytes, derived from the server
	// key) that wraps every data key.
	KEK []byte
	// Upgrade marks keys created lazily, for tenants that existed before
	// their data was encrypted, as legacy: their values may still be
	// plaintext until Rekey re-encrypts them (see Key.Legacy).
	Upgrade bool
	// Store, if set, keeps the wrapped keys in the control plane's store
	// instead of Dir: gateways over one DynamoDB-API engine share it, so
	// every gateway seals and opens a tenant's values under the same key.
	// The first gateway to need a tenant's key creates it with a
	// conditional write; the others read that one.
	Store Store
	// MaxStale, with Store, is how long a key read from the store is used
	// before it is read again, measured from when the read started:
	// another gateway may destroy it (the tenant deleted) and a tenant
	// created again with the id gets a new key, which every gateway must
	// use. 0 keeps keys until this process destroys them.
	MaxStale time.Duration
}

// Store is where wrapped keys live when not in files (Options.Store).
type Store interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

// Keyring holds the data keys of all tenants. Safe for concurrent use.
type Keyring struct {
	store   Store
	dir     string
	upgrade bool
	kek     atomic.Pointer[kek]
	// prev is the previous key-encryption key while a rotation of the
	// server key re-wraps (nil otherwise): keys wrapped under it still open.
	prev atomic.Pointer[kek]

	mu        sync.Mutex // creation, destruction, file writes
	keys      sync.Map   // tenancy.TenantID -> *Key
	destroyed sync.Map   // tenancy.TenantID -> time.Time: not re-created in this process (with Store: for MaxStale)
	maxStale  time.Duration
	mem       map[tenancy.TenantID][]byte
	plain     bool                           // benchmark-only: see plain_bench.go
	onDestroy []func(tenancy.TenantID) error // see OnDestroy
}

type kek struct {
	id   string // hex of 8 bytes of HMAC under the KEK: which KEK wrapped a key
	aead cipher.AEAD
	raw  []byte
}

func newKEK(b []byte) (*kek, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("tenantkey: key-encryption key must be 32 bytes, got %d", len(b))
	}
	a, err := newAEAD(b)
	if err != nil {
		return nil, err
	}
	return &kek{id: KEKID(b), aead: a, raw: append([]byte(nil), b...)}, nil
}

// KEKID returns the id under which keys wrapped under the key-encryption
// key kek are recorded (and keyspace.RetiredKEK marks it retired).
func KEKID(kek []byte) string {
	m := hmac.New(sha256.New, kek)
	m.Write([]byte("tenantdb tenant key wrap id v1"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// fence makes b conditional on no key-encryption key that wrapped a
// version of f which was not in the stored old (nil: none) being retired
// by a fleet's server key rotation (keyspace.RetiredKEK): a data key
// wrapped under a retired KEK would escape the rotation's re-wrapping.
// Versions carried over from old need no fence: b is conditioned on old.
func fence(b *kv.Batch, f *keyFile, old []byte) {
	had := map[string]bool{}
	var was keyFile
	if old != nil && json.Unmarshal(old, &was) == nil {
		for _, w := range was.Versions {
			had[string(w.Wrapped)] = true
		}
	}
	seen := map[string]bool{}
	for _, w := range f.Versions {
		if !had[string(w.Wrapped)] && !seen[w.KEK] {
			seen[w.KEK] = true
			b.Expect(keyspace.RetiredKEK(w.KEK), nil)
		}
	}
}

// errKEKRetired says a write was refused because a version is wrapped
// under a retired key-encryption key (fence).
var errKEKRetired = errors.New("tenantkey: this gateway's key-encryption key was retired by a server key rotation of the fleet while it did not follow (stalled); restart it with the fleet's current server key")

// retiredKEK reports whether the key-encryption key id is marked retired
// (fence).
func (kr *Keyring) retiredKEK(id string) bool {
	_, err := kr.store.Get(context.Background(), keyspace.RetiredKEK(id))
	return err == nil
}

func newAEAD(k []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("tenantkey: %w", err)
	}
	return cipher.NewGCM(block)
}

// Open returns the keyring of opts.Dir (created, mode 0700, if missing).
func Open(opts Options) (*Keyring, error) {
	k, err := newKEK(opts.KEK)
	if err != nil {
		return nil, err
	}
	kr := &Keyring{dir: opts.Dir, upgrade: opts.Upgrade, store: opts.Store}
	if kr.store != nil {
		kr.maxStale = opts.MaxStale
	}
	kr.kek.Store(k)
	if kr.store != nil {
		kr.dir = ""
		return kr, nil
	}
	if kr.dir == "" {
		kr.mem = map[tenancy.TenantID][]byte{}
		return kr, nil
	}
	if err := os.MkdirAll(kr.dir, 0o700); err != nil {
		return nil, fmt.Errorf("tenantkey: %w", err)
	}
	return kr, nil
}

// Create gives tenant t a data key if it has none (tenant creation).
func (kr *Keyring) Create(t tenancy.TenantID) error {
	kr.destroyed.Delete(t) // a tenant created again with a deleted tenant's id
	if kr.dir != "" {
		if err := os.Remove(kr.path(t) + ShreddedSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tenantkey: %w", err)
		}
	}
	_, err := kr.key(t, true, false)
	return err
}

// ShreddedSuffix names, beside where a tenant's key file would be
// (<dir>/<tenant><suffix>), the mark that the tenant's key was destroyed
// although the rest of the server may not know it: an operator backup
// restored after the tenant's deletion holds the tenant and its sealed
// data, but not its key (internal/backup writes the mark). Key then
// returns ErrDestroyed for the tenant instead of making a new key, under
// which the tenant would write again beside data nobody can open.
const ShreddedSuffix = ".shredded"

// shredded reports whether t's key is marked destroyed in the directory.
// REQUIRES: kr.mu.
func (kr *Keyring) shredded(t tenancy.TenantID) bool {
	if kr.dir == "" {
		return false
	}
	_, err := os.Stat(kr.path(t) + ShreddedSuffix)
	return err == nil
}

// Key returns tenant t's data key, unwrapping it on first use and creating
// it if t has none yet (an existing tenant after an upgrade: marked legacy
// with Options.Upgrade). Errors: ErrDestroyed if it was destroyed in this
// process; a file or unwrap error (wrong server key) otherwise.
//
// NB: with Options.Store (gateways sharing an engine) a missing key is
// not created here but only by Create (tenant creation): another gateway
// may have deleted the tenant and destroyed its key, and a key made now
// would outlive it. Key then returns ErrNoKey.
func (kr *Keyring) Key(t tenancy.TenantID) (*Key, error) { return kr.key(t, kr.store == nil, false) }

// Reload is Key, read from the store again however fresh the cached copy
// (with Options.Store; Key otherwise): what another gateway changed
// shows at once.
func (kr *Keyring) Reload(t tenancy.TenantID) (*Key, error) {
	if kr.store == nil {
		return kr.Key(t)
	}
	return kr.reload(t)
}

// reload reads t's key from the store again, however fresh the cached one.
func (kr *Keyring) reload(t tenancy.TenantID) (*Key, error) { return kr.key(t, false, true) }

func (kr *Keyring) key(t tenancy.TenantID, create, force bool) (*Key, error) {
	if v, ok := kr.keys.Load(t); ok && !force && kr.fresh(v.(*Key)) {
		return v.(*Key), nil
	}
	if t.IsZero() {
		return nil, errors.New("tenantkey: no data key for the zero tenant")
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	cached, ok := kr.keys.Load(t)
	if ok && !force && kr.fresh(cached.(*Key)) {
		return cached.(*Key), nil
	}
	if at, gone := kr.destroyed.Load(t); gone {
		if kr.maxStale <= 0 || time.Since(at.(time.Time)) < kr.maxStale {
			return nil, ErrDestroyed
		}
		kr.destroyed.Delete(t)
	}
	start := time.Now()
	f, err := kr.read(t)
	if errors.Is(err, fs.ErrNotExist) && kr.shredded(t) {
		kr.destroyed.Store(t, struct{}{})
		return nil, ErrDestroyed
	}
	if errors.Is(err, fs.ErrNotExist) {
		if ok {
			kr.keys.Delete(t) // NB: destroyed through another gateway
		}
		if !create {
			return nil, ErrNoKey
		}
		f, err = kr.generate(t)
	}
	if err != nil {
		return nil, err
	}
	stored, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	if ok && cached.(*Key).stored == string(stored) {
		k := cached.(*Key)
		k.loaded.Store(start.UnixNano())
		return k, nil
	}
	st, err := kr.unwrap(t, f)
	if err != nil {
		return nil, err
	}
	if ok {
		// NB: the key changed in the store (another gateway rotated it):
		// whoever holds the cached Key sees the new state at once.
		k := cached.(*Key)
		k.st.Store(st)
		k.stored = string(stored)
		k.loaded.Store(start.UnixNano())
		return k, nil
	}
	key := &Key{kr: kr, tenant: t, stored: string(stored)}
	key.loaded.Store(start.UnixNano())
	key.st.Store(st)
	kr.keys.Store(t, key)
	return key, nil
}

// fresh reports whether k, from the cache, may be used without reading
// the store again (Options.MaxStale).
func (kr *Keyring) fresh(k *Key) bool {
	return kr.maxStale <= 0 || time.Since(time.Unix(0, k.loaded.Load())) < kr.maxStale
}

// generate makes t's first data key and stores it. REQUIRES: kr.mu.
func (kr *Keyring) generate(t tenancy.TenantID) (*keyFile, error) {
	f := &keyFile{Tenant: t.String(), Current: 1, Legacy: kr.upgrade}
	if err := f.add(kr.kek.Load(), t, 1); err != nil {
		return nil, err
	}
	if kr.store != nil {
		data, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		var b kv.Batch
		b.SetIfAbsent(storeKey(t), data)
		fence(&b, f, nil)
		err = kr.store.Apply(context.Background(), &b)
		if errors.Is(err, kv.ErrConflict) {
			got, err := kr.read(t) // another gateway created it first: use that one
			if errors.Is(err, fs.ErrNotExist) && kr.retiredKEK(f.Versions[0].KEK) {
				if kr.kek.Load().id == f.Versions[0].KEK {
					return nil, errKEKRetired
				}
				return kr.generate(t) // NB: wrapped just before this gateway switched keys
			}
			return got, err
		}
		if err != nil {
			return nil, fmt.Errorf("tenantkey: storing key of tenant %s: %w", t, err)
		}
		return f, nil
	}
	return f, kr.write(t, f, nil)
}

// rotationMark is the key of the mark of t's rotation in progress in
// Options.Store.
func rotationMark(t tenancy.TenantID) []byte {
	return append(keyspace.System(keyspace.SysTenantKeyRotations), t[:]...)
}

// rotating reports whether the stored key file data has a rotation in
// progress.
func rotating(data []byte) bool {
	var f keyFile
	return data != nil && json.Unmarshal(data, &f) == nil && f.Rotation != nil
}

// storeKey is the key of tenant t's wrapped keys in Options.Store.
func storeKey(t tenancy.TenantID) []byte {
	return append(keyspace.System(keyspace.SysTenantKeys), t[:]...)
}

// Destroy destroys tenant t's data key: its file is removed and the
// directory synced before Destroy returns, and the cached key stops
// sealing and opening at once. From then on no value sealed under it can
// be opened by anyone. It is idempotent.
func (kr *Keyring) Destroy(t tenancy.TenantID) error {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.destroyed.Store(t, time.Now())
	if v, ok := kr.keys.LoadAndDelete(t); ok {
		v.(*Key).st.Store(&keyState{destroyed: true})
	}
	if kr.store != nil {
		var b kv.Batch
		b.Delete(storeKey(t))
		b.Delete(rotationMark(t))
		if err := kr.store.Apply(context.Background(), &b); err != nil {
			return fmt.Errorf("tenantkey: destroying key: %w", err)
		}
		return nil
	}
	if kr.dir == "" {
		delete(kr.mem, t)
	} else {
		err := os.Remove(kr.path(t))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tenantkey: destroying key: %w", err)
		}
		if err := syncDir(kr.dir); err != nil {
			return err
		}
	}
	for _, fn := range kr.onDestroy {
		if err := fn(t); err != nil {
			return fmt.Errorf("tenantkey: destroying a copy of the key: %w", err)
		}
	}
	return nil
}

// Tenants returns the tenants that have a stored key.
func (kr *Keyring) Tenants() ([]tenancy.TenantID, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	var out []tenancy.TenantID
	if kr.store != nil {
		lo := keyspace.System(keyspace.SysTenantKeys)
		err := kr.store.Scan(context.Background(), lo, keyspace.PrefixEnd(lo), func(k, _ []byte) bool {
			var t tenancy.TenantID
			if len(k) == len(lo)+len(t) {
				copy(t[:], k[len(lo):])
				out = append(out, t)
			}
			return true
		})
		return out, err
	}
	if kr.dir == "" {
		for t := range kr.mem {
			out = append(out, t)
		}
		return out, nil
	}
	ents, err := os.ReadDir(kr.dir)
	if err != nil {
		return nil, fmt.Errorf("tenantkey: %w", err)
	}
	for _, e := range ents {
		if t, err := tenancy.ParseTenantID(e.Name()); err == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// keyFile is the stored form of one tenant's keys (JSON).
type keyFile struct {
	Tenant   string        `json:"tenant"`
	Current  uint32        `json:"current"`
	Versions []wrappedKey  `json:"versions"`
	Legacy   bool          `json:"legacy,omitempty"`
	Rotation *RotationInfo `json:"rotation,omitempty"`
}

type wrappedKey struct {
	Version uint32 `json:"v"`
	KEK     string `json:"kek"`     // id of the key-encryption key that wrapped it
	Wrapped []byte `json:"wrapped"` // nonce || AES-GCM(kek, data key)
}

// RotationInfo is the state of a tenant key rotation (Rekey): which
// version is being replaced, and how far re-encryption got.
type RotationInfo struct {
	From    uint32 `json:"from"`
	To      uint32 `json:"to"`
	Started int64  `json:"started"`          // unix ms
	Done    int64  `json:"done"`             // values re-encrypted so far
	Cursor  string `json:"cursor,omitempty"` // opaque resume point of the caller
	// Owner and Beat, on a fleet of gateways (Options.Store): the
	// gateway working on the rotation and when it last said so (unix
	// ms); another gateway takes it over when Beat grows old (Claim).
	Owner string `json:"owner,omitempty"`
	Beat  int64  `json:"beat,omitempty"`
}

func wrapAAD(t tenancy.TenantID, v uint32) []byte {
	b := append([]byte("tenantdb data key v1 "), t[:]...)
	return binary.BigEndian.AppendUint32(b, v)
}

// add generates version v and appends it wrapped under k.
func (f *keyFile) add(k *kek, t tenancy.TenantID, v uint32) error {
	dk := make([]byte, 32)
	rand.Read(dk)
	f.Versions = append(f.Versions, wrappedKey{Version: v, KEK: k.id, Wrapped: wrap(k, t, v, dk)})
	clear(dk)
	return nil
}

func wrap(k *kek, t tenancy.TenantID, v uint32, dk []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(dk)+k.aead.Overhead())
	rand.Read(nonce)
	return k.aead.Seal(nonce, nonce, dk, wrapAAD(t, v))
}

// unwrapOne opens one wrapped version under whichever KEK wrapped it.
func (kr *Keyring) unwrapOne(t tenancy.TenantID, w wrappedKey) ([]byte, error) {
	for _, k := range []*kek{kr.kek.Load(), kr.prev.Load()} {
		if k == nil || k.id != w.KEK {
			continue
		}
		n := k.aead.NonceSize()
		if len(w.Wrapped) < n {
			break
		}
		dk, err := k.aead.Open(nil, w.Wrapped[:n], w.Wrapped[n:], wrapAAD(t, w.Version))
		if err != nil {
			break
		}
		return dk, nil
	}
	return nil, fmt.Errorf("tenantkey: the data key of tenant %s (version %d) does not unwrap under this server key", t, w.Version)
}

func (kr *Keyring) unwrap(t tenancy.TenantID, f *keyFile) (*keyState, error) {
	st := &keyState{current: f.Current, aeads: map[uint32]cipher.AEAD{}, legacy: f.Legacy}
	if f.Rotation != nil {
		r := *f.Rotation
		st.rotation = &r
	}
	for _, w := range f.Versions {
		dk, err := kr.unwrapOne(t, w)
		if err != nil {
			return nil, err
		}
		a, err := newAEAD(dk)
		clear(dk)
		if err != nil {
			return nil, err
		}
		st.aeads[w.Version] = a
	}
	if st.aeads[st.current] == nil {
		return nil, fmt.Errorf("tenantkey: tenant %s's key file lacks its current version %d", t, f.Current)
	}
	return st, nil
}

func (kr *Keyring) path(t tenancy.TenantID) string { return filepath.Join(kr.dir, t.String()) }

// read returns t's stored key file (fs.ErrNotExist if none). REQUIRES: kr.mu.
func (kr *Keyring) read(t tenancy.TenantID) (*keyFile, error) {
	f, _, err := kr.readRaw(t)
	return f, err
}

// readRaw is read, with the stored bytes (what a conditional write of the
// file in the store is conditioned on). REQUIRES: kr.mu.
func (kr *Keyring) readRaw(t tenancy.TenantID) (*keyFile, []byte, error) {
	var data []byte
	if kr.store != nil {
		b, err := kr.store.Get(context.Background(), storeKey(t))
		if errors.Is(err, kv.ErrNotFound) {
			return nil, nil, fs.ErrNotExist
		}
		if err != nil {
			return nil, nil, fmt.Errorf("tenantkey: reading key of tenant %s: %w", t, err)
		}
		data = b
	} else if kr.dir == "" {
		b, ok := kr.mem[t]
		if !ok {
			return nil, nil, fs.ErrNotExist
		}
		data = b
	} else {
		b, err := os.ReadFile(kr.path(t))
		if err != nil {
			return nil, nil, err
		}
		data = b
	}
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil || f.Tenant != t.String() {
		return nil, nil, fmt.Errorf("tenantkey: key file of tenant %s is corrupt", t)
	}
	return &f, data, nil
}

// write stores f durably (temporary file, fsync, rename, directory
// fsync); in the store, on condition that it still holds old, what the
// caller read (kv.ErrConflict otherwise: another gateway changed it, and
// the caller reads it again). REQUIRES: kr.mu.
//
// NB: every write of a key in the store is conditioned so: two gateways
// starting a rotation at once must not each make a version n+1 of their
// own, one of which the other's write would erase with the values sealed
// under it.
func (kr *Keyring) write(t tenancy.TenantID, f *keyFile, old []byte) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if kr.store != nil {
		var b kv.Batch
		b.SetIfEquals(storeKey(t), old, data)
		fence(&b, f, old)
		// NB: the mark of a rotation in progress changes with the record.
		if was := rotating(old); f.Rotation != nil && !was {
			b.Set(rotationMark(t), []byte{1})
		} else if f.Rotation == nil && was {
			b.Delete(rotationMark(t))
		}
		err := kr.store.Apply(context.Background(), &b)
		if errors.Is(err, kv.ErrConflict) {
			if kr.retiredKEK(kr.kek.Load().id) {
				return errKEKRetired // no retry can wrap under another
			}
			return err // the caller reads the record again and re-wraps
		}
		if err != nil {
			return fmt.Errorf("tenantkey: writing key of tenant %s: %w", t, err)
		}
		return nil
	}
	if kr.dir == "" {
		kr.mem[t] = data
		return nil
	}
	tmp, err := os.CreateTemp(kr.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("tenantkey: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), kr.path(t))
	}
	if err == nil {
		err = syncDir(kr.dir)
	}
	if err != nil {
		return fmt.Errorf("tenantkey: writing key of tenant %s: %w", t, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("tenantkey: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("tenantkey: sync %s: %w", dir, err)
	}
	return nil
}

// update reads t's key file, lets fn change it, writes it and refreshes
// the cached key. REQUIRES: not kr.mu.
func (kr *Keyring) update(t tenancy.TenantID, fn func(f *keyFile) error) error {
	if _, err := kr.Key(t); err != nil { // exists (or is created) first
		return err
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	for round := 0; ; round++ {
		if _, gone := kr.destroyed.Load(t); gone {
			return ErrDestroyed
		}
		f, old, err := kr.readRaw(t)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err // errNoChange included: the caller's to read
		}
		st, err := kr.unwrap(t, f)
		if err != nil {
			return err
		}
		err = kr.write(t, f, old)
		if errors.Is(err, kv.ErrConflict) && round < updateRounds {
			continue // another gateway changed it: apply fn to theirs
		}
		if err != nil {
			return err
		}
		if v, ok := kr.keys.Load(t); ok {
			k := v.(*Key)
			k.st.Store(st)
			if data, err := json.Marshal(f); err == nil {
				k.stored = string(data)
			}
			k.loaded.Store(time.Now().UnixNano())
		}
		return nil
	}
}

// updateRounds bounds how often update reads a key file another gateway
// keeps changing.
const updateRounds = 16

// versions returns the version numbers of f, ascending.
func (f *keyFile) versions() []uint32 {
	var vs []uint32
	for _, w := range f.Versions {
		vs = append(vs, w.Version)
	}
	slices.Sort(vs)
	return vs
}
