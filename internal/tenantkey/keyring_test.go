package tenantkey

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

func testKEK(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func open(t *testing.T, dir string, k []byte) *Keyring {
	t.Helper()
	kr, err := Open(Options{Dir: dir, KEK: k})
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func key(t *testing.T, kr *Keyring, ten tenancy.TenantID) *Key {
	t.Helper()
	k, err := kr.Key(ten)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTenantsKeysAreTheirOwn: a value sealed for A opens only under A's
// key and only with its associated data; B's key refuses it.
func TestTenantsKeysAreTheirOwn(t *testing.T) {
	kr := open(t, t.TempDir(), testKEK(1))
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	ka, kb := key(t, kr, a), key(t, kr, b)
	sealed, err := ka.Seal(nil, []byte("A's value"), []byte("key-1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("A's value")) {
		t.Fatal("sealed value holds the plaintext")
	}
	if got, err := ka.Open(nil, sealed, []byte("key-1")); err != nil || string(got) != "A's value" {
		t.Fatalf("A opens its value: %q, %v", got, err)
	}
	if _, err := kb.Open(nil, sealed, []byte("key-1")); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("B opens A's value: err %v", err)
	}
	if _, err := ka.Open(nil, sealed, []byte("key-2")); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("A's value opened under another key: err %v", err)
	}
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 1
		if _, err := ka.Open(nil, bad, []byte("key-1")); err == nil {
			t.Fatalf("a value with byte %d flipped opens", i)
		}
	}
}

// TestKeysPersistWrapped: keys survive a reopen, are stored only
// wrapped, do not unwrap under another KEK, and Destroy makes them
// unrecoverable.
func TestKeysPersistWrapped(t *testing.T) {
	dir := t.TempDir()
	a := tenancy.NewTenantID()
	sealed, _ := key(t, open(t, dir, testKEK(1)), a).Seal(nil, []byte("v"), nil)

	kr := open(t, dir, testKEK(1))
	if got, err := key(t, kr, a).Open(nil, sealed, nil); err != nil || string(got) != "v" {
		t.Fatalf("after reopen: %q, %v", got, err)
	}
	if _, err := open(t, dir, testKEK(2)).Key(a); err == nil {
		t.Fatal("the key unwrapped under another KEK")
	}
	ka := key(t, kr, a)
	if err := kr.Destroy(a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, a.String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("key file after Destroy: %v", err)
	}
	if _, err := ka.Open(nil, sealed, nil); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("a cached key opens after Destroy: %v", err)
	}
	if _, err := kr.Key(a); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("Key after Destroy: %v", err)
	}
	// A new process makes a new key, under which the old value is unreadable.
	if _, err := key(t, open(t, dir, testKEK(1)), a).Open(nil, sealed, nil); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("old value under a re-created key: %v", err)
	}
}

// TestRotationAndRewrap: during a rotation both versions open and new
// values use the new one; finishing destroys the old; Rewrap moves every
// key under a new KEK.
func TestRotationAndRewrap(t *testing.T) {
	dir := t.TempDir()
	kr := open(t, dir, testKEK(1))
	a := tenancy.NewTenantID()
	k := key(t, kr, a)
	old, _ := k.Seal(nil, []byte("old"), nil)
	r, err := kr.StartRotation(a, time.Now())
	if err != nil || r.From != 1 || r.To != 2 {
		t.Fatalf("StartRotation: %+v, %v", r, err)
	}
	nu, _ := k.Seal(nil, []byte("new"), nil)
	if k.Current(old) || !k.Current(nu) {
		t.Fatal("Current does not tell the versions apart")
	}
	if got, err := k.Open(nil, old, nil); err != nil || string(got) != "old" {
		t.Fatalf("old value during rotation: %q, %v", got, err)
	}
	if err := kr.Progress(a, 7, "c"); err != nil {
		t.Fatal(err)
	}
	if r2, _ := kr.StartRotation(a, time.Now()); r2.Done != 7 || r2.Cursor != "c" || r2.To != 2 {
		t.Fatalf("resumed rotation: %+v", r2)
	}
	if err := kr.Rewrap(nil, testKEK(3)); err != nil {
		t.Fatal(err)
	}
	kr2 := open(t, dir, testKEK(3))
	k2 := key(t, kr2, a)
	if got, err := k2.Open(nil, old, nil); err != nil || string(got) != "old" {
		t.Fatalf("after rewrap, under the new KEK: %q, %v", got, err)
	}
	if _, err := open(t, dir, testKEK(1)).Key(a); err == nil {
		t.Fatal("after rewrap the old KEK still unwraps")
	}
	if err := kr2.FinishRotation(a); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Open(nil, old, nil); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("old version after FinishRotation: %v", err)
	}
	if got, err := k2.Open(nil, nu, nil); err != nil || string(got) != "new" {
		t.Fatalf("new version after FinishRotation: %q, %v", got, err)
	}
}

// TestShreddedMark: a tenant whose key file is missing and marked
// shredded (a backup restored after its deletion) gets ErrDestroyed and
// no new key, in every process; creating the tenant again clears it.
func TestShreddedMark(t *testing.T) {
	dir := t.TempDir()
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	if err := os.WriteFile(filepath.Join(dir, a.String()+ShreddedSuffix), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		kr := open(t, dir, testKEK(1))
		if _, err := kr.Key(a); !errors.Is(err, ErrDestroyed) {
			t.Fatalf("Key of a shredded tenant: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, a.String())); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a key was made for a shredded tenant: %v", err)
		}
		key(t, kr, b) // control: another tenant's key is made as before
	}
	if ts, err := open(t, dir, testKEK(1)).Tenants(); err != nil || len(ts) != 1 || ts[0] != b {
		t.Fatalf("the mark is listed as a key: %v %v", ts, err)
	}
	kr := open(t, dir, testKEK(1))
	if err := kr.Create(a); err != nil {
		t.Fatal(err)
	}
	key(t, kr, a)
	if _, err := os.Stat(filepath.Join(dir, a.String()+ShreddedSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the mark after the tenant was created again: %v", err)
	}
}
