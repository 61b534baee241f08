package fleetkey

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
)

// The fleet's stream secret seals the shard iterators the gateways hand
// tenants. Derived from each gateway's server key, it would differ
// between a gateway that started before a rotation and one started
// after; so it is kept in the engine, sealed under the server key and
// re-sealed by a rotation like a credential, and every gateway uses it.

const streamSealInfo = "tenantdb fleet stream secret seal v1"

var streamAAD = []byte("tenantdb fleet stream secret v1")

func streamAEAD(k *auth.ServerKey) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k.Derive(streamSealInfo))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func sealStream(k *auth.ServerKey, secret []byte) ([]byte, error) {
	a, err := streamAEAD(k)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return a.Seal(nonce, nonce, secret, streamAAD), nil
}

func openStream(k *auth.ServerKey, sealed []byte) ([]byte, error) {
	a, err := streamAEAD(k)
	if err != nil {
		return nil, err
	}
	if len(sealed) < a.NonceSize() {
		return nil, errors.New("fleetkey: the stream secret record is corrupt")
	}
	return a.Open(nil, sealed[:a.NonceSize()], sealed[a.NonceSize():], streamAAD)
}

// StreamSecret returns the fleet's stream secret, opened under the
// authenticator's keys (either, during a rotation); the first gateway to
// ask stores derived, the secret gateways derived from the server key
// before the record existed, so that iterators handed out then still
// open.
func StreamSecret(ctx context.Context, st Store, a *auth.Authenticator, derived []byte) ([]byte, error) {
	k := keyspace.System(keyspace.SysStreamSecret)
	cur, also := a.Keys()
	sealed, err := sealStream(cur, derived)
	if err != nil {
		return nil, err
	}
	var b kv.Batch
	b.SetIfAbsent(k, sealed)
	b.Expect(retiredKey(cur.Check()), nil) // NB: as every sealed write (DESIGN.md)
	if err := st.Apply(ctx, &b); err == nil {
		return derived, nil
	} else if !errors.Is(err, kv.ErrConflict) {
		return nil, err
	}
	v, err := st.Get(ctx, k)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, errors.New("fleetkey: this gateway's server key was retired by a rotation of the fleet")
	}
	if err != nil {
		return nil, err
	}
	for _, key := range []*auth.ServerKey{cur, also} {
		if key == nil {
			continue
		}
		if s, err := openStream(key, v); err == nil {
			return s, nil
		}
	}
	return nil, errors.New("fleetkey: the fleet's stream secret does not open under this gateway's server key")
}

// resealStream re-seals the stream secret under the current key if it is
// under the other one; it reports whether it did.
func (r *Rotator) resealStream(ctx context.Context) (bool, error) {
	k := keyspace.System(keyspace.SysStreamSecret)
	v, err := r.o.Store.Get(ctx, k)
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	cur, also := r.o.Auth.Keys()
	if _, err := openStream(cur, v); err == nil {
		return false, nil
	}
	if also == nil {
		return false, errors.New("fleetkey: the stream secret is sealed under another key than this gateway's")
	}
	secret, err := openStream(also, v)
	if err != nil {
		return false, errors.New("fleetkey: the stream secret opens under neither key of the rotation")
	}
	sealed, err := sealStream(cur, secret)
	if err != nil {
		return false, err
	}
	var b kv.Batch
	b.SetIfEquals(k, bytes.Clone(v), sealed)
	if err := r.o.Store.Apply(ctx, &b); err != nil && !errors.Is(err, kv.ErrConflict) {
		return false, err
	}
	return true, nil
}
