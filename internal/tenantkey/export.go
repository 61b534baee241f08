package tenantkey

import (
	"errors"
	"fmt"
	"os"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Freeze runs fn with every change of the keyring held off (creation,
// rotation, re-wrapping, destruction) and returns the stored key file of
// every tenant as it is when fn returns: the keys that open whatever fn
// copied of the tenants' values (an operator backup copies the stores
// inside fn). The files are as stored: each data key wrapped under the
// server key. fn must not use the keyring's changing methods (it would
// deadlock); reading values with keys already loaded is fine.
func (kr *Keyring) Freeze(fn func() error) (map[tenancy.TenantID][]byte, error) {
	if kr.store != nil {
		return nil, errors.New("tenantkey: the keys are in the engine's control plane, not in files to copy")
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if err := fn(); err != nil {
		return nil, err
	}
	out := map[tenancy.TenantID][]byte{}
	if kr.dir == "" {
		for t, b := range kr.mem {
			out[t] = append([]byte(nil), b...)
		}
		return out, nil
	}
	ents, err := os.ReadDir(kr.dir)
	if err != nil {
		return nil, fmt.Errorf("tenantkey: %w", err)
	}
	for _, e := range ents {
		t, err := tenancy.ParseTenantID(e.Name())
		if err != nil || e.Name() != t.String() {
			continue
		}
		b, err := os.ReadFile(kr.path(t))
		if err != nil {
			return nil, fmt.Errorf("tenantkey: %w", err)
		}
		out[t] = b
	}
	return out, nil
}

// OnDestroy adds fn, called by Destroy after the key's file is gone (with
// the keyring's changes held off), to destroy the copies of the key kept
// elsewhere (an operator backup's). Its error is Destroy's: the tenant's
// deletion does not proceed with a copy of its key left.
func (kr *Keyring) OnDestroy(fn func(tenancy.TenantID) error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.onDestroy = append(kr.onDestroy, fn)
}

// Stored reports whether tenant t has a stored key (false once Destroy
// has removed it).
func (kr *Keyring) Stored(t tenancy.TenantID) bool {
	if _, gone := kr.destroyed.Load(t); gone {
		return false
	}
	if kr.dir == "" {
		kr.mu.Lock()
		defer kr.mu.Unlock()
		_, ok := kr.mem[t]
		return ok
	}
	_, err := os.Stat(kr.path(t))
	return err == nil
}
